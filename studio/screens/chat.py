"""Chat: talk to the agent live (demo model or a configured endpoint); the trace opens in the other pages."""
from __future__ import annotations

import os

import streamlit as st

from studio import services
from studio.components import state
from studio.components.i18n import tr
from studio.components.messages import tool_call_cards

SESSION_KEY = "chat_session"
LOG_KEY = "chat_log"

st.title(tr("Chat", "对话"))
st.caption(tr("Every call is recorded; the trace opens in the other pages as it grows.",
              "每次调用都会被录制；trace 随对话增长，可在其他页面查看。"))
session = st.session_state.get(SESSION_KEY)

with st.expander(tr("Endpoint and memory", "接口与记忆"), expanded=session is None, icon=":material/tune:"):
    c1, c2 = st.columns(2)
    model = c1.text_input(tr("Model", "模型"), value=os.environ.get("CHAIN_STUDIO_MODEL", ""),
                          placeholder="chain-studio-demo-model", key="chat_model")
    base_url = c2.text_input(tr("Base URL", "Base URL"), value=os.environ.get("OPENAI_BASE_URL", ""),
                             placeholder=tr("empty = bundled demo model", "留空 = 内置演示模型"), key="chat_base")
    env_key = bool(os.environ.get("OPENAI_API_KEY"))
    # The key stays in this widget and the session object: never in a trace, a file or on screen.
    api_key = st.text_input(tr("API key", "API 密钥"), type="password", key="chat_key",
                            placeholder=tr("from $OPENAI_API_KEY" if env_key else "not needed for the demo model",
                                           "来自 $OPENAI_API_KEY" if env_key else "演示模型不需要"))
    c3, c4 = st.columns(2)
    policies = services.chat_policies()
    policy = c3.selectbox(tr("Trim policy", "截断策略"), policies, key="chat_policy",
                          index=policies.index("max-messages") if "max-messages" in policies else 0)
    max_messages = c4.number_input("max_messages", min_value=2, max_value=1000, value=40, step=1,
                                   key="chat_max_messages")
    wire_api = st.segmented_control(tr("Wire API", "接口协议"), ["chat-completions", "responses"],
                                    default="chat-completions", key="chat_api",
                                    help=tr("Chat Completions (POST /chat/completions) or the Responses API "
                                            "(POST /responses): the same agent, another request shape.",
                                            "Chat Completions 或 Responses API：同一个智能体，不同的请求格式。"))
    server_state = wire_api == "responses" and st.toggle(
        tr("Server keeps the conversation (previous_response_id)", "由服务器保存对话（previous_response_id）"),
        key="chat_server_state",
        help=tr("Each call sends only the new items and names the last response: the trim policy above then no "
                "longer changes what the model sees.",
                "每次调用只发送新的条目并指向上一个响应：上面的截断策略不再改变模型看到的内容。"))
    restart = st.button(tr("Start a new conversation with these settings", "用这些设置开始新对话"),
                        key="chat_start", type="primary", icon=":material/restart_alt:")


def _start():
    try:
        return services.start_chat(model, base_url, api_key, policy, int(max_messages), wire_api or "chat-completions",
                                   server_state=bool(server_state))
    except Exception as err:  # an endpoint the user typed can fail in many ways; one sentence is enough
        st.error(tr(f"Could not start the chat: {type(err).__name__}.", f"无法开始对话：{type(err).__name__}。"),
                 icon=":material/error:")
        st.stop()


if restart:
    if session is not None:
        session.close()
    session = st.session_state[SESSION_KEY] = _start()
    st.session_state[LOG_KEY] = []

prompt = st.chat_input(tr("Ask about the weather, the time, or some arithmetic…", "问问天气、时间或算术……"),
                       key="chat_input")
if prompt and session is None:
    # Started on the first message, so merely visiting the page records nothing.
    session = st.session_state[SESSION_KEY] = _start()
    st.session_state[LOG_KEY] = []

if session is None:
    st.info(tr("Type a message below to start. With no base URL and no key, the bundled demo model answers "
               "(it knows get_weather, get_time and calculate).",
               "在下方输入消息即可开始。没有 Base URL 和密钥时，由内置演示模型回答（它会用 get_weather、get_time 和 "
               "calculate）。"), icon=":material/chat:")
    st.stop()

with st.container(horizontal=True, vertical_alignment="center"):
    st.badge(tr("demo model", "演示模型") if session.endpoint.is_demo else tr("configured endpoint", "已配置的接口"),
             icon=":material/smart_toy:", color="green" if session.endpoint.is_demo else "blue")
    st.text(session.describe())
    if st.button("/clear", key="chat_clear", icon=":material/delete_sweep:",
                 help=tr("Forget the conversation, keep the system prompt.", "清空对话，保留系统提示词。")):
        note = services.chat_send(session, "/clear")
        st.session_state[LOG_KEY].append(("note", note, len(services.chat_transcript(session))))

if prompt:
    reply = services.chat_send(session, prompt)
    if services.chat_reply_is_error(reply):
        st.session_state[LOG_KEY].append(("note", reply, len(services.chat_transcript(session))))
    state.add_source(services.chat_source(session), call=-1)  # the other pages open on the latest call
    st.rerun()

# The conversation as recorded (the trace's stream): the assistant's tool calls and the tool results too,
# not only the final texts. Endpoint errors and /clear notes come from the session log.
transcript = services.chat_transcript(session)
_, answered = services.tool_links(transcript)
for m in transcript:
    role = m.get("role")
    if role == "system":
        continue
    with st.chat_message("user" if role == "user" else "assistant",
                         avatar=":material/build:" if role == "tool" else None):
        if role == "tool":
            st.caption(tr(f"tool result for {m.get('tool_call_id')}", f"工具结果（{m.get('tool_call_id')}）"))
            st.code(services.content_text(m.get("content")), language=None, wrap_lines=True)
            continue
        text = services.content_text(m.get("content"))
        if text:
            st.text(text)
        if m.get("tool_calls"):
            tool_call_cards(m, answered)
# An endpoint error (or /clear) right after the last recorded message: one line in an assistant bubble.
for _, text, at in st.session_state.get(LOG_KEY, [])[-1:]:
    if at == len(transcript):
        with st.chat_message("assistant"):
            st.text(text)

payload = services.chat_history(session)
st.caption(tr(f"Memory: {len(payload)} message(s). Recording to {session.writer.path.name}; it is the open trace, "
              "see Timeline, Tokens and Lint.",
              f"记忆：{len(payload)} 条消息。正在录制到 {session.writer.path.name}；它已是当前 trace，"
              "可在时间线、Tokens、检查页面查看。"))
