"""The studio's own static CSS (no trace data ever goes in here)."""
from __future__ import annotations

import streamlit as st

_CSS = """
<style>
/* Less empty space above the title: this is a work tool, not a landing page. */
div[data-testid="stMainBlockContainer"] { padding-top: 2.2rem; }
/* Tighter cards so a 40-message payload stays scannable. */
div[data-testid="stVerticalBlockBorderWrapper"] { border-radius: 10px; }
div[data-testid="stText"] { font-size: 0.92rem; line-height: 1.45; white-space: pre-wrap; overflow-wrap: anywhere; }
/* Role accents on message cards (keys are card-<role>-...; roles are our fixed names). */
div[class*="st-key-card-system-"] { border-left: 4px solid #6b7280 !important; }
div[class*="st-key-card-user-"] { border-left: 4px solid #2563eb !important; }
div[class*="st-key-card-assistant-"] { border-left: 4px solid #059669 !important; }
div[class*="st-key-card-tool-"] { border-left: 4px solid #d97706 !important; }
div[class*="st-key-card-other-"] { border-left: 4px solid #9333ea !important; }
div[class*="st-key-card-flagged-"] { border-left: 4px solid #dc2626 !important; background: #fef2f2; }
div[data-testid="stMetricValue"] { font-size: 1.6rem; }
section[data-testid="stSidebar"] div[data-testid="stCaptionContainer"] { opacity: 0.8; }
</style>
"""


def apply_style() -> None:
    # Our own constant CSS, never trace data. (st.html sends style-only HTML to an event container
    # that this page layout does not render, so the classic markdown route is used.)
    st.markdown(_CSS, unsafe_allow_html=True)
