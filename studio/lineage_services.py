"""The Lineage page's views of a trace: its turns, their graph, the calls that carried a message, the Responses chain.

Each is kept per trace digest (and per message, per page of turns), so a rerun of the page, a message picked again
or a page of turns seen before reads them back: at 25,000 calls the turns take 0.1 s, the calls carrying a message
0.07 s and the Responses chain 0.05 s to build. The turns are also built ahead, between pages, once a big trace is
open (``warmup.stream_ahead``).

Beside ``services.py``; screens reach agent_core only through the ``*services`` modules.
"""
from __future__ import annotations

import streamlit as st

from agent_core.trace.model import Trace
from studio.services import Loaded
from studio.viewmodels import lineage as _lineage
from studio.viewmodels import responses as _responses


@st.cache_resource(max_entries=32, show_spinner=False)
def _turns(digest: str, _trace: Trace) -> list[_lineage.Turn]:
    """Shared, never copied (read only): as ``st.cache_data`` every run unpickled 17,842 turns at 25,000 calls."""
    return _lineage.turns(_trace)


def turns(loaded: Loaded) -> list[_lineage.Turn]:
    return _turns(loaded.digest, loaded.trace)


@st.cache_data(max_entries=64, show_spinner=False)
def _dot(digest: str, _trace: Trace, first_turn: int, max_turns: int) -> str:
    return _lineage.lineage_graph(_trace, first_turn, max_turns).to_dot()


def lineage_dot(loaded: Loaded, first_turn: int, max_turns: int) -> str:
    return _dot(loaded.digest, loaded.trace, first_turn, max_turns)


@st.cache_data(max_entries=256, show_spinner=False)
def _including(digest: str, _trace: Trace, msg_id: str) -> list[int]:
    return _lineage.calls_including(_trace, msg_id)


def calls_including(loaded: Loaded, msg_id: str) -> list[int]:
    return _including(loaded.digest, loaded.trace, msg_id)


def event_that_removed(loaded: Loaded, msg_id: str):
    return loaded.trace.event_that_removed(msg_id)


@st.cache_resource(max_entries=32, show_spinner=False)     # read only
def _chain(digest: str, _trace: Trace) -> list[dict]:
    return _responses.response_chain_rows(_trace)


def response_chain(loaded: Loaded) -> list[dict]:
    """Responses calls and the call each continues through previous_response_id ([] for other traces)."""
    return _chain(loaded.digest, loaded.trace)
