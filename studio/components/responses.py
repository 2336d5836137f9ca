"""What the model saw on a Responses API call: each item of the effective input with where it came from.

Every piece of trace data goes through ``st.text`` / ``st.code`` (escaped by Streamlit); markdown is used
only for our own labels.
"""
from __future__ import annotations

import streamlit as st

from .i18n import tr
from .messages import finding_badges, finding_box, role_badge
from .safe import md_escape

LONG_CHARS = 600


def seen_input(view, by_index: dict) -> None:  # view: studio.viewmodels.responses.SeenView
    """The effective input of one Responses call, item by item, with the findings on the items it sent."""
    sent = sum(1 for r in view.rows if r.sent)
    st.caption(tr(f"What the model saw: {len(view.rows)} items ({sent} sent in this request, "
                  f"{len(view.rows) - sent} from the stored chain of previous responses); estimated "
                  f"{view.estimated:,} input tokens" + (f", reported {view.reported:,}" if view.reported is not None
                                                         else "") + ".",
                  f"模型看到的内容：{len(view.rows)} 项（本次请求发送 {sent} 项，其余 {len(view.rows) - sent} 项来自之前响应的存储链）；"
                  f"估算 {view.estimated:,} 个输入 tokens" + (f"，上报 {view.reported:,}" if view.reported is not None
                                                          else "") + "。"))
    if view.rows:
        st.caption(tr("Tokens by item type: ", "按项类型的 tokens：") + " · ".join(
            f"{kind if kind.replace('_', '').isalnum() else 'other'} {n:,}" for kind, n in view.tokens_by_type.items()))
    if view.unresolved is not None:
        st.warning(tr("This request continues a response that is not in this trace: the model also saw that "
                      "response's chain, which cannot be shown.", "这个请求延续的响应不在这个 trace 中：模型还看到了它的链，无法显示。"),
                   icon=":material/help:")
        st.text(f"previous_response_id: {view.unresolved}")
    if view.silently_truncated:
        st.warning(tr("Silent truncation: the API reported far fewer input tokens than this input holds; the "
                      "server dropped items without naming them (truncation: auto).",
                      "静默截断：API 上报的输入 tokens 远少于这份输入；服务端丢弃了一些项却没有说明（truncation: auto）。"),
                   icon=":material/content_cut:")
        st.text(f"estimated {view.estimated:,} · reported {view.reported:,} · truncation: {view.truncation}")
    if view.instructions:
        with st.container(border=True):
            with st.container(horizontal=True, gap="small"):
                role_badge("system")
                st.caption(tr("instructions · sent in this request", "instructions · 本次请求发送"))
            st.text(view.instructions[:LONG_CHARS])
    for r in view.rows:
        findings = by_index.get(r.index, []) if r.sent else []
        with st.container(border=True, key=f"card-{'flagged' if findings else 'other'}-seen-{r.position}"):
            with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                role_badge(r.role)
                st.caption(f"#{r.position} · {r.tokens:,} tokens")
                st.badge(r.kind if r.kind.replace("_", "").isalnum() else tr("odd item type", "异常类型"),
                         color="violet")
                st.badge(tr("sent in this request", "本次请求发送") if r.sent else tr("from a stored response",
                                                                                    "来自存储的响应"),
                         icon=":material/upload:" if r.sent else ":material/history:",
                         color="green" if r.sent else "gray")
            st.caption(tr("where:", "位置："))
            st.text(f"{r.path}" + ("" if r.sent else f" — {r.origin}"))
            if findings:
                finding_badges(findings)
            st.text(r.text[:LONG_CHARS] + (" …" if len(r.text) > LONG_CHARS else ""))
            for f in findings:
                finding_box(f)


def responses_replay_table(rows: list[dict], costs: dict[str, float], price_label: str) -> None:
    """The Replay page on a Responses trace: one row per call and policy (cells are rendered as text);
    ``costs`` is each policy's estimated input cost, priced as ``price_label`` says."""
    st.info(tr("These calls use the Responses API: each call's effective input (the stored previous_response_id "
               "chain plus the items it sent) is replayed by whole item groups. Chat-message policies do not apply.",
               "这些调用使用 Responses API：按完整的项组重放每次调用的实际输入（previous_response_id 的存储链加上发送的项）。"
               "聊天消息的截断策略不适用。"), icon=":material/info:")
    rejected = sorted({r["call"] for r in rows if r["rejected"]})
    dropped = sorted({r["call"] for r in rows if r["dropped"]})
    c1, c2 = st.columns(2)
    c1.metric(tr("Calls with dropped items", "有项被丢弃的调用"), len(dropped))
    c2.metric(tr("Rejected calls", "被拒绝的调用"), len(rejected))
    for col, (policy, cost) in zip(st.columns(len(costs) or 1), costs.items()):
        col.metric(tr("Est. cost", "估算费用"), f"${cost:.4f}", help=policy)
        col.caption(md_escape(f"{policy} · {price_label}"))
    st.dataframe(rows, hide_index=True, column_order=["call", "policy", "items", "sent", "dropped", "tokens",
                                                       "reported", "rejected", "unknown_chain", "reason"])
