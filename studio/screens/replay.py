"""Replay: the open trace under two or more trim policies side by side, and why facts were forgotten."""
from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import streamlit as st

from studio import replay_services as rs
from studio import replay_worker, services, warmup
from studio.components import state
from studio.components.i18n import lang, tr
from studio.components.messages import finding_badges, finding_box, role_badge
from studio.components.notes import sampled_note
from studio.components.responses import responses_replay_table
from studio.components.safe import md_escape

loaded = state.require_trace()
st.title(tr("Replay", "重放"))
st.caption(tr("Rebuild every call's payload under another trim policy: what the model would have seen, whether the "
              "API would accept it, what it would cost, and when each fact fell out.",
              "用另一种裁剪策略重建每次调用的请求：模型会看到什么、API 是否接受、花费多少、每个事实何时丢失。"))

if rs.responses_replay(loaded, 1) is not None:      # Responses API calls: replayed by item groups, then stop
    window = st.number_input(tr("Context window for openai-truncation-auto (tokens)", "openai-truncation-auto 的上下文窗口（tokens）"),
                             min_value=1, value=128_000, step=1000, key="replay_responses_window")
    rows = rs.responses_replay(loaded, int(window))
    price = rs.pricing(loaded)
    responses_replay_table(rows, rs.responses_costs(rows, price), tr(price.label, services.price_label_zh(price.label)))
    sampled_note(loaded)
    st.stop()

# --- policies, probes, prices -------------------------------------------------
n_cols = st.segmented_control(tr("Policies side by side", "并排比较的策略数"), rs.COLUMNS, default=rs.DEFAULT_COLUMNS,
                              key="replay_n", required=True)
starts = rs.DEFAULT_POLICIES     # a big trace was replayed under these ahead of this page (studio/warmup.py)
specs: list[rs.PolicySpec] = []
for i, col in enumerate(st.columns(n_cols)):
    with col, st.container(border=True):
        name = st.selectbox(tr("Policy", "策略"), rs.POLICY_NAMES, index=rs.POLICY_NAMES.index(starts[i]),
                            key=f"replay_policy_{i}")
        params = {}
        for p in rs.policy_form(name):     # widgets, defaults and help all come from the policy's config
            wkey = f"replay_{i}_{name}_{p.name}"
            if p.choices is not None:
                options = ([None] if p.optional else []) + list(p.choices)
                params[p.name] = st.selectbox(p.name, options, index=options.index(p.default), key=wkey, help=p.help,
                                              format_func=lambda v: "none" if v is None else str(v))
            elif p.kind is bool:
                params[p.name] = st.checkbox(p.name, value=bool(p.default), key=wkey, help=p.help)
            elif p.kind is int:
                params[p.name] = st.number_input(p.name, min_value=0, value=p.default, step=1, key=wkey, help=p.help,
                                                 placeholder=tr("default", "默认") if p.optional else None)
            else:
                params[p.name] = st.text_input(p.name, value=p.default or "", key=wkey, help=p.help)
        specs.append(rs.spec(name, params))

left, right = st.columns([3, 2])
with left:
    probe_text = st.text_area(
        tr("Fact probes (one per line; re:PATTERN for a regex)", "事实探针（每行一个；re:PATTERN 表示正则）"),
        value="\n".join(rs.proposed_probes(loaded)), key=f"replay_probes_{loaded.digest[:12]}", height=110,
        help=tr("Proposed from the early user turns: names, ids, e-mails, phone numbers, numbers.",
                "根据前几轮用户消息自动提出：姓名、编号、邮箱、电话、数字。"))
with right:
    own = rs.pricing(loaded)
    picked = st.selectbox(
        tr("Price as", "按此模型计价"), rs.PRICE_CHOICES, index=rs.PRICE_CHOICES.index(own.facts.name),
        key=f"replay_price_as_{loaded.digest[:12]}",
        help=tr("Costs are this model's list price per 1M input tokens. A trace of a model without a price "
                "(the bundled demo model) is priced as the model picked here.",
                "费用按该模型每百万输入 token 的标价计算。没有价格的模型（如内置演示模型）按这里选择的模型计价。"))
price_as = None if picked == own.facts.name else picked
rs.show_columns(loaded, specs, price_as, state.profile())

try:
    probes = rs.parse_probes(probe_text.splitlines())
except rs.ReplayError as err:
    st.error(md_escape(str(err)), icon=":material/error:")
    st.stop()

def replays() -> list:
    """The page's replays, computed on the first ask (a big trace's first view may come from the replay worker).

    Kept by ``replay_services`` (``_KEPT``), never in a name of this page: a page run's names outlive the run when a
    computation froze them (``core/heap.py``), and would keep a 25,000-call replay the server dropped."""
    profile = state.profile()
    n_calls = len(loaded.trace.calls)
    out = []
    try:
        if all(rs.replayed(loaded, s, price_as, profile) for s in specs):
            return [rs.replay(loaded, s, price_as, profile) for s in specs]
        bar = st.empty() if n_calls >= rs.PROGRESS_CALLS else None
        with st.spinner(tr("Replaying…", "重放中…")):
            for i, s in enumerate(specs):
                if bar is not None:
                    bar.progress(i / len(specs), text=tr(f"Replaying {n_calls:,} calls under {s.name} ({i + 1} of {len(specs)}) …",
                                                         f"正在按 {s.name} 重放 {n_calls:,} 次调用（{i + 1} / {len(specs)}）…"))
                out.append(rs.replay(loaded, s, price_as, profile))
        if bar is not None:
            bar.empty()
    except rs.ReplayError as err:
        st.error(md_escape(str(err)), icon=":material/error:")
        st.stop()
    return out


# a big trace's untouched form: the view its replay worker computed (studio/replay_worker.py), waited for with a bar
# saying how far it has got (a worker process tells nothing: a spinner)
if replay_worker.running(loaded.digest, state.profile()) and \
        replay_worker.ahead_form(loaded, specs, price_as, probe_text):
    bar, names = st.empty(), [s.name for s in specs]
    while (at := replay_worker.progress(loaded, state.profile(), names)) is not None:
        bar.progress(at[0], text=tr(at[1], at[2]))
        replay_worker.wait(loaded.digest, state.profile(), replay_worker.PROGRESS_POLL_S)
    bar.empty()
    with st.spinner(tr(f"Replaying {len(loaded.trace.calls):,} calls in a background process…",
                       f"正在后台进程中重放 {len(loaded.trace.calls):,} 次调用…")):
        view = replay_worker.ahead_view(loaded, specs, price_as, state.profile(), probe_text)
else:
    view = replay_worker.ahead_view(loaded, specs, price_as, state.profile(), probe_text)
failed = replay_worker.failure(loaded.digest, state.profile())
if failed:
    st.warning(tr("The background replay failed, so this page replays the trace itself: ",
                  "后台重放失败，本页自行重放：") + md_escape(failed), icon=":material/warning:")
ahead = view is not None and not (probes and view.story_list(lang()) is None)
warmup.shown_ahead(loaded.digest, state.profile(), ahead)    # its columns are replayed here once the pages are quiet
if not ahead:
    view = rs.page_view(loaded, replays(), probes, lang())
if view is None:
    st.info(tr("This trace has no chat calls to replay.", "这个 trace 没有可重放的对话调用。"), icon=":material/info:")
    st.stop()

# --- totals -----------------------------------------------------------------------
for col, t in zip(st.columns(len(view.columns)), view.columns):
    with col:
        st.text(t["label"])
        # Three metrics side by side fit two policies; with 3-4 they are stacked, so values are not cut to "$0.…".
        c1, c2, c3 = st.columns(3) if len(view.columns) <= 2 else (st.container(), st.container(), st.container())
        d_tokens = t["tokens"] - t["recorded_tokens"]
        d_cost = t["cost_usd"] - t["recorded_cost_usd"]
        c1.metric(tr("Prompt tokens", "输入 tokens"), f"{t['tokens']:,}",
                  delta=f"{d_tokens:+,}" if d_tokens else None, delta_color="inverse",
                  help=tr("Change against the recorded payloads.", "与实际发送的请求相比的变化。"))
        c2.metric(tr("Est. cost", "估算费用"), f"${t['cost_usd']:.4f}",
                  delta=f"{d_cost:+.4f}" if round(d_cost, 4) else None, delta_color="inverse")
        c3.metric(tr("Rejected calls", "会被拒绝的调用"), f"{t['rejected']}")
        st.caption(tr(f"Est. cost: {t['price']}", f"估算费用：{services.price_label_zh(t['price'])}"))
sampled_note(loaded)     # once, under every policy's totals
st.caption(tr(*services.profile_note(state.profile(), services.default_profile(loaded), state.profile_chosen())))

# --- charts -----------------------------------------------------------------------
st.subheader(tr("Prompt tokens per call", "每次调用的输入 tokens"))
fig = go.Figure()
n_base = view.chart["calls"]
if n_base > rs.HEATMAP_COLUMNS:
    st.caption(tr(f"{n_base:,} calls: each point is the mean of consecutive calls (at most "
                  f"{rs.HEATMAP_COLUMNS} points a line).",
                  f"{n_base:,} 次调用：每个点是连续若干次调用的平均值（每条线最多 {rs.HEATMAP_COLUMNS} 个点）。"))
# Policies that keep the same payloads draw the same line: each next one thinner and dashed on top, and the
# recorded line dotted over them all (first in the legend), so none hides another.
for i, line in enumerate(view.chart["lines"]):
    xs, ys = line["line"]
    fig.add_scatter(x=np.asarray(xs), y=np.asarray(ys), mode="lines", name=line["label"],
                    line=dict(width=max(1.5, 4.5 - 1.5 * i), dash=("solid", "dash", "dashdot", "longdash")[i % 4]))
    if line["rejected"] is not None:
        xs, ys = line["rejected"]
        fig.add_scatter(x=np.asarray(xs), y=np.asarray(ys), mode="markers",
                        name=tr(f"rejected · {line['policy']}", f"会被拒绝 · {line['policy']}"),
                        marker=dict(symbol="x", size=9, color="#dc2626"))
xs, ys = view.chart["recorded"]
fig.add_scatter(x=np.asarray(xs), y=np.asarray(ys), mode="lines", name=tr("recorded", "实际记录"), legendrank=1,
                line=dict(color="#111827", dash="dot", width=2))
# calls are whole numbers: no 0.5 ticks on a short trace
call_axis = dict(tickmode="linear", tick0=0, dtick=max(1, -(-n_base // 12)))
fig.update_layout(height=340, margin=dict(t=10, b=10), legend=dict(orientation="h", y=-0.25),
                  xaxis=dict(title=tr("call", "调用"), **call_axis), yaxis_title="tokens")
st.plotly_chart(fig, key="replay_tokens")

if probes:
    st.subheader(tr("Fact retention", "事实保留情况"))
    hm = view.heatmap      # at most one column per screen pixel or so; exact calls on hover
    labels = view.heatmap_labels(lang())
    if hm["binned"]:
        st.caption(tr("Each column is a run of consecutive calls: pale where the fact was missing from some of them; "
                      "hover for the calls and the first one without it.",
                      "每一列是连续的若干次调用：只要其中有调用缺少该事实，颜色就变浅；悬停可看调用范围和第一次缺少它的调用。"))
    heat = go.Figure(go.Heatmap(      # numpy: validated and sent whole, not value by value (rows x 600 x 4 hovers)
        z=np.asarray(hm["z"], dtype=float), x=np.asarray(hm["x"]), y=labels, zmin=0, zmax=1, showscale=False,
        xgap=0 if hm["binned"] else 1, ygap=2,
        colorscale=[[0, "#fee2e2"], [0.999, "#fde68a"], [1, "#16a34a"]] if hm["binned"] else
        [[0, "#fee2e2"], [1, "#16a34a"]], customdata=np.asarray(hm["hover"]),
        hovertemplate=tr("calls %{customdata[0]}–%{customdata[1]}<br>%{y}<br>present in %{customdata[2]} of them; "
                         "first without it: %{customdata[3]}<extra></extra>",
                         "调用 %{customdata[0]}–%{customdata[1]}<br>%{y}<br>其中 %{customdata[2]} 次带着它；"
                         "第一次缺少它：%{customdata[3]}<extra></extra>") if hm["binned"] else
        tr("call %{x}<br>%{y}<br>present=%{z}<extra></extra>", "调用 %{x}<br>%{y}<br>在场=%{z}<extra></extra>")))
    heat.update_layout(height=80 + 28 * len(labels), margin=dict(t=10, b=10, l=10),
                       xaxis=dict(title=tr("call", "调用"), **(call_axis if not hm["binned"] else {})),
                       yaxis=dict(autorange="reversed"))
    st.plotly_chart(heat, key="replay_heatmap")
    st.subheader(tr("Why did it forget?", "为什么忘了？"))
    for n_story, story in enumerate(view.story_list(lang())):
        with st.container(border=True):
            st.badge(tr("fact", "事实"), icon=":material/search:", color="blue")
            st.text(story.fact)
            for n_out, out in enumerate(story.outcomes):
                with st.container(horizontal=True, gap="small", vertical_alignment="center"):
                    st.badge(", ".join(out.sources) if len(", ".join(out.sources)) < 80 else
                             tr(f"{len(out.sources)} sources", f"{len(out.sources)} 个来源"),
                             icon=":material/content_cut:" if out.forgotten else ":material/check:",
                             color="red" if out.forgotten else "green")
                st.text(f"• {out.text}")
                if out.calls:
                    with st.container(horizontal=True, gap="small"):
                        for c in dict.fromkeys(out.calls):
                            if st.button(tr(f"call {c}", f"第 {c} 次调用"), key=f"why_{n_story}_{n_out}_{c}",
                                         type="tertiary", icon=":material/timeline:"):
                                state.jump("screens/timeline.py", loaded, c)
else:
    st.caption(tr("No probes: add a fact to track above.", "没有探针：请在上方添加要追踪的事实。"))

# --- one call: recorded vs replayed -------------------------------------------------
st.subheader(tr("One call, recorded vs replayed", "单次调用：实际记录与重放对比"))
indexes = view.indexes
if len(indexes) <= 1000:
    call = st.selectbox(tr("Call", "调用"), indexes, index=len(indexes) - 1, key="replay_call")
else:   # 25,000 options would all be sent to the browser
    call = st.number_input(tr("Call", "调用"), min_value=indexes[0], max_value=indexes[-1], value=indexes[-1], step=1,
                           key="replay_call_number")
    call = call if call in set(indexes) else min(indexes, key=lambda i: abs(i - call))
details = view.detail if call == view.call else rs.call_details(loaded, replays(), call)
for i, (col, t, d) in enumerate(zip(st.columns(len(view.columns)), view.columns, details)):
    with col, st.container(border=True):
        st.text(t["label"])
        st.caption(tr(f"{d['messages']} messages · {d['tokens']:,} tokens (recorded {d['recorded_tokens']:,})",
                      f"{d['messages']} 条消息 · {d['tokens']:,} tokens（实际 {d['recorded_tokens']:,}）"))
        if d["same"]:
            st.success(tr("Same payload as recorded.", "与实际发送的请求相同。"), icon=":material/check:")
        else:
            st.text(tr(f"kept {d['kept']} · added {d['added_n']} · dropped {d['dropped_n']} vs recorded",
                       f"保留 {d['kept']} · 新增 {d['added_n']} · 删除 {d['dropped_n']}（相对实际记录）"))
            for label, lines in ((tr("only in the replay", "仅在重放中"), d["added"]),
                                 (tr("only in the recorded payload", "仅在实际请求中"), d["dropped"])):
                if lines:
                    st.caption(label)
                    for text in lines:
                        st.text(text)
        if d["introduced"]:
            st.caption(tr("Errors this policy introduces", "该策略引入的错误"))
            for f in d["introduced"]:
                finding_box(f)      # the components render exported findings
        if d["others"]:
            finding_badges(d["others"])
        if d["gone"]:
            gone = st.expander(tr(f"Dropped since the previous call ({d['gone']:,})",
                                  f"自上次调用以来删除（{d['gone']:,}）"),
                               key=f"replay_dropped_{t['policy']}_{i}", on_change="rerun")
            if gone.open is not False:     # lazy, and 50 a page: one call can drop 200,000 messages
                rc = replays()[i].call(call)
                by_id = rs.message_by_id(loaded)
                with gone:
                    pages = -(-len(rc.dropped) // 50) or 1
                    number = st.pagination(pages, key=f"replay_dropped_page_{i}") if pages > 1 else 1
                    for drop in rc.dropped[(number - 1) * 50:number * 50]:
                        m = by_id.get(drop.msg_id)
                        st.text(f"{drop.role} · {drop.policy}: "
                                f"{rs.short(m.to_openai()) if m is not None else drop.msg_id}")
                        st.text(drop.reason)
        payload = st.expander(tr(f"Payload ({d['messages']} messages)", f"请求内容（{d['messages']} 条消息）"),
                              key=f"replay_payload_{t['policy']}_{i}", on_change="rerun")
        if payload.open is not False:      # lazy, and 50 messages a page: a 25,000-call payload is long
            rc = replays()[i].call(call)
            with payload:
                pages = -(-len(rc.messages) // 50) or 1
                number = st.pagination(pages, key=f"replay_payload_page_{i}") if pages > 1 else 1
                for k in range((number - 1) * 50, min(len(rc.messages), number * 50)):
                    m = rc.messages[k]
                    with st.container(horizontal=True, gap="small"):
                        role_badge(m.get("role"))
                        st.text(f"#{k} {rs.short(m, 300)}")

# --- counterfactual -----------------------------------------------------------------
st.subheader(tr("Counterfactual: send the replayed call", "反事实：发送重放后的请求"))
st.caption(tr("Sends the replayed payload to the configured endpoint, or to the bundled demo model when none is "
              "configured, and shows the new answer beside the recorded one.",
              "把重放后的请求发给已配置的服务（未配置时发给内置演示模型），并与实际回答对比。"))
which = st.selectbox(tr("Policy", "策略"), range(len(view.columns)), format_func=lambda i: view.columns[i]["label"],
                     key="replay_resend_policy")
resend_key = (loaded.digest, specs[which], call)
if st.button(tr(f"Re-send call {call}", f"重新发送第 {call} 次调用"), key="replay_resend", icon=":material/send:"):
    try:
        st.session_state["replay_resend_result"] = (resend_key, rs.resend(replays()[which], call))
    except rs.ReplayError as err:
        st.error(md_escape(str(err)))
saved = st.session_state.get("replay_resend_result")
if saved and saved[0] == resend_key:
    answer = saved[1]
    a, b = st.columns(2)
    with a, st.container(border=True):
        st.caption(tr("Recorded answer", "实际回答"))
        recorded = rs.recorded_reply(loaded, call)
        st.text(rs.short(recorded, 2000) if recorded else tr("(no reply recorded)", "（没有记录回答）"))
    with b, st.container(border=True):
        st.caption(tr(f"New answer ({answer.endpoint})", f"新回答（{answer.endpoint}）"))
        if answer.error:
            st.error(tr("The endpoint refused the payload:", "服务拒绝了这个请求："), icon=":material/block:")
            st.text(answer.error)
        else:
            st.text(rs.short(answer.reply or {}, 2000))
