"""Your run, for one rank's overlapped chunks (a profile like DeepSeek's of DualPipe, ``engine.traces.chunks``):
what was read, the communication and compute times and the share hidden, each component's kernel time. No
Gantt, no bubble and no family table: those are a pipeline's, and this is one rank without pipeline hand-offs."""

import pandas as pd
import streamlit as st

from app.frame.cards import card_places
from app.frame.safe_text import plain
from engine.traces.chunks import OverlappedChunks


def chunk_cards(chunks: OverlappedChunks, *, stacked: bool = False) -> None:
    """The overlap in five cards, every number the engine's."""
    fraction = chunks.hidden_fraction
    values = [
        ("Communication", f"{chunks.communication_ms:.3g} ms", "DeepEP's all-to-all and NCCL's kernels: the union "
         "of their intervals on the GPU"),
        ("Compute", f"{chunks.compute_ms:.3g} ms", "every other kernel: the union of their intervals"),
        ("Hidden under compute", f"{chunks.hidden_ms:.3g} ms", "communication time during which compute ran"),
        ("Hidden fraction", "—" if fraction is None else f"{fraction:.1%}", "hidden / communication"),
        ("Exposed communication", f"{chunks.exposed_ms:.3g} ms", "communication with no compute beside it"),
    ]  # fmt: skip
    places = card_places(len(values), stacked=stacked)
    for place, (label, value, words) in zip(places, values, strict=True):
        place.metric(label, value, help=words)


def components(chunks: OverlappedChunks) -> None:
    """Each component's kernel time, split into compute and communication hidden or exposed; then the table."""
    rows = chunks.components + (() if chunks.outside is None else (chunks.outside,))
    bars = pd.DataFrame(
        {
            "compute": [row.compute_kernel_ms for row in rows],
            "communication hidden": [row.hidden_ms for row in rows],
            "communication exposed": [row.communication_kernel_ms - row.hidden_ms for row in rows],
        },
        index=pd.Index([row.label for row in rows], name="component"),
    )
    st.bar_chart(
        bars,
        x_label="component",
        y_label="kernel time (ms)",
        horizontal=True,
        stack=True,
        sort=False,
        height=80 + 28 * len(rows),
    )
    st.caption(
        "Each component's kernels: those launched while its label was open on the CPU (matched through the "
        "launches' correlation ids). A communication kernel's time counts as hidden where a compute kernel ran "
        "beside it on the GPU; a communication kernel's time includes its wait for the other ranks."
    )
    st.table(
        [
            {
                "component": row.label,
                "spans": row.spans,
                "kernels": row.kernels,
                "kernel (ms)": f"{row.kernel_ms:.3f}",
                "communication (ms)": f"{row.communication_kernel_ms:.3f}",
                "compute (ms)": f"{row.compute_kernel_ms:.3f}",
                "hidden (ms)": f"{row.hidden_ms:.3f}",
            }
            for row in rows
        ]
    )


def show_chunks(chunks: OverlappedChunks, projector: bool) -> None:
    """The page for one rank's overlapped chunks."""
    side, main = st.columns([2, 5], gap="medium") if projector else (st.container(), st.container())
    with side:
        st.markdown(f"**Read:** {plain(chunks.describe())}")
        st.info(plain(chunks.bubble[:1].upper() + chunks.bubble[1:]))
        for note in chunks.notes:
            st.caption(plain(note))
        chunk_cards(chunks, stacked=projector)
    with main:
        components(chunks)
