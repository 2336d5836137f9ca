"""Timeline: one row per API call; the selected call's exact payload, diff, raw JSON and curl."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from studio import services
from studio.components import state
from studio.components.i18n import tr
from studio.components.long_text import long_text
from studio.components.messages import finding_badges, finding_box, message_card

TABLE_PAGE = 50
MESSAGE_PAGE = 25

st.title(tr("Timeline", "时间线"))  # first, so an error box sits under the page's title
loaded = state.require_trace()
trace = loaded.trace
profile = state.profile()
found = services.findings(loaded, profile)
rows = services.timeline(loaded, profile)
n_calls = len(trace.calls)

cols = st.columns(4)
cols[0].metric(tr("Calls", "调用"), f"{n_calls:,}")
cols[1].metric(tr("Failed calls", "失败的调用"), f"{sum(1 for c in trace.calls if c.failed):,}")
cols[2].metric(tr("Findings", "问题"), f"{len(services.problems(found)):,}")
cols[3].metric(tr("Prompt tokens (est.)", "输入 tokens（估算）"), f"{sum(r['estimated'] for r in rows):,}")

# --- the call table, one page at a time -----------------------------------
pages = services.paginate(n_calls, 1, TABLE_PAGE).pages
table_page = st.pagination(pages, key="timeline_table_page") if pages > 1 else 1
window = services.paginate(n_calls, table_page, TABLE_PAGE)
frame = pd.DataFrame(rows[window.start:window.stop])
columns = ["call", "findings", "time", "latency_ms", "messages", "tools", "estimated", "reported", "finish", "status"]
if len({r["model"] for r in rows}) > 1:
    columns.insert(4, "model")
# Imported payload logs often record no time, latency, usage or status: hide columns that are empty throughout.
columns = [c for c in columns if c in ("call", "findings") or any(r[c] not in (None, "") for r in rows)]
picked = st.dataframe(
    frame, hide_index=True, on_select="rerun", selection_mode="single-row", key="timeline_table",
    column_order=columns,
    column_config={
        "call": st.column_config.NumberColumn(tr("call", "调用"), format="%d", width="small"),
        "findings": st.column_config.TextColumn(tr("findings", "问题"), width="medium"),
        "time": tr("time (UTC)", "时间 (UTC)"),
        "latency_ms": st.column_config.NumberColumn(tr("latency ms", "延迟 ms"), format="%.0f"),
        "estimated": st.column_config.NumberColumn(tr("prompt est.", "输入估算"), format="%d"),
        "reported": st.column_config.NumberColumn(tr("prompt reported", "输入上报"), format="%d"),
        "finish": tr("finish", "结束原因"),
        "messages": st.column_config.NumberColumn(tr("messages", "消息"), format="%d"),
        "tools": st.column_config.NumberColumn(tr("tools", "工具"), format="%d"),
        "status": st.column_config.NumberColumn(tr("status", "状态"), format="%d"),
        "model": tr("model", "模型"),
    })
selection = getattr(getattr(picked, "selection", None), "rows", None) or []
if selection:
    chosen = window.start + selection[0]
    if st.session_state.get("_last_table_pick") != chosen:
        st.session_state["_last_table_pick"] = chosen
        st.session_state[state.CALL_KEY] = chosen


def _step(delta: int) -> None:
    st.session_state[state.CALL_KEY] = min(max(0, state.selected_call(loaded) + delta), n_calls - 1)


# The widget has its own key: widget state is dropped on pages that don't show it, the selection must not be.
st.session_state["call_input"] = state.selected_call(loaded)
with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
    st.button("", icon=":material/chevron_left:", key="call_prev", on_click=_step, args=(-1,),
              disabled=st.session_state["call_input"] == 0, help=tr("Previous call", "上一次调用"))
    st.number_input(tr("Call", "调用"), min_value=0, max_value=n_calls - 1, step=1, key="call_input", width=160,
                    on_change=lambda: st.session_state.update({state.CALL_KEY: st.session_state["call_input"]}))
    st.button("", icon=":material/chevron_right:", key="call_next", on_click=_step, args=(1,),
              disabled=st.session_state["call_input"] == n_calls - 1, help=tr("Next call", "下一次调用"))
    st.caption(tr(f"Calls {window.start}–{window.stop - 1} of {n_calls} in the table. Select a row or step through.",
                  f"表中为第 {window.start}–{window.stop - 1} 次调用，共 {n_calls} 次。选择一行或逐个查看。"))
index = state.selected_call(loaded)
call = trace.calls[index]
messages = call.messages
by_message = services.findings_by_message(found, index)

st.header(tr(f"Call {index}", f"第 {index} 次调用"))
with st.container(horizontal=True, gap="small"):
    status = call.status if isinstance(call.status, int) else None  # an imported file may hold anything here
    st.badge(f"HTTP {status}" if status is not None else tr("no status recorded", "未记录状态"),
             color="red" if call.failed else "green" if status is not None else "gray")
    st.badge(tr(f"{len(messages)} messages", f"{len(messages)} 条消息"), color="gray")
    st.badge(tr(f"{len(call.tools or [])} tools", f"{len(call.tools or [])} 个工具"), color="gray")
    if call.finish_reason:
        st.badge(tr(f"finish: {call.finish_reason}", f"结束：{call.finish_reason}")
                 if call.finish_reason.replace("_", "").isalnum() else tr("finish: (odd value)", "结束：（异常值）"),
                 color="blue")
finding_badges([f for fs in by_message.values() for f in fs])
if call.error:
    st.error(tr("The call failed:", "调用失败："), icon=":material/error:")
    st.code(call.error, language=None, wrap_lines=True)
for f in by_message.get(None, []):
    finding_box(f)

# Lazy tabs: only the open tab's content is built and sent (a hidden Raw JSON tab of a 12,000-message payload
# would still cost the browser seconds per step).
tab_payload, tab_diff, tab_raw, tab_curl, tab_response = st.tabs([
    tr("Payload", "请求内容"), tr("Diff vs previous call", "与上一次调用的差异"), tr("Raw JSON", "原始 JSON"),
    tr("curl", "curl"), tr("Response", "响应")], key="timeline_tab", on_change="rerun")

if tab_payload.open is not False:
    with tab_payload:
        made, answered = services.tool_links(messages)
        flagged = sorted(i for i in by_message if i is not None)
        if flagged:
            st.caption(tr(f"Findings on messages: {', '.join('#' + str(i) for i in flagged)}",
                          f"有问题的消息：{', '.join('#' + str(i) for i in flagged)}"))
        mpages = services.paginate(len(messages), 1, MESSAGE_PAGE).pages
        mpage = st.pagination(mpages, key=f"payload_page_{index}") if mpages > 1 else 1
        part = services.paginate(len(messages), mpage, MESSAGE_PAGE)
        tokens = services.message_tokens_at(loaded, index, range(part.start, part.stop))
        if not messages:
            st.info(tr("This request has no messages.", "这个请求没有 messages。"))
        for i in range(part.start, part.stop):
            message_card(i, messages[i], tokens[i], by_message.get(i, []), made, answered, key="payload")
        if mpages > 1:
            st.caption(tr(f"Messages {part.start}–{part.stop - 1} of {len(messages)}.",
                          f"第 {part.start}–{part.stop - 1} 条消息，共 {len(messages)} 条。"))

if tab_diff.open:
    with tab_diff:
        d = services.call_diff(loaded, index)
        counts = d.counts()
        c1, c2, c3 = st.columns(3)
        c1.metric(tr("Added", "新增"), counts["added"])
        c2.metric(tr("Kept", "保留"), counts["kept"])
        c3.metric(tr("Dropped", "移除"), counts["dropped"])
        if d.previous is None:
            st.caption(tr("The first call: every message is new.", "第一次调用：所有消息都是新的。"))
        else:
            st.caption(tr(f"Compared with call {d.previous}.", f"与第 {d.previous} 次调用比较。"))
        tokens = services.message_tokens_at(loaded, index, [e.index for e in d.added[:MESSAGE_PAGE]])
        made, answered = services.tool_links(messages)
        st.subheader(tr("Added", "新增"))
        if not d.added:
            st.caption(tr("Nothing new.", "没有新增。"))
        for e in d.added[:MESSAGE_PAGE]:
            message_card(e.index, e.message, tokens[e.index], by_message.get(e.index, []), made, answered,
                         status="added", key="diff")
        if len(d.added) > MESSAGE_PAGE:
            st.caption(tr(f"… and {len(d.added) - MESSAGE_PAGE} more (see the Payload tab).",
                          f"……还有 {len(d.added) - MESSAGE_PAGE} 条（见请求内容）。"))
        st.subheader(tr("Dropped", "移除"))
        if not d.dropped:
            st.caption(tr("Nothing was dropped.", "没有消息被移除。"))
        for e in d.dropped[:MESSAGE_PAGE]:
            with st.container(border=True):
                st.badge(tr(f"dropped · was #{e.index} · {e.message.get('role')}", f"已移除 · 原 #{e.index}")
                         if str(e.message.get("role")) in ("system", "user", "assistant", "tool")
                         else tr(f"dropped · was #{e.index}", f"已移除 · 原 #{e.index}"),
                         icon=":material/remove:", color="red")
                st.text(services.content_text(e.message.get("content"))[:400] or json.dumps(e.message, ensure_ascii=False)[:400])
                if e.inferred:
                    st.badge(tr("inferred from the payloads, not recorded", "由请求内容推断，并非记录"),
                             icon=":material/troubleshoot:", color="orange",
                             help=tr("The app's memory was not recorded: this drop is read from what the next request "
                                     "no longer sent.", "应用的记忆没有被记录：这次移除是从下一个请求不再发送的内容推断出来的。"))
                    st.caption(tr(f"Evidence: the inferred {e.event.event.type} event after add {e.event.after_add}:",
                                  f"依据：第 {e.event.after_add} 次添加后推断出的 {e.event.event.type} 事件："))
                elif e.event is not None:
                    st.caption(tr(f"Removed by the {e.event.event.type} event after add {e.event.after_add}:",
                                  f"在第 {e.event.after_add} 次添加后被 {e.event.event.type} 事件移除："))
                    st.text(f"{e.event.event.policy} {json.dumps(e.event.event.params)}: {e.event.event.reason}")
                else:
                    st.caption(tr("No trim event recorded for it.", "没有记录对应的截断事件。"))
        with st.expander(tr(f"Kept ({counts['kept']})", f"保留（{counts['kept']}）")):
            st.text("\n".join(f"#{e.index} {e.message.get('role')}" for e in d.kept[:500]))

if tab_raw.open:
    with tab_raw:
        st.caption(tr("The exact request body as sent (copy with the button at the top right).",
                      "发送的原始请求体（右上角按钮复制）。"))
        verified = call.bytes_verified
        if verified is True:
            st.badge(tr("byte-identical: verified", "逐字节一致：已核对"), icon=":material/verified:", color="green",
                     help=tr("Re-serializing this body gives exactly the bytes sent (their SHA-256 was recorded).",
                             "把这个请求体重新序列化，得到的正是发送时的字节（记录了其 SHA-256）。"))
        elif verified is False:
            st.badge(tr("not verified: the stored body re-serializes differently", "未核对：存储的请求体重新序列化后不同"),
                     icon=":material/warning:", color="orange",
                     help=tr("The bytes sent had another form (number spelling, duplicate keys, a redacted copy).",
                             "发送的字节形式不同（数字写法、重复的键、脱敏后的副本）。"))
        else:
            st.badge(tr("no raw-bytes hash recorded", "没有记录原始字节的哈希"), icon=":material/help:", color="gray",
                     help=tr("Imported logs and older traces carry no hash of the bytes sent.",
                             "导入的日志和旧的 trace 没有发送字节的哈希。"))
        long_text(services.request_json(loaded, index), language="json", key=f"raw_{index}",
                  file_name=f"call-{index}-request.json", mime="application/json")

if tab_curl.open:
    with tab_curl:
        st.caption(tr("Re-send this exact body. The key is read from $OPENAI_API_KEY; it is not in the command.",
                      "重新发送这个请求体。密钥从 $OPENAI_API_KEY 读取，不在命令中。"))
        base = st.text_input(tr("Base URL", "Base URL"), value="", placeholder="https://api.openai.com/v1",
                             key="curl_base")
        long_text(services.curl_pages(loaded, index, base or None), language="bash", key=f"curl_{index}",
                  file_name=f"call-{index}.sh")

if tab_response.open:
    with tab_response:
        if call.response is not None:
            long_text(services.response_json(loaded, index), language="json", key=f"response_{index}",
                      file_name=f"call-{index}-response.json", mime="application/json")
        else:
            st.caption(tr("No response body was recorded.", "没有记录响应体。"))
        if len(call.attempts) > 1:
            st.caption(tr(f"{len(call.attempts)} attempts (SDK retries).", f"{len(call.attempts)} 次尝试（SDK 重试）。"))
