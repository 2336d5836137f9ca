"""Which trace, call, profile, language and redaction are open, shared by the sidebar and every page.

Every choice lives in ``st.session_state`` under a plain key that no widget
owns (``TRACE_KEY``, ``CALL_KEY`` ...). The sidebar's widgets have keys of
their own (``PICK_KEY`` ...) and are bound to those plain keys by ``bind``:
Streamlit drops the state of every widget when a page calls
``st.switch_page`` (the rerun carries no widget states), so a widget key would
fall back to its default (the first sample, English, no redaction) on every
jump between pages. A plain key survives the jump.
"""
from __future__ import annotations

from collections.abc import Callable

import streamlit as st

from studio import services

from .i18n import lang, tr
from .notes import importer_notes
from .safe import md_escape

TRACE_KEY = "open_trace"
"""The open trace's source key (plain state)."""
CALL_KEY = "selected_call"
"""The selected call (plain state; negative counts from the end)."""
PROFILE_KEY = "open_profile"
"""The provider profile every page lints with (plain state)."""
PROFILE_CHOSEN = "open_profile_chosen"
"""True once the user picked a profile; until then it follows the open trace's own provider (``follow_profile``)."""
REDACT_KEY = "open_redact"
"""Whether personal data is shown as placeholders (plain state)."""
EXTRA_KEY = "extra_sources"
# The sidebar widgets' own keys (widget state: dropped by st.switch_page, restored from the plain keys by ``bind``).
PICK_KEY = "trace_pick"
PROFILE_WIDGET = "profile"
REDACT_WIDGET = "redact_pii"
LANG_WIDGET = "lang"


def bind(widget_key: str, store_key: str, *, on_change: Callable[[], None] | None = None) -> dict:
    """Seed widget ``widget_key`` from the plain key ``store_key``; the returned kwargs write it back on change.

    Call it right before creating the widget and pass the result as keyword arguments.
    """
    st.session_state[widget_key] = st.session_state.get(store_key)

    def _store() -> None:
        st.session_state[store_key] = st.session_state[widget_key]
        if on_change is not None:
            on_change()
    return {"key": widget_key, "on_change": _store}


def all_sources() -> dict[str, services.Source]:
    table = {s.key: s for s in services.builtin_sources()}
    table.update(st.session_state.get(EXTRA_KEY, {}))
    return table


def add_source(source: services.Source, select: bool = True, call: int = 0) -> None:
    """Remember an uploaded / pasted / chat trace and (by default) open it at ``call``."""
    extra = dict(st.session_state.get(EXTRA_KEY, {}))
    extra[source.key] = source
    st.session_state[EXTRA_KEY] = extra
    if select:
        open_trace(source.key, call)


def open_trace(key: str, call: int = 0) -> None:
    """Open trace ``key`` at ``call`` (safe from callbacks, before st.rerun and before st.switch_page)."""
    st.session_state[TRACE_KEY] = key
    st.session_state[CALL_KEY] = call


def jump(page: str, loaded: services.Loaded, call: int) -> None:
    """Go to ``page`` showing call ``call`` of the trace this page shows (never another one)."""
    open_trace(loaded.source.key, call)
    st.switch_page(page)


def open_key() -> str | None:
    """The open trace's source key; the first source (`chain-studio open`'s file, else the first sample)
    when none is open or the open one is gone."""
    sources = all_sources()
    key = st.session_state.get(TRACE_KEY)
    if key not in sources:
        # A call a link named (``?call=20`` without a trace) is kept for the first trace; another trace's is not.
        if key is not None or CALL_KEY not in st.session_state:
            st.session_state[CALL_KEY] = 0
        key = st.session_state[TRACE_KEY] = next(iter(sources), None)
    return key


def profile() -> str:
    return st.session_state.get(PROFILE_KEY) or "openai"


def profile_chosen() -> bool:
    return bool(st.session_state.get(PROFILE_CHOSEN))


def choose_profile(name: str | None = None) -> None:
    """The user picked a profile (``name``, else the one already stored): it stays, whatever trace is open."""
    if name is not None:
        st.session_state[PROFILE_KEY] = name
    st.session_state[PROFILE_CHOSEN] = True


def follow_profile(profiles: list[str]) -> None:
    """Until the user picks a profile, every page judges the open trace by its own provider's
    (``services.default_profile``: an Anthropic or Gemini trace by ``anthropic`` / ``gemini``, else ``openai``)."""
    if profile_chosen() and st.session_state.get(PROFILE_KEY) in profiles:
        return
    key = open_key()
    source = all_sources().get(key) if key else None
    try:        # the page itself reports a file it cannot load; here it only has no provider
        loaded = services.load(source, redact=redacted()) if source is not None else None
    except services.LoadError:
        loaded = None
    native = services.default_profile(loaded) if loaded is not None else profiles[0]
    st.session_state[PROFILE_KEY] = native if native in profiles else profiles[0]


def redacted() -> bool:
    return bool(st.session_state.get(REDACT_KEY))


def current(stop: bool = True) -> services.Loaded | None:
    """The open trace, or None; a broken file shows one error sentence and stops the page
    (with ``stop=False`` the page goes on without it: the Traces page keeps its samples and upload boxes)."""
    key = open_key()
    source = all_sources().get(key) if key else None
    if source is None:
        return None
    try:
        return services.load(source, redact=redacted())
    except services.LoadError as err:
        st.error(md_escape(err), icon=":material/error:")
        if stop:
            st.stop()
        return None


# --- deep links: ?trace=NAME&call=N ----------------------------------------------

DEEP_LINK_READ = "_deep_link_read"
URL_TRACE, URL_CALL = "trace", "call"


def read_deep_link() -> None:
    """On a session's first run, open the trace and call the URL names (``?trace=long_trimmed_fact.jsonl&call=20``).

    Only traces the studio lists can be named (samples, recordings, the opened file): a URL never reads
    an arbitrary path. Later runs ignore the URL: it follows the selection (``sync_url``).
    """
    if st.session_state.get(DEEP_LINK_READ):
        return
    st.session_state[DEEP_LINK_READ] = True
    params = st.query_params
    wanted, call = params.get(URL_TRACE), params.get(URL_CALL)
    try:
        number = int(call) if call not in (None, "") else None
    except ValueError:
        number = None
    if wanted:
        key = services.find_source(all_sources(), wanted)
        if key is None:
            st.warning(tr(f"The link names a trace the studio does not list: {md_escape(wanted, 120)}",
                          f"链接中的 trace 不在列表中：{md_escape(wanted, 120)}"), icon=":material/link_off:")
            return
        open_trace(key, number or 0)
    elif number is not None:
        st.session_state[CALL_KEY] = number


def sync_url(call: int | None = None) -> None:
    """Write the open trace (and call) into the URL, so the address bar can be pasted to a colleague."""
    key = open_key()
    source = all_sources().get(key) if key else None
    if source is None or source.kind in ("upload", "paste"):
        # Bytes in this session only: a link could not open them elsewhere.
        for k in (URL_TRACE, URL_CALL):
            if k in st.query_params:
                del st.query_params[k]
        return
    value = int(st.session_state.get(CALL_KEY, 0) or 0) if call is None else call
    wanted = {URL_TRACE: services.deep_link_name(source), URL_CALL: str(value)}
    if {k: st.query_params.get(k) for k in wanted} != wanted:
        st.query_params.update(wanted)


def require_trace() -> services.Loaded:
    """The open trace, with the importer's notes under the page's title; with none open (or no calls),
    a friendly pointer to the Traces page, then stop."""
    loaded = current()
    if loaded is None:
        st.info(tr("No trace is open. Pick one in the sidebar, or open a sample, a recording, an upload or pasted "
                   "JSON on the Traces page.",
                   "还没有打开任何 trace。请在侧边栏选择，或在 Traces 页面打开示例、录制、上传文件或粘贴 JSON。"),
                icon=":material/info:")
        st.page_link("screens/traces.py", label=tr("Go to Traces", "前往 Traces"), icon=":material/folder_open:")
        st.stop()
    importer_notes(loaded)
    first_open(loaded)
    if not loaded.trace.calls:
        st.warning(tr("This trace has no API calls to show.", "这个 trace 没有任何 API 调用。"),
                   icon=":material/warning:")
        st.stop()
    return loaded


def first_open(loaded: services.Loaded) -> None:
    """The first time a big trace is shown with this profile: lint and tabulate it under a progress bar (every
    page reads these views; later runs find them cached and draw nothing) while its tokens are counted in the
    background (the Timeline counts the rows it shows; the Tokens page waits for the series if it must)."""
    from studio import warmup

    p = profile()
    signature = services.file_signature(loaded.source)
    warmup.count_ahead(loaded)      # its token counts, in the background: no page waits for all of them
    services.opening_steps(loaded, p, [
        (tr("Linting", "检查中"), lambda: services.findings(loaded, p)),
        (tr("Building the call table", "生成调用表"), lambda: services.timeline(loaded, p)),
    ], signature[0] if signature else None)


def warm_up_replay() -> None:
    """Once a big trace has been shown (its first-open views built), replay it in the background under the
    Replay page's default policies (``studio/warmup.py``), so that page's first visit finds them."""
    key = open_key()
    source = all_sources().get(key) if key else None
    try:        # cached: a stat and a dict look-up; the page itself reported a file it cannot load
        loaded = services.load(source, redact=redacted()) if source is not None else None
    except services.LoadError:
        return
    if loaded is not None and loaded.trace.calls:
        from studio import warmup

        warmup.when_quiet(loaded, profile(), lang())


def selected_call(loaded: services.Loaded) -> int:
    n = len(loaded.trace.calls)
    value = int(st.session_state.get(CALL_KEY, 0) or 0)
    if value < 0:  # counted from the end: -1 is the latest call (a live chat)
        value = n + value
    return min(max(0, value), n - 1)
