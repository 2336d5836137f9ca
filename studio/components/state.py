"""Which trace is open, shared by the sidebar and every page (all in st.session_state)."""
from __future__ import annotations

import streamlit as st

from studio import services

from .i18n import tr
from .safe import md_escape

PICK_KEY = "trace_pick"
PENDING_KEY = "pending_trace"
PENDING_CALL_KEY = "pending_call"
EXTRA_KEY = "extra_sources"
PROFILE_KEY = "profile"
REDACT_KEY = "redact_pii"
CALL_KEY = "selected_call"


def all_sources() -> dict[str, services.Source]:
    table = {s.key: s for s in services.builtin_sources()}
    table.update(st.session_state.get(EXTRA_KEY, {}))
    return table


def add_source(source: services.Source, select: bool = True, call: int = 0) -> None:
    """Remember an uploaded / pasted / chat trace and (by default) open it on the next run at ``call``."""
    extra = dict(st.session_state.get(EXTRA_KEY, {}))
    extra[source.key] = source
    st.session_state[EXTRA_KEY] = extra
    if select:
        st.session_state[PENDING_KEY] = source.key
        st.session_state[PENDING_CALL_KEY] = call


def select(key: str) -> None:
    """Open another trace (safe from callbacks and before st.rerun)."""
    st.session_state[PENDING_KEY] = key


def apply_pending() -> None:
    """Called by the router before the picker exists, so the picker may be set."""
    pending = st.session_state.pop(PENDING_KEY, None)
    if pending is not None:
        st.session_state[PICK_KEY] = pending
        st.session_state[CALL_KEY] = st.session_state.pop(PENDING_CALL_KEY, 0)


def profile() -> str:
    return st.session_state.get(PROFILE_KEY) or "openai"


def current() -> services.Loaded | None:
    """The open trace, or None; a broken file shows one error sentence and stops the page."""
    key = st.session_state.get(PICK_KEY)
    source = all_sources().get(key) if key else None
    if source is None:
        return None
    try:
        return services.load(source, redact=bool(st.session_state.get(REDACT_KEY)))
    except services.LoadError as err:
        st.error(md_escape(err), icon=":material/error:")
        st.stop()


def require_trace() -> services.Loaded:
    """The open trace; with none open, a friendly pointer to the Traces page, then stop."""
    loaded = current()
    if loaded is None:
        st.info(tr("No trace is open. Pick one in the sidebar, or open a sample, a recording, an upload or pasted "
                   "JSON on the Traces page.",
                   "还没有打开任何 trace。请在侧边栏选择，或在 Traces 页面打开示例、录制、上传文件或粘贴 JSON。"),
                icon=":material/info:")
        st.page_link("screens/traces.py", label=tr("Go to Traces", "前往 Traces"), icon=":material/folder_open:")
        st.stop()
    if not loaded.trace.calls:
        st.warning(tr("This trace has no API calls to show.", "这个 trace 没有任何 API 调用。"),
                   icon=":material/warning:")
        st.stop()
    return loaded


def selected_call(loaded: services.Loaded) -> int:
    n = len(loaded.trace.calls)
    value = int(st.session_state.get(CALL_KEY, 0) or 0)
    if value < 0:  # counted from the end: -1 is the latest call (a live chat)
        value = n + value
    return min(max(0, value), n - 1)

