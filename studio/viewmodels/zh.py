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
    "wrong-type": (
        "字段的 JSON 类型错误",
        ("消息中的某个字段不是 API 规定的 JSON 类型：例如 tool_call_id 或调用 id 是数组或数字，tool_calls 是数字或对象，"
        "role 是对象。服务商会拒绝这样的请求，而 id 不是字符串的结果也无法与它的调用配对。"),
        "按 API 规定的 JSON 类型发送该字段（见发现项），或删除它。"),
    "reasoning-content-in-input": (
        "把 reasoning_content 发回给拒收它的模型",
        ("DeepSeek-R1（思考模式支持工具调用之前的 deepseek-reasoner）在任何输入消息带有 reasoning_content 时返回 "
        "HTTP 400；文档写明了 400，但没有给出错误正文（lint/deepseek.py 引用的是文档原句）。与思考模式相反"
        "（missing-reasoning-content）。只有 deepseek-r1 配置检查它。"),
        "把历史发回之前，从每条消息中删除 reasoning_content。"),
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
    # Rules of the Anthropic Messages, Gemini and Responses adapters (issues 14 and 19); a rule id the
    # linter of this checkout does not know is never looked up.
    "conversion-loss": (
        "转换到服务商格式时丢失",
        ("为了按另一个服务商的规则检查，链会被转换成该服务商的请求格式；格式里放不下的东西（Chat Completions 中的思考签名、"
        "被隐去的思考块）会列在这里，而不是悄悄丢掉。经由这种方式到达的服务商永远看不到它。"),
        "把服务商特有的状态留给发出它的服务商，或者接受目标服务商看不到它。"),
    "empty-message": (
        "空消息",
        "Anthropic 拒绝 content 为空的消息，只有最后一条可选的 assistant 消息（预填充）例外。",
        "删除空消息，或给它内容。"),
    "empty-text-block": (
        "空文本块",
        "Anthropic 拒绝文本为空的 text 内容块。",
        "删除空文本块（或填入文本）。"),
    "function-call-placement": (
        "函数调用轮次位置不对",
        ("Gemini：带 functionCall 部分的 model 轮次必须紧跟在 user 轮次或函数响应轮次之后（以调用开头的历史，"
        "例如截断之后，会被拒绝）。"),
        "截断时让历史从 user 轮次开始；让调用和响应的轮次待在一起。"),
    "function-response-placement": (
        "函数响应轮次位置不对",
        "Gemini：带 functionResponse 部分的轮次必须紧跟在发起这些调用的 model 轮次之后。",
        "把响应放在它们的调用轮次之后，或者连同调用一起删除。"),
    "missing-thought-signature": (
        "函数调用缺少思考签名",
        ("Gemini 3：当前轮次中每个 model 步骤的第一个 functionCall 部分，必须连同 API 返回的 thoughtSignature 一起发回"
        "（并行调用中只有第一个带签名）。"),
        "把 model 的各部分按返回的原样发回，包括 thoughtSignature。"),
    "responses-call-without-reasoning": (
        "Responses：function_call 缺少它的 reasoning 项",
        ("Responses API：推理模型在 reasoning 项之后返回的 function_call（带 fc_ id）必须与该 reasoning 项一起发回。"
        "报错原文见英文说明（cline#12242；continue#10018；langchainjs PR #9082）。"),
        "在 function_call 之前发送 reasoning 项，或用 previous_response_id 继续。"),
    "responses-duplicate-item": (
        "Responses：重复的项 id",
        ("Responses API：两个项用了同一个 id，常见于带 previous_response_id 的同时又重发了历史"
        "（OpenRouterTeam/ai-sdk-provider#254）。"),
        "带 previous_response_id 时只发送新的项，或者不带它而发送完整历史。"),
    "responses-missing-call-id": (
        "Responses：function_call_output 缺少 call_id",
        ("Responses API：function_call_output 需要 call_id（openai/codex#42088）；空字符串会被拒绝"
        "（BigPizzaV3/CodexPlusPlus#315）。"),
        "把 call_id 设为它所回应的 function_call 的 call_id。"),
    "responses-missing-output": (
        "Responses：function_call 没有输出",
        ("Responses API：输入中（或 previous_response_id 存储的链中）的每个 function_call 项，之后都需要一个 call_id "
        "相同的 function_call_output（CLIProxyAPI#2368；tjardoo/openai-client#124）。"),
        "为这个调用发送 function_call_output，或删除这个 function_call。"),
    "responses-orphan-output": (
        "Responses：输出没有对应的 function_call",
        ("Responses API：function_call_output 必须回应它之前的一个 function_call 项（在本次输入中或存储的链中）"
        "（continue#10092；microsoft/vscode#320060）。"),
        "在输出之前发送对应的 function_call 项（或继续发起该调用的那个 response）。"),
    "responses-reasoning-without-follower": (
        "Responses：reasoning 项缺少紧随其后的项",
        "Responses API：reasoning 项必须和紧随其后的输出项一起发送（continue#8933；vercel/ai#7099）。",
        "把 reasoning 项与其后的 function_call 或 message 一起发送，或者两者都删除。"),
    "responses-repeated-history": (
        "Responses：带 previous_response_id 又重发了历史",
        ("Responses API：请求延续一个已存储的 response，同时又重发了该链已有的项（没有 id，所以服务器接受）："
        "模型会看到两遍，也会被计费两次。"),
        "带 previous_response_id 时只发送新的项。"),
    "thinking-changed": (
        "思考块在两次调用之间被改动",
        ("思考块是签过名的；只要它与模型返回的内容有任何不同（被编辑、重新序列化、重新排序、合并，或来自另一个模型），"
        "签名校验就会失败。对照的是这个 trace 在更早的响应和请求中出现过的块。"),
        "把思考块按 API 返回的字节原样发回，或者不发送它们。"),
    "thinking-not-first": (
        "思考轮次不是以思考块开头",
        ("Anthropic 开启扩展思考时：最后一个 assistant 轮次（工具循环要继续的那个）必须以它的 thinking 或 "
        "redacted_thinking 块开头，任何带思考的 assistant 消息也必须以它开头。丢掉或重排思考块的客户端会被拒绝。"),
        "把 assistant 消息按返回的原样发回，思考块在最前。"),
    "thinking-when-disabled": (
        "关闭思考时发送了思考块",
        "Anthropic 关闭思考时，拒绝最后一个 assistant 轮次中的思考块（例如开启思考时录制的历史，在关闭思考时重放）。",
        "为这个请求开启思考，或删除最后一个 assistant 轮次的思考块。"),
    "tool-result-outside-user": (
        "工具结果不在 user 消息中",
        ("Anthropic Messages：tool_result 块属于紧跟在发出 tool_use 块的 assistant 消息之后的 user 消息；放在 assistant "
        "消息中会被拒绝。"),
        "把 tool_result 块移到下一条 user 消息中。"),
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


_PRICE_LABELS = [(re.compile(r"(.+) list price"), r"\1 标价"), (re.compile(r"priced as (.+)"), r"按 \1 计价")]


def price_label_zh(label: str) -> str:
    """A price label (``core.models.Pricing.label``) in Chinese: "gpt-4o list price" -> "gpt-4o 标价", "priced as
    gpt-4o-mini" -> "按 gpt-4o-mini 计价"; any other text as it is."""
    for pattern, zh in _PRICE_LABELS:
        m = pattern.fullmatch(label)
        if m:
            return m.expand(zh)
    return label
