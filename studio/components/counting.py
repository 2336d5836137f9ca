"""The Tokens page's wait for a big trace's token series, counted by a worker process since the trace opened
(``studio/token_worker.py``): a spinner while it is still counting, and its failure said, never silent."""
from __future__ import annotations

import streamlit as st

from studio import services, token_worker

from .i18n import tr
from .safe import md_escape


def token_series(loaded: services.Loaded, views: bool = True):
    """``services.token_series``, with a spinner while the worker counts, then a warning if the worker failed (the
    series is then counted in the page: the figures shown are whole either way). ``views=False``: a page that reads
    only the series (the Traces page's summary) does not wait for the worker's other views (the Tokens page's
    heaviest messages, about a second at 25,000 calls after the series)."""
    if token_worker.running(loaded.digest):
        n = len(loaded.trace.calls)
        with st.spinner(tr(f"Counting the tokens of {n:,} calls (started when the trace opened) …",
                           f"正在统计 {n:,} 次调用的 tokens（打开 trace 时已开始）…")):     # drawn after 0.5 s
            (token_worker.wait if views else token_worker.wait_series)(loaded.digest)
    failed = token_worker.failure(loaded.digest)
    if not failed:
        return services.token_series(loaded)
    st.warning(tr("The background token count failed, so this page counts the tokens itself: ",
                  "后台 token 统计失败，本页自行统计：") + md_escape(failed), icon=":material/warning:")
    with st.spinner(tr(f"Counting the tokens of {len(loaded.trace.calls):,} calls …",
                       f"正在统计 {len(loaded.trace.calls):,} 次调用的 tokens …")):
        return services.token_series(loaded)
