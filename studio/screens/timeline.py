"""Timeline: one row per API call; the selected call's exact payload, diff, raw JSON and curl."""
from __future__ import annotations

import json
from contextlib import nullcontext

import pandas as pd
import streamlit as st

from studio import call_services, estimate_services, services
from studio.components import state
from studio.components.exports import export_menu
from studio.components.i18n import lang, tr
from studio.components.long_text import long_text
from studio.components.messages import finding_badges, finding_box, message_card, tool_definitions
from studio.components.responses import seen_input
from studio.components.safe import md_escape

TABLE_PAGE = estimate_services.TABLE_PAGE
"""Rows per table page, all shown (no inner scroll): the selected call's row, marked ▶, is always in view."""
MESSAGE_PAGE = 25
_ZH_NOUNS = {"messages": "消息", "input items": "输入项", "contents": "contents 条目"}
FILTER_LABELS = {"findings": ("calls with findings", "有问题的调用"), "failed": ("failed calls", "失败的调用"),
                 "dropped": ("calls where something was dropped", "有消息被移除的调用")}

st.title(tr("Timeline", "时间线"))  # first, so an error box sits under the page's title
loaded = state.require_trace()
trace = loaded.trace
profile = state.profile()
found = services.findings(loaded, profile)
n_calls = len(trace.calls)

# The trace's total prompt tokens are the Tokens page's: this page counts only the table rows it shows.
cols = st.columns(3)
cols[0].metric(tr("Calls", "调用"), f"{n_calls:,}")
cols[1].metric(tr("Failed calls", "失败的调用"), f"{services.table_view(loaded, profile, []).failed:,}")
cols[2].metric(tr("Findings", "问题"), f"{len(services.problems(found)):,}")

# --- search over every payload ------------------------------------------------------
query = st.text_input(tr("Search message text across all calls", "在所有调用的消息中搜索"), key="timeline_search",
                      placeholder="A-2024-0715", icon=":material/search:")
if query.strip():
    hit = services.search(loaded, query)
    with st.container(border=True):
        if not hit.found:
            st.caption(tr("No call's payload contains this text.", "没有任何调用的请求包含这段文字。"))
        else:
            st.text(tr(f"Carried by {len(hit.carried)} call(s): {services.compact_ranges(hit.carried)}",
                       f"有 {len(hit.carried)} 次调用带着它：{services.compact_ranges(hit.carried)}"))
            for loss in hit.losses[:20]:
                with st.container(horizontal=True, vertical_alignment="center", gap="small"):
                    st.badge(tr(f"dropped at call {loss.call}", f"第 {loss.call} 次调用时被移除"),
                             icon=":material/content_cut:", color="red")
                    for d in loss.drops[:3]:
                        reason = services.reason_zh(d.reason) if lang() == "zh" else d.reason
                        st.text(f"{d.role} «{d.text}» · {d.policy}: {reason}")
                    if not loss.drops:
                        st.text(tr("no memory event removed it: the app built that payload without it",
                                   "没有记忆事件删除它：应用构造这次请求时没有带上它"))
                    st.button(tr(f"Open call {loss.call}", f"打开第 {loss.call} 次调用"), key=f"search_go_{loss.call}",
                              on_click=state.open_trace, args=(loaded.source.key, loss.call))
            if not hit.losses:
                st.caption(tr("Never dropped while the trace went on.", "在整个 trace 中没有被移除。"))
            st.button(tr(f"Open call {hit.carried[0]} (first to carry it)", f"打开第 {hit.carried[0]} 次调用（第一次带着它）"),
                      key="search_go_first", on_click=state.open_trace, args=(loaded.source.key, hit.carried[0]))

# --- the call table, one page at a time, following the selected call -------------------
filters = st.pills(tr("Show only", "只显示"), list(services.TIMELINE_FILTERS), selection_mode="multi",
                   format_func=lambda k: tr(*FILTER_LABELS[k]), key="timeline_filters")
table = services.table_view(loaded, profile, filters)
shown, positions = table.shown, table.positions
selected = state.selected_call(loaded)
pages = services.paginate(len(shown), 1, TABLE_PAGE).pages if shown else 1
page_key = "timeline_table_page" + "".join(f"_{f}" for f in filters)
# The table page follows the stepper, a jump and a deep link: when the selected call changed since the last
# run, show the page holding it (a page picked by hand stays until the selection moves); likewise on coming back
# from another page, whose run dropped the pagination widget's state.
if (st.session_state.get("_table_follows") != (loaded.digest, selected) or page_key not in st.session_state) \
        and selected in positions:
    st.session_state[page_key] = services.page_of(positions[selected], TABLE_PAGE)
st.session_state["_table_follows"] = (loaded.digest, selected)
if pages > 1 and not 1 <= int(st.session_state.get(page_key, 1) or 1) <= pages:
    st.session_state[page_key] = pages      # the filters shrank the table under the page shown
table_page = st.pagination(pages, key=page_key) if pages > 1 else 1
window = services.paginate(len(shown), table_page, TABLE_PAGE)
on_page = shown[window.start:window.stop]
page_calls = [r["call"] for r in on_page]
with (st.spinner(tr("Waiting for the token counts of these long calls (counted since the trace opened) …",
                    "正在等待这些长调用的 token 统计（打开 trace 时已开始）…"))
      if estimate_services.waits_for_count(loaded, page_calls) else nullcontext()):
    estimates = estimate_services.row_estimates(loaded, page_calls)
frame = pd.DataFrame(estimate_services.page_rows(on_page, estimates, selected))
if not shown:
    st.caption(tr("No call matches these filters.", "没有符合筛选条件的调用。"))
else:
    picked = st.dataframe(
        frame, hide_index=True, on_select="rerun", selection_mode="single-row", height="content",
        key=f"timeline_table_{'-'.join(filters)}_{table_page}", column_order=table.columns,
        column_config={
            "at": st.column_config.TextColumn("", width=30),
            "call": st.column_config.NumberColumn(tr("call", "调用"), format="%d", width="small"),
            "dropped": st.column_config.TextColumn(tr("dropped", "移除"), width="small",
                                                   help=tr("Messages a trim removed just before this call",
                                                           "在这次调用之前被截断删除的消息数")),
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
        chosen = shown[window.start + selection[0]]["call"]
        marker = (loaded.digest, tuple(filters), table_page, selection[0])
        if st.session_state.get("_last_table_pick") != marker:
            st.session_state["_last_table_pick"] = marker
            st.session_state[state.CALL_KEY] = chosen
            st.rerun()


def _step(delta: int) -> None:
    st.session_state[state.CALL_KEY] = min(max(0, state.selected_call(loaded) + delta), n_calls - 1)


# The widget has its own key: widget state is dropped on pages that don't show it, the selection must not be.
st.session_state["call_input"] = state.selected_call(loaded)
with st.container(horizontal=True, vertical_alignment="bottom", gap="small"):
    st.button("", icon=":material/chevron_left:", key="call_prev", on_click=_step, args=(-1,), shortcut="Left",
              disabled=st.session_state["call_input"] == 0, help=tr("Previous call (←)", "上一次调用（←）"))
    st.number_input(tr("Call", "调用"), min_value=0, max_value=n_calls - 1, step=1, key="call_input", width=160,
                    on_change=lambda: st.session_state.update({state.CALL_KEY: st.session_state["call_input"]}))
    st.button("", icon=":material/chevron_right:", key="call_next", on_click=_step, args=(1,), shortcut="Right",
              disabled=st.session_state["call_input"] == n_calls - 1, help=tr("Next call (→)", "下一次调用（→）"))
    if shown:
        st.caption(tr(f"{len(shown):,} of {n_calls:,} calls shown. Select a row, type a number, or step with ← →.",
                      f"显示 {len(shown):,} / {n_calls:,} 次调用。选择一行、输入编号，或用 ← → 逐个查看。"))
index = state.selected_call(loaded)
state.sync_url(index)
call = trace.calls[index]
messages = call.messages
by_message = services.findings_by_message(found, index)
dropped_here = services.drops(loaded).get(index, [])

with st.container(horizontal=True, vertical_alignment="center"):
    st.header(tr(f"Call {index}", f"第 {index} 次调用"), width="content")
    export_menu(loaded, index, profile)
with st.container(horizontal=True, gap="small"):
    status = call.status if isinstance(call.status, int) else None  # an imported file may hold anything here
    st.badge(f"HTTP {status}" if status is not None else tr("no status recorded", "未记录状态"),
             color="red" if call.failed else "green" if status is not None else "gray")
    size, noun = services.conversation_size(call)
    st.badge(tr(f"{size} {noun}", f"{size} 条{_ZH_NOUNS.get(noun, noun)}") if size is not None
             else tr(f"{noun}: not a list", f"{_ZH_NOUNS.get(noun, noun)}：不是列表"), color="gray")
    n_tools = services.tools_count(trace, call.tools)
    st.badge(tr(f"{n_tools} tools", f"{n_tools} 个工具") if n_tools is not None
             else tr("tools not recorded", "未记录工具"), color="gray")
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
if dropped_here:
    needle = (st.session_state.get("timeline_search") or "").strip().casefold()
    with st.container(border=True, key="dropped-here"):
        st.badge(tr(f"{len(dropped_here)} message(s) dropped just before this call",
                    f"这次调用之前移除了 {len(dropped_here)} 条消息"), icon=":material/content_cut:", color="red")
        for d in dropped_here[:10]:
            with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                if needle and needle in d.text.casefold():
                    st.badge(tr("holds your search", "包含搜索内容"), icon=":material/search:", color="orange")
                if d.inferred:
                    st.badge(tr("inferred", "推断"), icon=":material/troubleshoot:", color="orange")
                st.text(f"{d.role} «{d.text}»")
            reason = services.reason_zh(d.reason) if lang() == "zh" else d.reason
            st.caption(md_escape(f"{d.policy}: {reason}"))
        if len(dropped_here) > 10:
            st.caption(tr(f"… and {len(dropped_here) - 10} more (Diff tab).", f"……还有 {len(dropped_here) - 10} 条（见差异页）。"))
        if st.button(tr("Why did it forget? Replay this trace under other policies",
                        "为什么忘了？用其他策略重放这个 trace"), key="to_replay", icon=":material/replay:"):
            state.jump("screens/replay.py", loaded, index)

# Lazy tabs: only the open tab's content is built and sent (a hidden Raw JSON tab of a 12,000-message payload
# would still cost the browser seconds per step).
tab_payload, tab_diff, tab_raw, tab_curl, tab_response = st.tabs([
    tr("Payload", "请求内容"), tr("Diff vs previous call", "与上一次调用的差异"), tr("Raw JSON", "原始 JSON"),
    tr("curl", "curl"), tr("Response", "响应")], key="timeline_tab", on_change="rerun")

# A Responses API call: its effective input, item by item (read by the Payload and Diff tabs)
seen = services.what_the_model_saw(loaded, index) if not messages else None

if tab_payload.open is not False:
    with tab_payload:
        tool_definitions(call.tools)
        flagged = sorted(i for i in by_message if i is not None)
        if flagged:
            st.caption(tr(f"Findings on messages: {', '.join('#' + str(i) for i in flagged)}",
                          f"有问题的消息：{', '.join('#' + str(i) for i in flagged)}"))
        mpages = services.paginate(len(messages), 1, MESSAGE_PAGE).pages
        mpage = st.pagination(mpages, key=f"payload_page_{index}") if mpages > 1 else 1
        part = services.paginate(len(messages), mpage, MESSAGE_PAGE)
        tokens = call_services.message_tokens_at(loaded, index, messages, range(part.start, part.stop))
        made, answered = services.tool_links(messages, part.stop)
        if seen is not None:      # a Responses API call: its effective input, item by item
            seen_input(seen, by_message)
        elif not messages:
            st.info(tr("This request has no messages.", "这个请求没有 messages。"))
        for i in range(part.start, part.stop):
            message_card(i, messages[i], tokens[i], by_message.get(i, []), made, answered, key="payload")
        if mpages > 1:
            st.caption(tr(f"Messages {part.start}–{part.stop - 1} of {len(messages)}.",
                          f"第 {part.start}–{part.stop - 1} 条消息，共 {len(messages)} 条。"))

if tab_diff.open:
    with tab_diff:
        if seen is not None:
            st.caption(tr("A Responses API call: the Payload tab marks each item the model saw as sent in this request or "
                          "taken from a stored response; there is no message list to diff.",
                          "Responses API 调用：请求内容页标出了模型看到的每一项是本次发送的还是来自存储的响应；没有消息列表可比较。"))
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
        on_screen = [e.index for e in d.added[:MESSAGE_PAGE]]
        tokens = call_services.message_tokens_at(loaded, index, messages, on_screen)
        made, answered = services.tool_links(messages, max(on_screen, default=-1) + 1)
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
                    st.caption(tr(f"Evidence: the inferred {e.event.event.type} event (after message {e.event.after_add} "
                                  "was added):",
                                  f"依据：推断出的 {e.event.event.type} 事件（在添加第 {e.event.after_add} 条消息之后）："))
                elif e.event is not None:
                    st.caption(tr(f"Removed by a {e.event.event.type} of {e.event.event.policy} (after message "
                                  f"{e.event.after_add} was added):",
                                  f"被 {e.event.event.policy} 的 {e.event.event.type} 事件移除（在添加第 {e.event.after_add} "
                                  "条消息之后）："))
                    reason = e.event.event.reason
                    st.text(f"{e.event.event.policy} {json.dumps(e.event.event.params)}: "
                            f"{services.reason_zh(reason) if lang() == 'zh' else reason}")
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
        long_text(call_services.request_json(loaded, index), language="json", key=f"raw_{index}",
                  file_name=f"call-{index}-request.json", mime="application/json")

if tab_curl.open:
    with tab_curl:
        default_base, is_demo = call_services.default_base_url()
        st.caption(tr("Re-send this exact body. The key is read from $OPENAI_API_KEY; it is not in the command.",
                      "重新发送这个请求体。密钥从 $OPENAI_API_KEY 读取，不在命令中。"))
        base = st.text_input(tr("Base URL", "Base URL"), value=default_base, key="curl_base",
                             help=tr("Default: the configured endpoint ($OPENAI_BASE_URL), else the demo model of "
                                     "`chain-studio demo-model`.",
                                     "默认：已配置的接口（$OPENAI_BASE_URL），否则为 `chain-studio demo-model` 的演示模型。"))
        recorded = call_services.recorded_base_url(loaded, index)
        if is_demo and base.strip() == default_base:
            st.caption(tr("Start the demo model first: chain-studio demo-model", "先启动演示模型：chain-studio demo-model"))
        if recorded and recorded != base.strip():
            st.caption(md_escape(tr(f"Recorded against {recorded} (that server may be gone).",
                                    f"录制时发往 {recorded}（那个服务可能已不在）。")))
        long_text(call_services.curl_pages(loaded, index, base.strip() or None), language="bash", key=f"curl_{index}",
                  file_name=f"call-{index}.sh")

if tab_response.open:
    with tab_response:
        if call.response is not None:
            long_text(call_services.response_json(loaded, index), language="json", key=f"response_{index}",
                      file_name=f"call-{index}-response.json", mime="application/json")
        else:
            st.caption(tr("No response body was recorded.", "没有记录响应体。"))
        if len(call.attempts) > 1:
            st.caption(tr(f"{len(call.attempts)} attempts (SDK retries).", f"{len(call.attempts)} 次尝试（SDK 重试）。"))
