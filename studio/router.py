"""The router: screen list and the shared sidebar (trace picker, provider profile, language).

``app.py`` calls ``main()``. The screens live in ``studio/screens/``, not
``pages/``: Streamlit would treat a ``pages/`` folder next to ``app.py`` as a
legacy multipage app and list its raw file names in the sidebar.
"""
from __future__ import annotations

import streamlit as st

from studio import residency, services, warmup
from studio.components import state
from studio.components.i18n import LANG_KEY, LANGUAGES, tr
from studio.components.style import apply_style
from studio.phases import mark

LIVE_SECONDS = 2
"""How often the open trace file is checked for growth (a stat, nothing read when unchanged)."""
WATCH_KEY = "_watched_file"


def main() -> None:
    # while this run holds its trace, no other run drops it (studio/residency.py); a warm-up not yet started
    # waits until the pages are quiet again
    with residency.in_use(), warmup.page_run():
        _run()


def _run() -> None:
    st.set_page_config(page_title="Chain Studio", page_icon=":material/account_tree:", layout="wide")
    st.session_state.setdefault(LANG_KEY, "en")
    st.session_state.setdefault(state.REDACT_KEY, False)

    # One entry per screen, in sidebar order.
    PAGES = [
        # The default page is served at "/" whatever its url_path; "/traces" is its hidden twin below.
        st.Page("screens/traces.py", title=tr("Traces", "Traces 列表"), icon=":material/folder_open:",
                url_path="home", default=True),
        st.Page("screens/timeline.py", title=tr("Timeline", "时间线"), icon=":material/timeline:", url_path="timeline"),
        st.Page("screens/tokens.py", title=tr("Tokens", "Tokens"), icon=":material/bar_chart:", url_path="tokens"),
        st.Page("screens/lineage.py", title=tr("Lineage", "消息谱系"), icon=":material/account_tree:", url_path="lineage"),
        st.Page("screens/lint.py", title=tr("Lint", "检查"), icon=":material/rule:", url_path="lint"),
        st.Page("screens/replay.py", title=tr("Replay", "重放"), icon=":material/replay:", url_path="replay"),
        st.Page("screens/chat.py", title=tr("Chat", "对话"), icon=":material/chat:", url_path="chat"),
        st.Page("screens/compare.py", title=tr("Compare", "对比"), icon=":material/compare_arrows:",
                url_path="compare"),
        st.Page("screens/learn.py", title=tr("Learn", "学习"), icon=":material/school:", url_path="learn"),
        st.Page("screens/traces.py", title=tr("Traces", "Traces 列表"), icon=":material/folder_open:",
                url_path="traces", visibility="hidden"),
    ]

    page = st.navigation(PAGES)
    mark(f"page run {page.url_path or 'home'} start")
    apply_style()  # after st.navigation: style sent before it is dropped when the page resolves
    state.read_deep_link()
    profiles = services.profiles()
    # The trace's own provider until the user picks one. This loads the open trace: before the sidebar, so that a
    # big file's first read draws its progress bar (bytes, calls) in the main area, not under the trace picker.
    state.follow_profile(profiles)

    with st.sidebar:
        st.segmented_control(tr("Language", "语言"), list(LANGUAGES), format_func=LANGUAGES.get, required=True,
                             **state.bind(state.LANG_WIDGET, LANG_KEY))
        sources = state.all_sources()
        if state.open_key() is not None:
            st.selectbox(tr("Trace", "Trace"), list(sources),
                         format_func=lambda k: f"{sources[k].label}  ·  {sources[k].kind}",
                         **state.bind(state.PICK_KEY, state.TRACE_KEY,
                                      on_change=lambda: st.session_state.update({state.CALL_KEY: 0})))
        else:
            st.caption(tr("No traces yet: upload or paste one on the Traces page.",
                          "还没有 trace：请在 Traces 页面上传或粘贴。"))
        st.selectbox(tr("Provider profile", "服务商配置"), profiles,
                     help=tr("Which provider's rules and error texts the linter applies (by default the open "
                             "trace's own provider's).", "检查器按哪个服务商的规则和报错文本检查（默认按当前 trace 自己的服务商）。"),
                     **state.bind(state.PROFILE_WIDGET, state.PROFILE_KEY, on_change=state.choose_profile))
        st.toggle(tr("Redact PII", "隐去个人信息"),
                  help=tr("Show phone numbers, emails, ID and bank card numbers and API keys as stable "
                          "placeholders, e.g. to share a screen.",
                          "把手机号、邮箱、身份证号、银行卡号和 API 密钥显示为固定的占位符，便于分享屏幕。"),
                  **state.bind(state.REDACT_WIDGET, state.REDACT_KEY))
        st.caption(tr("Message content is shown exactly as recorded.", "消息内容按原样显示。"))
        _watch_open_file()

    state.sync_url()
    page.run()
    mark(f"page run {page.url_path or 'home'} drawn")
    state.warm_up_replay()      # a big open trace's Replay page is computed in the background once pages are quiet


@st.fragment(run_every=LIVE_SECONDS)
def _watch_open_file() -> None:
    """Live refresh: a trace file being appended (``chain-studio chat --trace``, the proxy) reruns the page.

    One ``os.stat`` every few seconds; the app reruns only when the open file's size or mtime changed.
    """
    key = state.open_key()
    source = state.all_sources().get(key) if key else None
    signature = (key, services.file_signature(source) if source is not None else None)
    seen = st.session_state.get(WATCH_KEY)
    st.session_state[WATCH_KEY] = signature
    if seen is not None and seen[0] == key and seen != signature:
        st.rerun(scope="app")
