"""Entry point: a thin router (Streamlit's st.navigation); every page lives in app/views/.

Not app/pages/: Streamlit treats a pages/ folder beside the entry script as its older automatic multipage
layout, and a direct link such as /measure then runs the page without this router (seen on 1.67)."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `streamlit run app/streamlit_app.py` puts app/ first, not the project
    sys.path.insert(0, str(ROOT))

import streamlit as st  # noqa: E402

st.set_page_config(page_title="Pipeline-parallelism lab", page_icon=":material/view_timeline:", layout="wide")
st.navigation(
    [
        st.Page("views/playground.py", title="Playground", icon=":material/science:", default=True),
        st.Page("views/lessons.py", title="Lessons", icon=":material/school:", url_path="lessons"),
        st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:", url_path="compare"),
        st.Page("views/editor.py", title="Schedule editor", icon=":material/edit_note:", url_path="editor"),
        st.Page("views/measure.py", title="Real run", icon=":material/memory:", url_path="real-run"),
    ]
).run()
