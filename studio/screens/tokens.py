"""Tokens: per-role stacks per call, cumulative tokens and cost, estimated vs reported, the heaviest messages."""
from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from studio import services
from studio.components import counting, state
from studio.components.i18n import tr
from studio.components.notes import sampled_note

PART_COLORS = {"system": "#6b7280", "user": "#2563eb", "assistant": "#059669", "tool": "#d97706",
               "tools": "#9333ea", "priming": "#cbd5e1", "other": "#db2777"}
PART_LABELS = {"system": ("system", "系统"), "user": ("user", "用户"), "assistant": ("assistant", "助手"),
               "tool": ("tool results", "工具结果"), "tools": ("tool definitions", "工具定义"),
               "priming": ("reply priming", "回复引导"), "other": ("other roles", "其他角色")}

st.title(tr("Tokens", "Tokens"))  # first, so an error box sits under the page's title
loaded = state.require_trace()
trace = loaded.trace
series = counting.token_series(loaded)   # waits (with a spinner) for a big trace's counting process; its failure shown
suspects, share, reported_field = services.series_facts(loaded)   # once per trace, not per rerun


total_est = sum(t.estimated for t in series)
reported = [t.reported for t in series if t.reported is not None]
cols = st.columns(4)
cols[0].metric(tr("Prompt tokens (est.)", "输入 tokens（估算）"), f"{total_est:,}")
cols[1].metric(tr("Prompt tokens (reported)", "输入 tokens（上报）"), f"{sum(reported):,}" if reported else "—")
cost_slot = cols[2].empty()  # filled once the price is chosen below
cols[3].metric(tr("Tool results' share", "工具结果占比"), f"{share:.0%}")
sampled_note(loaded)   # texts over 2M characters are counted from a sample: never shown as exact

# --- 1. per-role stacks with the context window ----------------------------
st.subheader(tr("Prompt tokens per call, by role", "每次调用的输入 tokens（按角色）"))
bins = services.call_bins(loaded)   # one bar per call up to 500 calls, else the mean of consecutive calls
binned = len(bins) < len(series)
if binned:
    st.caption(tr(f"{len(series):,} calls in {len(bins)} bins, stacked by role: each point is the mean of "
                  f"{bins[0].last - bins[0].first + 1} consecutive calls; hover for the calls and their smallest and "
                  "largest count.",
                  f"{len(series):,} 次调用分成 {len(bins)} 组，按角色堆叠：每个点是连续 {bins[0].last - bins[0].first + 1} "
                  "次调用的平均值；悬停可看调用范围和最小、最大值。"))
# numpy arrays: plotly validates and copies them whole (a list is walked value by value on every rerun) and
# sends them as typed arrays
x = np.asarray([b.middle if binned else b.first for b in bins])
hover = np.asarray([[b.first, b.last, b.estimated_min, b.estimated_max] for b in bins])
template = ("calls %{customdata[0]}–%{customdata[1]}: mean %{y:,.0f} tokens<br>whole request %{customdata[2]:,}–"
            "%{customdata[3]:,}<extra>%{fullData.name}</extra>") if binned else None
fig = go.Figure()
present = {p for b in bins for p in b.by_role}
for part in [p for p in PART_COLORS if p in present or p in services.ROLE_PARTS]:
    en, zh = PART_LABELS[part]
    y = np.asarray([b.by_role.get(part, 0) for b in bins])
    if binned:      # 500 bins: one stacked area per role (one SVG path), not 500 bars (the browser drew 2,500 rects)
        fig.add_scatter(x=x, y=y, name=tr(en, zh), stackgroup="roles", mode="lines", line={"width": 0.5},
                        line_color=PART_COLORS[part], fillcolor=PART_COLORS[part], customdata=hover,
                        hovertemplate=template)
    else:
        fig.add_bar(x=x, y=y, name=tr(en, zh), marker_color=PART_COLORS[part])
window = max(t.context_window for t in series)
peak = max(t.estimated for t in series)
show_window = st.toggle(tr(f"Scale to the context window ({window:,} tokens)",
                           f"按上下文窗口缩放（{window:,} tokens）"), value=peak > window * 0.25, key="scale_window")
fig.add_scatter(x=x, y=np.asarray([b.context_window for b in bins]), mode="lines",
                name=tr("context window", "上下文窗口"), line=dict(color="#dc2626", dash="dash"),
                visible=True if show_window else "legendonly")
fig.update_layout(barmode="stack", height=380, margin=dict(t=10, b=10), bargap=0 if binned else None,
                  legend=dict(orientation="h", y=-0.2, traceorder="normal"),
                  xaxis_title=tr("call", "调用"), yaxis_title="tokens")
st.plotly_chart(fig, key="chart_roles")

# --- 2. cumulative tokens and cost ------------------------------------------
left, right = st.columns(2)
with left:
    st.subheader(tr("Cumulative tokens and cost", "累计 tokens 与费用"))
    st.caption(tr("Memory re-sent on every call makes the total grow quadratically.",
                  "每次调用都重发记忆，总量呈平方增长。"))
    options = services.price_options()
    own = services.pricing(loaded)
    price_model = st.selectbox(
        tr("Price as", "计价模型"), list(options), index=list(options).index(own.facts.name), key="price_model",
        format_func=lambda m: f"{m}  (${options[m].input_price:.2f} / ${options[m].output_price:.2f} per 1M in / out)",
        help=tr("What this conversation costs at that model's list prices. A trace whose own model has no price "
                "(the demo model, a local model) starts priced as a default model, named beside the cost.",
                "按该模型的公开价格计算这段对话的费用。模型本身没有价格的 trace（演示模型、本地模型）"
                "先按默认模型计价，费用旁会写明。"))
    # Picking the default again is no override: the label keeps saying "list price" for the trace's own model.
    price = services.pricing(loaded, None if price_model == own.facts.name else price_model)
    cumulative = services.cumulative(loaded, price)
    cost_slot.metric(tr("Estimated cost", "估算费用"), f"${cumulative[-1]['cumulative_cost_usd']:.4f}",
                     delta=tr(price.label, services.price_label_zh(price.label)), delta_color="off", delta_arrow="off",
                     help=tr("Reported prompt and completion tokens (estimated where not reported) at the list prices "
                             "of the model named below the cost.",
                             "按费用下方所列模型的公开价格计算上报的输入与输出 tokens（未上报时用估算值）。"))
    cum = pd.DataFrame(services.sample_rows(cumulative))   # running totals: exact at every call drawn
    fig2 = go.Figure()
    fig2.add_scatter(x=cum["call"].to_numpy(), y=cum["cumulative_prompt_tokens"].to_numpy(),
                     mode="lines" if binned else "lines+markers",     # no 500 markers on a long trace
                     name=tr("cumulative prompt tokens", "累计输入 tokens"), line=dict(color="#4f46e5"))
    fig2.add_scatter(x=cum["call"].to_numpy(), y=cum["cumulative_cost_usd"].to_numpy(), mode="lines",
                     name=tr(f"cumulative cost (USD, {price.label})", f"累计费用（美元，{services.price_label_zh(price.label)}）"),
                     yaxis="y2",
                     line=dict(color="#059669"))
    fig2.update_layout(height=320, margin=dict(t=10, b=10), legend=dict(orientation="h", y=-0.25),
                       yaxis=dict(title="tokens", rangemode="tozero"),
                       yaxis2=dict(title="USD", overlaying="y", side="right", rangemode="tozero"),
                       xaxis_title=tr("call", "调用"))
    st.plotly_chart(fig2, key="chart_cumulative")

# --- 3. estimated vs reported -----------------------------------------------
with right:
    st.subheader(tr("Estimated vs reported", "估算与上报"))
    st.caption(tr("A reported count far below the estimate means the provider silently truncated the prompt.",
                  "上报值远低于估算值，说明服务商悄悄截断了输入。"))
    fig3 = go.Figure()
    fig3.add_scatter(x=x, y=np.asarray([b.estimated_mean for b in bins]), mode="lines" if binned else "lines+markers",
                     name=tr("estimated", "估算"), line=dict(color="#4f46e5"),
                     customdata=hover if binned else None, hovertemplate=template)
    shown = [(xi, b) for xi, b in zip(x, bins) if b.reported_mean is not None]
    fig3.add_scatter(x=np.asarray([xi for xi, _ in shown]), y=np.asarray([b.reported_mean for _, b in shown]),
                     mode="lines" if binned else "markers",
                     name=tr(f"reported ({reported_field})", f"上报（{reported_field}）"),
                     marker=dict(color="#d97706", size=9, symbol="diamond"), line=dict(color="#d97706"))
    fig3.update_layout(height=320, margin=dict(t=10, b=10), legend=dict(orientation="h", y=-0.25),
                       yaxis=dict(title="prompt tokens", rangemode="tozero"), xaxis_title=tr("call", "调用"))
    st.plotly_chart(fig3, key="chart_reported")
if suspects:
    st.warning(tr(f"Reported prompt tokens are under half the estimate on calls {', '.join(map(str, suspects[:20]))}: "
                  "the prompt was probably truncated.",
                  f"第 {', '.join(map(str, suspects[:20]))} 次调用上报的输入 tokens 不到估算值的一半：输入很可能被截断了。"),
               icon=":material/content_cut:")
elif not reported:
    st.caption(tr("No call reported usage.", "没有调用上报 usage。"))

# --- 4. the heaviest messages -----------------------------------------------
st.subheader(tr("Largest messages", "最大的消息"))
big = services.largest_messages(loaded, 10)
st.dataframe(pd.DataFrame([{"tokens": b.tokens, "role": b.role, "first call": b.first_call, "#": b.index,
                            "sent in calls": b.calls, "paid tokens": b.tokens * b.calls, "preview": b.preview}
                           for b in big]), hide_index=True, key="largest")
