"""Lint: every finding in a table, filtered by rule, severity and profile; jump to a call; repaired payload."""
from __future__ import annotations

import json

import pandas as pd
import streamlit as st

from studio import services
from studio.components import state
from studio.components.i18n import lang, tr
from studio.components.messages import finding_box

st.title(tr("Lint", "检查"))  # first, so an error box sits under the page's title
loaded = state.require_trace()
trace = loaded.trace

profiles = services.profiles()
default_profile = state.profile()
c0, c1, c2 = st.columns([1, 2, 2])
# Mirrors the sidebar's profile both ways, so every page lints with the same one.
st.session_state["lint_profile"] = default_profile if default_profile in profiles else profiles[0]
profile = c0.selectbox(tr("Provider profile", "服务商配置"), profiles, key="lint_profile",
                       on_change=lambda: state.choose_profile(st.session_state["lint_profile"]))
st.caption(tr(*services.profile_note(profile, services.default_profile(loaded), state.profile_chosen())))
# Errors (the API would reject the call) first, then by call and message.
_RANK = {"error": 0, "warning": 1}
found = sorted(services.findings(loaded, profile),
               key=lambda f: (_RANK.get(str(f.get("severity")), 2), f.get("call") or 0, f.get("index") or -1))
rules = sorted({str(f.get("rule")) for f in found})
severities = sorted({str(f.get("severity")) for f in found}, key=lambda s: _RANK.get(s, 2))
pick_rules = c1.multiselect(tr("Rule", "规则"), rules, default=rules, key="lint_rules")
pick_sev = c2.multiselect(tr("Severity", "严重程度"), severities, default=severities, key="lint_sev")
shown = [f for f in found if str(f.get("rule")) in pick_rules and str(f.get("severity")) in pick_sev]

m1, m2, m3 = st.columns(3)
m1.metric(tr("Findings", "问题"), len(found))
m2.metric(tr("Errors (API would reject)", "错误（API 会拒绝）"), sum(1 for f in found if f.get("severity") == "error"))
m3.metric(tr("Calls affected", "受影响的调用"), len({f.get("call") for f in found}))


VERDICTS_AUTO = 200
"""Up to this many calls the verdict matrix is computed with the page; above, when asked."""


def _verdicts() -> None:
    """Every provider's verdict on this trace (after the findings table, so it never shifts it)."""
    with st.expander(tr("Every provider's verdict", "各服务商的判定"), icon=":material/gavel:"):
        st.caption(tr("The same chain judged by every provider profile (converted to its request shape where "
                      "needed): accepted, or the first rejection with the provider's exact text and where it is.",
                      "同一条消息链按每个服务商的规则检查（必要时先转换为其请求格式）：接受，或第一个拒绝及其原文和位置。"))
        # Every profile re-judges every call (converted): seconds per thousand calls, so a long trace asks first.
        if len(loaded.trace.calls) > VERDICTS_AUTO and not st.toggle(
                tr(f"Judge all {len(loaded.trace.calls):,} calls with every provider",
                   f"用每个服务商的规则检查全部 {len(loaded.trace.calls):,} 次调用"), key="lint_verdicts_on"):
            return
        whole, per_call = services.verdict_matrix(loaded)
        st.dataframe(pd.DataFrame(whole), hide_index=True, key="lint_verdicts", column_config={
            "call": st.column_config.NumberColumn(tr("call", "调用"), format="%d"),    # empty (grey) when accepted
            "text": st.column_config.TextColumn(tr("provider's text", "服务商原文"), width="large")})
        st.dataframe(pd.DataFrame(per_call), hide_index=True, key="lint_verdicts_calls")

if not found:
    st.success(tr(f"No findings under the {profile} profile: every payload follows the protocol.",
                  f"在 {profile} 配置下没有问题：每个请求都符合协议。"), icon=":material/check_circle:")
    _verdicts()
    st.stop()

zh_rule = services.rule_zh if lang() == "zh" else (lambda rule: None)


def _explanation(f: dict) -> str:
    """中文: the rule's Chinese title before the finding's own (English) detail line."""
    zh = zh_rule(str(f.get("rule")))
    return (zh[0] + "：" if zh else "") + str(f.get("message"))


# One page of findings at a time: a 25,000-call trace can hold a finding per call.
LINT_PAGE = 200
pages = services.paginate(len(shown), 1, LINT_PAGE).pages
part = services.paginate(len(shown), st.pagination(pages, key="lint_table_page") if pages > 1 else 1, LINT_PAGE)
table = pd.DataFrame([{"call": f.get("call"), "message": f.get("index"), "rule": f.get("rule"),
                       "severity": f.get("severity"), "tool_call_ids": ", ".join(map(str, f.get("tool_call_ids") or [])),
                       "explanation": _explanation(f)} for f in shown[part.start:part.stop]])
st.dataframe(table, hide_index=True, key="lint_table", column_config={
    "call": st.column_config.NumberColumn(tr("call", "调用"), format="%d", width="small"),
    "message": st.column_config.NumberColumn(tr("message", "消息"), format="%d", width="small"),
    "rule": tr("rule", "规则"), "severity": tr("severity", "严重程度"),
    "explanation": st.column_config.TextColumn(tr("explanation", "说明"), width="large")})
_verdicts()

st.subheader(tr("Inspect a finding", "查看问题"))
if not shown:
    st.caption(tr("No finding matches the filters.", "没有符合筛选条件的问题。"))
    st.stop()
if pages > 1:
    st.caption(tr(f"Findings {part.start}–{part.stop - 1} of {len(shown)}.",
                  f"第 {part.start}–{part.stop - 1} 个问题，共 {len(shown)} 个。"))
choice = st.selectbox(tr("Finding", "问题"), list(range(part.start, part.stop)), key="lint_pick",
                      format_func=lambda i: f"call {shown[i].get('call')} · #{shown[i].get('index')} · "
                                            f"{shown[i].get('rule')}")
f = shown[choice]
finding_box(f)
if st.button(tr(f"Open call {f.get('call')} in the Timeline", f"在时间线中打开第 {f.get('call')} 次调用"),
             key="lint_go", icon=":material/timeline:"):
    state.jump("screens/timeline.py", loaded, int(f.get("call") or 0))

st.subheader(tr("Repaired payload", "修复后的请求"))
strategies = services.repair_strategies()
strategy = st.segmented_control(tr("Strategy", "策略"), strategies, key="lint_strategy", default=strategies[0],
                                required=True)
st.caption(tr("drop: remove what cannot be paired · placeholder: insert a stub result for each unanswered call · "
              "move: put results back right after their call.",
              "drop：删除无法配对的消息 · placeholder：为未回应的调用插入占位结果 · move：把结果移回其调用之后。"))
call_index = int(f.get("call") or 0)
body, edits, left = services.repaired_request(loaded, call_index, strategy, profile)
c1, c2 = st.columns(2)
c1.metric(tr(f"Edits to call {call_index}", f"第 {call_index} 次调用的修改"), len(edits))
c2.metric(tr("Errors left", "剩余错误"), len(left))
if edits:
    st.dataframe(pd.DataFrame(edits), hide_index=True, key="lint_edits")
st.download_button(tr("Download repaired request body", "下载修复后的请求体"),
                   lambda: json.dumps(body, ensure_ascii=False, indent=2), file_name=f"call-{call_index}-repaired.json",
                   mime="application/json", key="lint_download", icon=":material/download:", type="primary")
