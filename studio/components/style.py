"""The studio's own static CSS (no trace data ever goes in here)."""
from __future__ import annotations

import streamlit as st

_CSS = """
<style>
/* Tighter cards so a 40-message payload stays scannable. */
div[data-testid="stVerticalBlockBorderWrapper"] { border-radius: 10px; }
div[data-testid="stText"] { font-size: 0.92rem; line-height: 1.45; white-space: pre-wrap; overflow-wrap: anywhere; }
div[data-testid="stMetricValue"] { font-size: 1.6rem; }
section[data-testid="stSidebar"] div[data-testid="stCaptionContainer"] { opacity: 0.8; }
</style>
"""


def apply_style() -> None:
    st.html(_CSS)
