"""Chinese for the sentences agent_core writes in English: rule explanations and fixes, trim reasons.

Translated at the view layer, keyed by rule id or by the reason's fixed
wording, so agent_core stays one language and the CLI's output is unchanged.
A provider's exact error text is never translated (it is what the API
answers); an unknown reason is returned as recorded.
"""
from __future__ import annotations

import re

RULES_ZH: dict[str, tuple[str, str, str]] = {
    # rule id: (title, explanation, fix)
    "missing-tool-result": (
        "工具调用没有结果",
        ("assistant 消息 tool_calls 中的每个 id，都需要紧随其后的一串 tool 消息中有一条回应它。以待处理的 tool_calls "
        "结尾的请求，或者丢了几个结果之一的请求（常因历史截断），会被拒绝。"),
        "在该调用之后补上缺失的工具结果，或删除这个调用（修复：placeholder 或 drop）。"),
    "orphan-tool": (
        "工具结果没有对应的调用",
        ("tool 消息必须位于带 tool_calls 的 assistant 消息之后、紧挨着的那串 tool 消息中。截断把调用删掉之后，"
        "或者中间隔了一条 user 消息，这个结果就不回应任何调用。"),
        "删除这条 tool 消息，或恢复发起调用的 assistant 消息（修复：drop）。"),
    "interleaved-message": (
        "调用与结果之间夹着别的消息",
        ("在带 tool_calls 的 assistant 消息和回应它的结果之间，出现了 user、system 或 assistant 消息。结果必须紧跟在"
        "调用之后。"),
        "把这条消息移到工具结果之后（修复：move）。"),
    "unknown-tool-call-id": (
        "结果回应了不存在的调用",
        "assistant 消息之后的一条 tool 消息回应的 id 不是该消息发起的，例如重复发送了早先一轮的结果。",
        "把 tool_call_id 改成它所回应的调用的 id，或删除这条消息。"),
    "duplicate-tool-call-id": (
        "工具调用 id 重复",
        ("同一个 tool_calls 列表里出现两次同一个 id，或者两条 tool 消息回应同一个调用。在后面的轮次复用 id，OpenAI "
        "接受（真实的 gpt-4o 会这样做），但逐一核对调用和结果的服务商（如 Mistral）不接受。"),
        "每个调用只保留一个结果，并给每个调用一个独立的 id。"),
    "missing-tool-call-id": (
        "缺少工具调用 id",
        "没有 tool_call_id 的 tool 消息（或没有 id 的工具调用）无法配对。",
        "把 tool_call_id 设为该消息所回应的调用的 id。"),
    "invalid-tool-arguments": (
        "参数不是 JSON 对象字符串",
        ("function.arguments 必须是一个装着 JSON 对象的字符串，与模型生成的完全一致。未序列化的对象会被拒绝；"
        "不是 JSON 对象的字符串会让工具和重放出错。"),
        "发送 json.dumps(arguments)（没有参数时发送 '{}'）。"),
    "empty-tool-calls": (
        "tool_calls 为空列表",
        "tool_calls: []（例如把解析后的回复原样发回）会被拒绝；应省略这个键。",
        "没有调用时删除 tool_calls 键。"),
    "null-content": (
        "需要字符串的地方 content 为 null",
        ("system、user、tool 消息以及不带工具调用的 assistant 消息，都需要字符串（或内容分段）形式的 content。"
        "有些服务商（Ollama）连带工具调用的 assistant 消息的 null 也拒绝。"),
        "发送文本；没有文本时发送 \"\"。"),
    "invalid-role": (
        "未知角色",
        "每条消息都需要 API 认识的角色：system、developer、user、assistant 或 tool（function 属于旧协议）。",
        "改用已知的角色，或删除这条消息。"),
    "invalid-tool-name": (
        "函数名不合法",
        ("函数名必须匹配 ^[a-zA-Z0-9_-]+$ 且不能为空；带 '.'、'/' 或空格的 MCP 风格名称会被拒绝，在工具调用和"
        "tools 列表中都一样。"),
        "只用字母、数字、'_' 和 '-' 重新命名函数（例如把 '.' 换成 '_'）。"),
    "tool-call-id-too-long": (
        "工具调用 id 太长",
        "OpenAI 只接受最长 40 个字符的工具调用 id；其他服务商或网关生成的 id 往往更长。",
        "在调用和结果中一致地缩短 id。"),
    "invalid-tool-call-id": (
        "工具调用 id 格式不对",
        ("有些服务商要求特定的 id 格式：Mistral 要求恰好 9 个字母或数字，Anthropic 要求 ^[a-zA-Z0-9_-]+$。"
        "OpenAI 的 call_... 形式的 id 通不过 Mistral 的检查。"),
        "按服务商的格式重写 id（调用和结果一起改）。"),
    "malformed-tool-call": (
        "工具调用格式错误",
        ("tool_calls 中的每一项都必须是 assistant 消息上的对象 {\"id\", \"type\": \"function\", \"function\": "
        "{\"name\", \"arguments\"}}。"),
        "用 id、\"type\": \"function\" 和 function 对象重建这一项。"),
    "invalid-messages": (
        "没有消息",
        "messages 必须是一个非空的消息对象列表。",
        "至少发送一条消息。"),
    "empty-tools": (
        "tools 为空列表",
        ("tools: [] 什么也没声明；DeepSeek 会拒绝它（runebookai/tome#87），其他服务商的 schema 也要求至少一个工具。"
        "应省略这个键。"),
        "没有工具时删除 tools 键。"),
    "missing-reasoning-content": (
        "思考模式的消息缺少 reasoning_content",
        ("在 DeepSeek 的思考模式下（deepseek-reasoner，开启 thinking），工具循环中的每条 assistant 消息都必须连同它的"
        " reasoning_content 一起发回；丢掉它的客户端会收到 HTTP 400。只有 deepseek 配置检查这一条。"),
        "把每条带工具调用的 assistant 消息连同 API 返回的 reasoning_content 一起发回。"),
    "results-out-of-order": (
        "结果的顺序与调用不同",
        ("并行调用的结果顺序与调用顺序不同：按 id 配对的服务商（OpenAI）没问题，但按位置绑定结果的聊天模板"
        "（vLLM、Ollama）会把错误的结果交给每个调用。"),
        "让工具结果的顺序与 tool_calls 一致。"),
    "legacy-function-call": (
        "旧的 function_call 协议",
        ("role 'function' 和 function_call 属于已弃用的 functions API：没有 id，结果无法配对，较新的模型和一些服务商"
        "会拒绝它。"),
        "改用 tool_calls / role 'tool'（importers.convert_legacy）。"),
    "undeclared-tool": (
        "调用了请求中没有声明的工具",
        "历史中调用的函数不在本次请求的 tools 里；模型可能会编造对它的调用，或者忽略这段历史。",
        "在 tools 中声明这个工具，或删除对它的调用。"),
    "tools-missing-for-history": (
        "有工具历史但没有 tools",
        ("历史中有工具调用，但请求没有声明任何工具。OpenAI 接受这种请求，经典流程也是有意这样做，让模型不能再次调用；"
        "另一种做法是保留同样的 tools 并设 tool_choice \"none\"。Bedrock Converse 会拒绝它（\"The toolConfig field "
        "must be defined when using toolUse and toolResult content blocks.\"，langgenius/dify#17545，"
        "aws-samples/bedrock-access-gateway#239，2026）。Anthropic 在 2024 年拒绝它（\"Requests which include "
        "tool_use or tool_result blocks must define tools.\"，anthropics/anthropic-sdk-python#494），现在接受"
        "（HTTP 200，vercel/ai#17005，2026），但模型回答过空内容（vercel/ai#12379）。"),
        "在服务商需要时，发送同样的 tools（支持时加上 tool_choice \"none\"）。"),
    "system-not-first": (
        "system 消息不在最前面",
        "对话开始后又出现 system（或 developer）消息；Mistral 和一些聊天模板要求它在最前面。",
        "把 system 消息移到开头，或改成 user 消息。"),
    "user-after-tool": (
        "工具结果之后直接是 user 消息",
        ("在下一轮用户发言之前，assistant 没有回应工具结果。OpenAI 接受；Mistral 拒绝（Unexpected role 'user' "
        "after role 'tool'）。"),
        "在 user 消息之前插入 assistant 对工具结果的回答。"),
}

SEVERITY_ZH = {"error": "错误", "warning": "警告", "info": "提示"}

# Fixed wordings of the trim policies' and importers' reasons -> Chinese (groups are numbers or names).
_REASONS: list[tuple[re.Pattern, str]] = [
    (re.compile(r"over max_messages=(\d+): dropped the oldest non-system message and the tool results directly "
                r"after it"), r"超过 max_messages=\1：删除了最早的一条非 system 消息，以及紧随其后的工具结果"),
    (re.compile(r"over the token budget (\d+) \(max_tokens=(\d+) - reserve_for_output=(\d+)\)( \(the system "
                r"messages alone exceed it\))?: kept the system messages and the newest (\d+) whole groups "
                r"\((\d+) tokens\)"),
     r"超过 token 预算 \1（max_tokens=\2 - reserve_for_output=\3）：保留 system 消息和最新的 \5 组完整消息（\6 tokens）"),
    (re.compile(r"over max_messages=(\d+): dropped the oldest non-system message, without its tool results or call"),
     r"超过 max_messages=\1：删除了最早的一条非 system 消息，但没有连带它的工具结果或调用"),
    (re.compile(r"more than (\d+) user turns: folded (\d+) older messages into the running summary \((.*)\)"),
     r"超过 \1 轮用户发言：把 \2 条较早的消息折叠进滚动摘要（\3）"),
    (re.compile(r"langchain trim_messages\((.*)\): kept the last (\d+) messages that fit, with no tool-call pairing"),
     r"langchain trim_messages(\1)：保留能放下的最后 \2 条消息，不考虑工具调用配对"),
    (re.compile(r"more than (\d+) user turns: dropped the turns before the last (\d+), cutting at a user message"),
     r"超过 \1 轮用户发言：删除了最后 \2 轮之前的对话，从一条用户消息处切开"),
    (re.compile(r"the user cleared the conversation; system messages kept"), "用户清空了对话；保留 system 消息"),
    (re.compile(r"not in the payload of request (\d+): the app dropped (\d+) message\(s\) \(inferred from "
                r"payloads\)"), r"不在第 \1 个请求中：应用删除了 \2 条消息（由请求内容推断）"),
    (re.compile(r"request (\d+) sent (\d+) earlier message\(s\) changed \((.*); inferred from payloads\)"),
     r"第 \1 个请求发送的 \2 条早先的消息被改动过（\3；由请求内容推断）"),
]


def rule_zh(rule: str) -> tuple[str, str, str] | None:
    """(title, explanation, fix) in Chinese, or None for a rule without a translation."""
    return RULES_ZH.get(rule)


def reason_zh(reason: str) -> str:
    """A trim reason in Chinese; parts joined by a composed policy's "; then " are translated one by one."""
    parts = []
    for part in str(reason).split("; then "):
        name, sep, rest = part.partition(": ")
        head = ""
        if sep and " " not in name and not name.startswith("over"):   # "max-messages: over ..." in a composition
            head, part = name + "：", rest
        for pattern, zh in _REASONS:
            m = pattern.fullmatch(part)
            if m:
                part = m.expand(zh)
                break
        parts.append(head + part)
    return "；然后 ".join(parts)
