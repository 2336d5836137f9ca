"""Learn: the Function Calling message flow step by step, then the classic ways to break it."""
from __future__ import annotations

import json

import streamlit as st

from studio import services
from studio.components.i18n import pick, tr
from studio.components.messages import message_card, role_badge

st.title(tr("Learn: how a tool call travels", "学习：一次工具调用的消息流程"))
st.caption(tr("Step through a real exchange with the bundled demo model. Every id and reply below was produced by "
              "it, not typed by hand.",
              "逐步查看与内置演示模型的真实交互。下面的每个 id 和回复都由它生成，而非手写。"))

steps = services.learn_steps()
number = st.pagination(len(steps), key="learn_step", max_visible_pages=len(steps))
step = steps[number - 1]
with st.container(border=True):
    with st.container(horizontal=True, vertical_alignment="center"):
        role_badge(step.role)
        st.subheader(tr(f"Step {number} of {len(steps)}: ", f"第 {number} 步，共 {len(steps)} 步：") + pick(step.title))
    st.write(pick(step.explanation))
    if step.sends:
        st.info(tr(f"The program now sends these {len(step.payload)} messages"
                   + (f" and {len(step.tools or [])} tool definitions" if step.tools else " (no tools this time)")
                   + " to the API.",
                   f"程序现在把这 {len(step.payload)} 条消息"
                   + (f"和 {len(step.tools or [])} 个工具定义" if step.tools else "（这次不带工具）") + "发送给 API。"),
                icon=":material/send:")
    if step.trade_off:
        st.caption(pick(step.trade_off))

left, right = st.columns([3, 2])
with left:
    st.caption(tr("The history after this step", "这一步之后的历史"))
    made, answered = services.tool_links(step.payload)
    for i, m in enumerate(step.payload):
        message_card(i, m, None, [], made, answered, status="added" if i == len(step.payload) - 1 else None,
                     key="learn")
with right:
    st.caption(tr("As JSON", "JSON 形式"))
    st.code(json.dumps(step.payload, ensure_ascii=False, indent=2), language="json", wrap_lines=True)

st.divider()
st.header(tr("Broken variants", "错误示例"))
variants = services.broken_variants()
tabs = st.tabs([pick(v.title) for v in variants])
for tab, v in zip(tabs, variants):
    with tab:
        st.write(pick(v.explanation))
        a, b = st.columns([3, 2])
        with a:
            made, answered = services.tool_links(v.messages)
            for i, m in enumerate(v.messages):
                message_card(i, m, None, [], made, answered, key=f"broken-{v.key}")
        with b:
            if v.error:
                st.error(tr("The API rejects it with HTTP 400:", "API 以 HTTP 400 拒绝："), icon=":material/block:")
                st.code(json.dumps(v.error, ensure_ascii=False, indent=2), language="json", wrap_lines=True)
                if v.rule:
                    st.caption(tr(f"Linter rule: {v.rule}", f"检查规则：{v.rule}"))
            else:
                st.success(tr("The API accepts it (HTTP 200) — and that is the trap.", "API 接受了（HTTP 200）——这正是陷阱。"),
                           icon=":material/check:")
                if v.reply:
                    st.caption(tr("The model answers:", "模型回答："))
                    st.text(v.reply)
