"""The lab's custom chart element: a Plotly chart redrawn in place (Python + JavaScript)."""
