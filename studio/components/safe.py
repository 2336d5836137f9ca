"""Escaping for the few places where untrusted text must sit in a markdown element (error boxes).

Streamlit renders st.error / st.warning / st.caption bodies as markdown. A
file name or a loader message can carry trace text (``[x](javascript:...)``,
``:red[...]``, ``$...$``, ``<img ...>``); every ASCII punctuation character
is backslash-escaped (valid CommonMark for all of them), so it shows literally.
"""
from __future__ import annotations

import string

_ESCAPE = {ord(ch): "\\" + ch for ch in string.punctuation}


def md_escape(text: object, max_chars: int = 400) -> str:
    """``text`` as literal markdown on one line, shortened to ``max_chars``."""
    value = " ".join(str(text).split())
    if len(value) > max_chars:
        value = value[: max_chars - 1] + "…"
    return value.translate(_ESCAPE)
