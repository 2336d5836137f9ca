"""The Timeline table's prompt-token estimates, for the rows on screen only.

The table shows ``TABLE_PAGE`` rows; counting the whole trace to fill them cost the first open of a
25,000-call trace about 2 s of CPU with an empty token store (50,001 distinct messages encoded). So a page
of the table reads the whole series when this server already has it (``opening.counted``: a small trace
counts it here at once, a big one in the background from its first open, ``warmup.count_ahead``), the estimates
the counting process stored when it has stored the series (``token_worker.done``, ``token_worker.head``), and
otherwise counts only its own calls: the first one whole, each next one by what it adds. The counts are the
series' own (same counter, same formula); the total over every call is the Tokens page's.

Beside ``services.py``; screens reach agent_core only through the ``*services`` modules.
"""
from __future__ import annotations

import streamlit as st

from agent_core.trace.model import Trace
from studio import opening, services, token_worker
from studio.viewmodels import timeline as _timeline_vm

page_rows = _timeline_vm.page_rows
TABLE_PAGE = 20
"""Rows per page of the Timeline's call table (its first page's estimates are counted ahead: ``studio/preload.py``)."""


@st.cache_data(max_entries=64, show_spinner=False)
def _page_estimates(digest: str, _trace: Trace, calls: tuple[int, ...]) -> dict[int, int]:
    return _timeline_vm.page_estimates([_trace.calls[i] for i in calls])


WAIT_MESSAGES = 1000
"""From this many messages in the first call of a table page, the page waits for the trace's counting process
(``token_worker``) rather than encode them beside it: at call 12,500 of 25,000 that is 25,000 messages, seconds of
CPU taken from the process that is counting them anyway."""


def waits_for_count(loaded: services.Loaded, calls: list[int]) -> bool:
    """Whether ``row_estimates`` of these calls will wait for the trace's counting process (``WAIT_MESSAGES``)."""
    return bool(calls) and token_worker.running(loaded.digest) and (
        _timeline_vm.conversation_size(loaded.trace.calls[calls[0]])[0] or 0) >= WAIT_MESSAGES


def row_estimates(loaded: services.Loaded, calls: list[int]) -> dict[int, int]:
    """Call index -> whole-request token estimate, for the calls of one table page."""
    trace = loaded.trace
    if waits_for_count(loaded, calls):
        if not _timeline_vm.needs_whole_series(trace, calls):       # the count has passed them: their estimates
            found = token_worker.wait_head(loaded.digest, calls)
            if found is not None:
                return found
        token_worker.wait_series(loaded.digest)
    if not (opening.counted(loaded.digest) or len(trace.calls) < opening.BIG_CALLS
            or _timeline_vm.needs_whole_series(trace, calls)):
        if not token_worker.done(loaded.digest):
            return _page_estimates(loaded.digest, trace, tuple(calls))
        # the series is stored but not read in yet: its head (every estimate, 25,000 ints) is read in 3 ms, the
        # whole series in 0.1 s (0.27 s beside the open's background work), which the counting thread reads in
        # between pages (``warmup.series_ahead``)
        found = token_worker.head(loaded.digest, calls)
        if found is not None:
            return found
    series = services.token_series(loaded)
    return {i: series[i].estimated for i in calls}
