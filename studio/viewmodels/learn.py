"""Learn mode: the Function Calling message flow, one message at a time.

The walk-through is generated, not hand-written: the bundled demo model
answers each payload and the bundled tools run, so every id, argument and
reply on screen is what the real flow produces. The broken variants are
checked by the linter, so the error shown is the provider's exact text.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from agent_core.chat.tools import default_tools
from agent_core.serve import demo_model

SYSTEM = "You are a helpful assistant."
FIRST_QUESTION = "I am Ada. Please check the weather in Paris."
SECOND_QUESTION = "What is my name?"


@dataclass(frozen=True)
class LearnStep:
    """One message joining the history, and what it is for."""

    role: str
    """Role of the message this step adds."""
    title: dict[str, str]
    """Short heading by language code (``en``, ``zh``)."""
    explanation: dict[str, str]
    """What the message is for, by language code."""
    payload: list[dict]
    """The whole history after this step (what the next call would send)."""
    sends: bool = False
    """True when the program makes an API call right after this step."""
    tools: list[dict] | None = None
    """The tool definitions sent with that call, if any."""
    trade_off: dict[str, str] | None = None
    """Why the call is sent this way and what the alternative costs, by language code; None when plain."""


# The second call of the classic flow leaves the tools out. The linter notes it under the openai profile
# (rule tools-missing-for-history) and reports an error under bedrock, so the page says why.
_NO_TOOLS_TRADE_OFF = {
    "en": "Why no tools this time: without tool definitions the model cannot ask for another tool, so this call "
          "must end in a text answer. OpenAI accepts a history with tool calls and no tools. Amazon Bedrock "
          "rejects it (\"The toolConfig field must be defined when using toolUse and toolResult content "
          "blocks.\"), and Anthropic rejected it in 2024. The alternative: send the same tools with "
          "tool_choice \"none\" (OpenAI; Anthropic since February 2025) — they stay declared, and the model "
          "still may not call one.",
    "zh": "为什么这次不带工具：没有工具定义，模型就无法再请求工具，这次调用只能以文字回答结束。OpenAI 接受"
          "含有工具调用却不带 tools 的历史；Amazon Bedrock 会拒绝（\"The toolConfig field must be defined when "
          "using toolUse and toolResult content blocks.\"），Anthropic 在 2024 年也曾拒绝。替代做法："
          "带上同样的 tools 并设置 tool_choice \"none\"（OpenAI；Anthropic 自 2025 年 2 月起支持）——工具仍然声明着，"
          "模型也不能调用它们。",
}


@dataclass(frozen=True)
class BrokenVariant:
    """A classic mistake, the payload it produces and what the API says."""

    key: str
    """Stable id (``user-between``, ``orphan-tool``, ``history-not-passed``)."""
    title: dict[str, str]
    """Heading by language code."""
    explanation: dict[str, str]
    """What went wrong, by language code."""
    messages: list[dict]
    """The broken payload."""
    error: dict | None = None
    """The provider's error body (``{"error": {...}}``), or None when the API accepts it."""
    rule: str | None = None
    """The linter rule that catches it."""
    reply: str | None = None
    """For accepted payloads: what the (demo) model answered."""
    notes: list[str] = field(default_factory=list)
    """Extra remarks, if any."""


def _reply(messages: list[dict], tools: list[dict] | None) -> dict:
    body: dict = {"model": demo_model.MODEL_NAME, "messages": messages}
    if tools:
        body["tools"] = tools
    return demo_model.respond(body)["choices"][0]["message"]


def steps() -> list[LearnStep]:
    """The classic flow: system, user, assistant(tool_calls), tool, assistant, then a follow-up turn."""
    registry = default_tools()
    tools = registry.schemas()
    history: list[dict] = [{"role": "system", "content": SYSTEM}]
    out = [LearnStep("system",
                     {"en": "System prompt", "zh": "系统提示词"},
                     {"en": "Sets the assistant's behaviour. Your program sends it first, on every call.",
                      "zh": "设定助手的行为。程序在每次调用时都把它放在最前面发送。"},
                     list(history))]
    history.append({"role": "user", "content": FIRST_QUESTION})
    out.append(LearnStep("user", {"en": "User message", "zh": "用户消息"},
                         {"en": "The user's question. The program now calls the API with the history and the "
                                "tool definitions.",
                          "zh": "用户的问题。程序带着历史消息和工具定义调用 API。"},
                         list(history), sends=True, tools=tools))
    reply = _reply(history, tools)
    call = {"role": "assistant", "content": reply.get("content") or "", "tool_calls": reply.get("tool_calls")}
    history.append(call)
    out.append(LearnStep("assistant", {"en": "Assistant asks for a tool", "zh": "助手请求调用工具"},
                         {"en": "The model does not answer yet: it returns tool_calls, each with an id. The program "
                                "must append this message to the history unchanged.",
                          "zh": "模型还没有回答：它返回 tool_calls，每个都有 id。程序必须把这条消息原样追加到历史中。"},
                         list(history)))
    for tc in call["tool_calls"] or []:
        result = registry.run(tc["function"]["name"], tc["function"]["arguments"])
        history.append({"role": "tool", "tool_call_id": tc["id"], "content": result})
    out.append(LearnStep("tool", {"en": "Tool result", "zh": "工具结果"},
                         {"en": "The program runs the tool and appends one tool message per call, right after the "
                                "assistant message, with the same tool_call_id. Then it calls the API again.",
                          "zh": "程序执行工具，并紧跟在助手消息之后为每个调用追加一条 tool 消息，tool_call_id 必须一致。"
                                "然后再次调用 API。"},
                         list(history), sends=True, trade_off=_NO_TOOLS_TRADE_OFF))
    final = _reply(history, None)
    history.append({"role": "assistant", "content": final.get("content") or ""})
    out.append(LearnStep("assistant", {"en": "Final answer", "zh": "最终回答"},
                         {"en": "The model answers from the tool result. This reply joins the history too.",
                          "zh": "模型根据工具结果作答。这条回复同样加入历史。"},
                         list(history)))
    history.append({"role": "user", "content": SECOND_QUESTION})
    out.append(LearnStep("user", {"en": "Next turn", "zh": "下一轮"},
                         {"en": "The model is stateless: it only knows the name because the whole history is sent "
                                "again.",
                          "zh": "模型本身没有记忆：它之所以知道名字，是因为整个历史又被发送了一次。"},
                         list(history), sends=True, tools=tools))
    answer = _reply(history, tools)
    history.append({"role": "assistant", "content": answer.get("content") or ""})
    out.append(LearnStep("assistant", {"en": "It remembers", "zh": "它记得"},
                         {"en": "Answered from the first user message, which is still in the payload.",
                          "zh": "答案来自第一条用户消息——它仍在请求中。"},
                         list(history)))
    return out


def _rejection(messages: list[dict], tools: list[dict] | None) -> tuple[dict | None, str | None]:
    """The API error for a payload and the rule that catches it, from the linter."""
    from agent_core.lint import scan as lint

    if hasattr(lint, "lint_payload"):
        for f in lint.lint_payload(messages, tools):
            data = f.export() if hasattr(f, "export") else dict(f)
            if data.get("severity") == "error" and data.get("api_error"):
                error = data["api_error"]
                if isinstance(error, dict):
                    return error, data.get("rule")
                # The envelope the provider wraps the text in (OpenAI's shape).
                return {"error": {"message": str(error), "type": "invalid_request_error",
                                  "param": data.get("param"), "code": data.get("code")}}, data.get("rule")
        return None, None
    body = {"model": demo_model.MODEL_NAME, "messages": messages}
    rejection = lint.api_rejection(body)
    if rejection is None:
        return None, None
    text = rejection["error"]["message"]
    return rejection, ("orphan-tool" if "role 'tool'" in text else "missing-tool-result")


def broken_variants() -> list[BrokenVariant]:
    """User message between tool_calls and tool; trimmed head leaving an orphan tool; history not passed."""
    flow = steps()
    full = flow[4].payload  # system, user, assistant(tool_calls), tool, assistant
    system, user, call, tool, final = full
    out = []
    msgs = [system, user, call, {"role": "user", "content": "Hurry up, please."}, tool]
    error, rule = _rejection(msgs, None)
    out.append(BrokenVariant(
        "user-between", {"en": "A user message between tool_calls and the tool result",
                         "zh": "在 tool_calls 与工具结果之间插入了用户消息"},
        {"en": "The user typed while the tool was running and the program appended it at once. The tool results "
               "must directly follow the assistant message that asked for them.",
         "zh": "工具运行期间用户又发了消息，程序立刻把它追加进去。工具结果必须紧跟在请求它们的助手消息之后。"},
        msgs, error, rule))
    msgs = [system, tool, final, {"role": "user", "content": SECOND_QUESTION}]
    error, rule = _rejection(msgs, None)
    out.append(BrokenVariant(
        "orphan-tool", {"en": "Trimmed head: an orphan tool message", "zh": "截断开头：孤立的 tool 消息"},
        {"en": "A naive trim dropped the oldest messages one by one and cut between the assistant's tool_calls and "
               "its result. The tool message now answers nothing.",
         "zh": "简单的截断逐条删除最旧的消息，恰好切在助手的 tool_calls 和结果之间。tool 消息失去了对应的调用。"},
        msgs, error, rule))
    msgs = [system, {"role": "user", "content": SECOND_QUESTION}]
    error, rule = _rejection(msgs, None)
    reply = _reply(msgs, None).get("content")
    out.append(BrokenVariant(
        "history-not-passed", {"en": "History not passed", "zh": "没有传递历史"},
        {"en": "The program sent only the system prompt and the new question. The API accepts it (no error), but "
               "the model cannot know what it was never sent.",
         "zh": "程序只发送了系统提示词和新问题。API 会接受（没有报错），但模型无法知道从未发给它的内容。"},
        msgs, error, rule, reply=reply))
    return out

