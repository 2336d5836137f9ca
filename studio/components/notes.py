"""The importer's notes on the open trace (what it could not map, skipped or inferred), on every screen.

A note is plain text from the loader and may quote trace data, so it is escaped.
"""
from __future__ import annotations

import streamlit as st

from studio import services

from .i18n import tr
from .safe import md_escape

SHOWN = 3
"""Notes shown as boxes; the rest sit in an expander, so a noisy import does not push the page down."""


def importer_notes(loaded: services.Loaded) -> None:
    """One warning box per note of ``loaded.trace.warnings`` (the first few), the rest folded away."""
    notes = [str(w) for w in loaded.trace.warnings]
    for note in notes[:SHOWN]:
        st.warning(md_escape(note), icon=":material/warning:")
    if len(notes) > SHOWN:
        with st.expander(tr(f"{len(notes) - SHOWN} more importer notes", f"另有 {len(notes) - SHOWN} 条导入说明")):
            st.text("\n".join(notes[SHOWN:]))


def sampled_note(loaded: services.Loaded) -> None:
    """A caption when some token count of the trace is estimated from a sample (texts over 2M characters are
    counted from an even sample of their pieces and scaled: ``trace/tokens.py`` ``EXACT_LIMIT``), else nothing."""
    n = services.sampled_texts(loaded)
    if n:
        st.caption(tr(f"Token counts estimated from a sample: {n} text{'s' if n != 1 else ''} over 2M characters "
                      "counted from an even sample of their pieces and scaled.",
                      f"token 数为抽样估算：{n} 段超过 200 万字符的文本按均匀抽取的片段计数后按比例放大。"))
