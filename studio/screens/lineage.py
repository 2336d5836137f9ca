"""Lineage: the parent_id graph, the per-turn flow, and the calls that carried a message."""
from __future__ import annotations

import json

import streamlit as st

from studio import lineage_services, services
from studio.components import state
from studio.components.i18n import tr
from studio.components.messages import role_badge

TURNS_PER_PAGE = 4
CALL_OPTIONS = 1_000
"""Up to this many calls that included a message are offered as a list; more, as a number to type."""

st.title(tr("Lineage", "消息谱系"))  # first, so an error box sits under the page's title
loaded = state.require_trace()
trace = loaded.trace
all_turns = lineage_services.turns(loaded)
chain = lineage_services.response_chain(loaded)
if chain:      # Responses API calls: exact lineage through previous_response_id
    st.subheader(tr("Response chain (previous_response_id)", "响应链（previous_response_id）"))
    st.caption(tr("Each call names the response it continues; the model saw that response's chain plus the items "
                  "sent. Exact, not inferred.", "每次调用都指明它延续的响应；模型看到该响应的链加上本次发送的项。这是确切的，不是推断。"))
    st.dataframe(chain, hide_index=True)
if not trace.stream and chain:
    st.stop()
if not trace.stream:
    st.info(tr("This trace has no message stream (the importer found only payloads), so there is no lineage to draw.",
               "这个 trace 没有消息流（导入器只找到了请求），无法绘制谱系。"), icon=":material/info:")
    st.stop()

pages = services.paginate(len(all_turns), 1, TURNS_PER_PAGE).pages
page = st.pagination(pages, key="lineage_page") if pages > 1 else 1
window = services.paginate(len(all_turns), page, TURNS_PER_PAGE)
st.caption(tr(f"Turns {window.start + 1}–{window.stop} of {len(all_turns)}. Dashed grey boxes were trimmed away.",
              f"第 {window.start + 1}–{window.stop} 轮，共 {len(all_turns)} 轮。灰色虚线框表示已被截断移除。"))

graph_col, flow_col = st.columns([3, 2])
with graph_col:
    st.graphviz_chart(lineage_services.lineage_dot(loaded, window.start, TURNS_PER_PAGE), width="stretch")
with flow_col:
    st.subheader(tr("Turns", "轮次"))
    for turn in all_turns[window.start:window.stop]:
        with st.container(border=True):
            st.caption(tr(f"Turn {turn.number}", f"第 {turn.number} 轮") if turn.number else
                       tr("Before the first user message", "第一条用户消息之前"))
            st.text("  →  ".join(turn.sequence()))

st.subheader(tr("Which calls included a message?", "哪些调用包含某条消息？"))
msgs = [m for t in all_turns[window.start:window.stop] for m in t.messages]
first = sum(len(t.messages) for t in all_turns[:window.start])  # stream position of msgs[0]


def _label(i: int) -> str:
    m = msgs[i]
    text = " ".join(m.text.split())[:60] or ("tool_calls" if m.tool_calls else "")
    return f"#{first + i} {m.role}: {text}"


# Options are positions, not ids: a damaged file's ids need not be strings.
chosen_index = st.selectbox(tr("Message", "消息"), list(range(len(msgs))), format_func=_label, key="lineage_msg")
if chosen_index is not None and chosen_index < len(msgs):
    m = msgs[chosen_index]
    chosen = m.id
    calls = lineage_services.calls_including(loaded, chosen)
    with st.container(horizontal=True, vertical_alignment="center"):
        role_badge(m.role)
        st.text(f"id {m.id}  ·  parent {m.parent_id or '—'}")
    st.text(m.text[:2000] or json.dumps(m.tool_calls or [], ensure_ascii=False, default=str)[:2000])
    if calls:
        st.success(tr(f"Sent in {len(calls):,} call(s): {services.compact_ranges(calls)}",
                      f"在 {len(calls):,} 次调用中发送：{services.compact_ranges(calls)}"), icon=":material/send:")
        if len(calls) <= CALL_OPTIONS:
            target = st.selectbox(tr("Open call", "打开调用"), calls, key="lineage_call")
        else:       # a list of every call grows with the trace (25,000 options: 0.4 s in the browser)
            target = st.number_input(tr("Open call", "打开调用"), min_value=calls[0], max_value=calls[-1],
                                     value=calls[0], step=1, key="lineage_call_number",
                                     help=tr("Any call listed above.", "上面列出的任一调用。"))
        if st.button(tr("Show in Timeline", "在时间线中查看"), key="lineage_go"):
            if int(target) in calls:
                state.jump("screens/timeline.py", loaded, int(target))
            else:
                st.error(tr(f"Call {int(target)} did not include this message.",
                            f"第 {int(target)} 次调用不包含这条消息。"), icon=":material/error:")
    else:
        st.info(tr("No call included this message.", "没有调用包含这条消息。"))
    removed = lineage_services.event_that_removed(loaded, chosen)
    if removed is not None:
        st.warning(tr(f"Dropped by {removed.event.policy} after add {removed.after_add}:",
                      f"在第 {removed.after_add} 次添加后被 {removed.event.policy} 移除：")
                   if str(removed.event.policy).replace("-", "").isalnum() else tr("Dropped:", "已移除："),
                   icon=":material/content_cut:")
        st.text(str(removed.event.reason))
