"""English / 中文 labels: ``tr("Calls", "调用")`` picks the language chosen in the sidebar.

Only UI labels and explanations are translated; message content is always
shown exactly as recorded.
"""
from __future__ import annotations

import streamlit as st

LANGUAGES = {"en": "English", "zh": "中文"}
LANG_KEY = "open_lang"
"""The chosen language (plain state, see ``state.bind``)."""


def lang() -> str:
    return "zh" if st.session_state.get(LANG_KEY) == "zh" else "en"


def tr(en: str, zh: str) -> str:
    """The label in the current language."""
    return zh if lang() == "zh" else en


def pick(texts: dict[str, str]) -> str:
    """A ``{"en": ..., "zh": ...}`` dict from agent_core in the current language."""
    return texts.get(lang()) or texts.get("en", "")
