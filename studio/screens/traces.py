"""Home: open a sample, a recording, an upload or pasted JSON; a summary per trace."""
from __future__ import annotations

import streamlit as st

from studio import listing_services, services
from studio.components import counting, state
from studio.components.i18n import tr
from studio.components.notes import importer_notes, sampled_note
from studio.components.safe import md_escape

st.title(tr("Traces", "Traces 列表"))
st.caption(tr("Open a trace to see exactly what the model saw on every call.",
              "打开一个 trace，查看模型在每次调用时究竟看到了什么。"))

profile = state.profile()
loaded = state.current(stop=False)   # a broken file must not take the samples and upload boxes away
if loaded is not None:
    counting.token_series(loaded, views=False)      # a big trace's count, waited for with a spinner (its failure said)
    s = listing_services.summary(loaded, profile)
    with st.container(border=True):
        st.subheader(tr("Open trace", "当前 trace"))
        # The models go on this text line, not in a metric: a metric cuts a long model id to "chain-studio-…".
        st.text(f"{loaded.source.label}  ·  {s.format}  ·  {', '.join(s.models) or '—'}")
        cols = st.columns(4)
        cols[0].metric(tr("Calls", "调用"), f"{s.calls:,}")
        cols[1].metric(tr("Messages", "消息"), f"{s.messages:,}")
        cols[2].metric(tr("Prompt tokens", "输入 tokens"), f"{s.prompt_tokens:,}",
                       help=tr("Estimated with tiktoken, summed over all calls.", "用 tiktoken 估算，所有调用之和。"))
        cols[3].metric(tr("Findings", "问题"), f"{s.findings:,}",
                       delta=(tr(f"{s.errors} errors", f"{s.errors} 个错误") if s.errors else None),
                       delta_color="inverse", delta_arrow="off")
        sampled_note(loaded)
        importer_notes(loaded)
        with st.container(horizontal=True):
            st.page_link("screens/timeline.py", label=tr("Timeline", "时间线"), icon=":material/timeline:")
            st.page_link("screens/tokens.py", label=tr("Tokens", "Tokens"), icon=":material/bar_chart:")
            st.page_link("screens/lint.py", label=tr("Lint", "检查"), icon=":material/rule:")

sources = state.all_sources()


def _table(kind_filter: tuple[str, ...], heading: str, empty: str | None = None) -> None:
    """One section of traces; with none of that kind, the ``empty`` hint, or no section at all."""
    items = [s for s in sources.values() if s.kind in kind_filter]
    if not items and empty is None:
        return
    st.subheader(heading)
    if not items:
        st.caption(empty)
        return
    header = st.columns([3, 1, 1, 1, 1, 2, 1])
    for col, label in zip(header, [tr("Trace", "Trace"), tr("Calls", "调用"), tr("Messages", "消息"),
                                   tr("Tokens", "Tokens"), tr("Findings", "问题"), tr("Model", "模型"), ""]):
        col.caption(label)
    for src in items:
        cols = st.columns([3, 1, 1, 1, 1, 2, 1], vertical_alignment="center")
        cols[0].text(src.label)
        teaches = services.sample_descriptions().get(src.label) if src.kind == "sample" else None
        if teaches:
            cols[0].caption(md_escape(teaches))     # our README's line: what this sample teaches
        try:
            s = listing_services.listed(src, profile)
        except services.LoadError as err:
            cols[1].text("—")
            with cols[2]:
                st.text(str(err))
            continue
        if isinstance(s, listing_services.Unread):      # a big file not in memory: not read just to be listed
            for col in cols[1:5]:
                col.text("—")
            cols[5].caption(tr(f"{services.human_bytes(s.size)}, not read yet: open it to read it",
                               f"{services.human_bytes(s.size)}，尚未读取：打开后读取"))
            _open_button(cols[6], src)
            continue
        cols[1].text(f"{s.calls:,}")
        cols[2].text(f"{s.messages:,}")
        cols[3].text(f"{s.prompt_tokens:,}")
        with cols[4]:
            if s.errors:
                st.badge(f"{s.findings}", icon=":material/error:", color="red")
            elif s.findings:
                st.badge(f"{s.findings}", icon=":material/warning:", color="orange")
            else:
                st.badge("0", icon=":material/check:", color="green")
        cols[5].text(", ".join(s.models) or "—")
        _open_button(cols[6], src)


def _open_button(col, src: services.Source) -> None:  # noqa: ANN001 - a Streamlit column
    current = state.open_key() == src.key
    col.button(tr("Open", "打开") if not current else tr("Opened", "已打开"), key=f"open-{src.key}",
               disabled=current, on_click=state.open_trace, args=(src.key,))


_table(("open",), tr("Opened from the command line", "命令行打开的文件"))
_table(("sample",), tr("Bundled samples", "内置示例"),
       tr("No sample traces found in sample_traces/.", "sample_traces/ 中没有示例。"))
_table(("recording", "chat"), tr("Recordings", "录制"),
       tr(f"No recordings in {services.recordings_dir()} yet. Record one with `chain-studio chat` or the Chat page.",
          f"{services.recordings_dir()} 中还没有录制。可用 `chain-studio chat` 或 Chat 页面录制。"))
_table(("upload", "paste"), tr("Uploaded and pasted", "上传与粘贴"))

st.divider()
left, right = st.columns(2)
with left:
    st.subheader(tr("Upload a file", "上传文件"))
    uploaded = st.file_uploader(tr("Trace file (Chain Studio JSONL, request logs, tau-bench, ToolBench, SWE-agent)",
                                   "Trace 文件（Chain Studio JSONL、请求日志、tau-bench、ToolBench、SWE-agent）"),
                                type=["jsonl", "json", "traj"], key="upload")
    if uploaded is not None:
        source = services.bytes_source("upload", uploaded.name, uploaded.getvalue())
        if source.key not in sources:
            try:
                services.load(source)      # a broken file is reported here and never becomes the open trace
            except services.LoadError as err:
                st.error(md_escape(err), icon=":material/error:")
            else:
                state.add_source(source)
                st.rerun()
with right:
    st.subheader(tr("Paste JSON", "粘贴 JSON"))
    pasted = st.text_area(tr("A trace, a request body, or a messages array", "trace、请求体或 messages 数组"),
                          height=150, key="paste_text")
    if st.button(tr("Open pasted JSON", "打开粘贴的 JSON"), key="paste_open", disabled=not pasted.strip()):
        source = services.bytes_source("paste", "pasted", pasted.encode("utf-8"))
        try:
            services.load(source)
        except services.LoadError as err:
            st.error(md_escape(err), icon=":material/error:")
        else:
            state.add_source(source)
            st.rerun()
