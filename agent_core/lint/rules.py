"""The linter's rule catalogue: stable ids, titles, default severities and explanations.

The studio's rule reference and the docs are generated from ``RULES``; the
provider profiles (``profiles.py``) override the default severity per provider.
"""
from __future__ import annotations

from dataclasses import dataclass

VALID_ROLES = ("system", "developer", "user", "assistant", "tool", "function")


@dataclass(frozen=True)
class RuleInfo:
    """What one rule checks, for the UI and the docs."""

    id: str
    """The stable rule id (``missing-tool-result`` ...)."""
    title: str
    """A short title."""
    severity: str
    """Default severity (the openai profile's): ``error``, ``warning`` or ``info``."""
    explanation: str
    """Why it matters, in two or three plain sentences."""
    fix: str
    """The usual fix, one line."""


def _r(id: str, title: str, severity: str, explanation: str, fix: str) -> tuple[str, RuleInfo]:
    return id, RuleInfo(id, title, severity, explanation, fix)


RULES: dict[str, RuleInfo] = dict([
    _r("missing-tool-result", "Tool call without a result", "error",
       "Every id in an assistant message's tool_calls needs a tool message answering it in the run of tool "
       "messages right after it. A payload that ends on pending tool_calls, or that lost one of several results "
       "(often to history trimming), is rejected.",
       "Add the missing tool result right after the call, or remove the call (repair: placeholder or drop)."),
    _r("orphan-tool", "Tool result without its call", "error",
       "A tool message must sit in the run of tool messages directly after an assistant message with tool_calls. "
       "After a trim cut the call away, or after a user message, the result answers nothing.",
       "Remove the tool message, or restore the assistant message that made the call (repair: drop)."),
    _r("interleaved-message", "Message between a call and its result", "error",
       "A user, system or assistant message stands between an assistant message with tool_calls and a result "
       "that answers it. Results must come immediately after the call.",
       "Move the message after the tool results (repair: move)."),
    _r("unknown-tool-call-id", "Result for a call that is not there", "error",
       "A tool message in the run after an assistant message answers an id that message did not call, for "
       "example a result from an earlier round re-sent.",
       "Fix the tool_call_id to the id of the call it answers, or drop the message."),
    _r("duplicate-tool-call-id", "Duplicate tool call id", "error",
       "One id twice in one tool_calls list, or two tool messages answering one call. Reusing an id in a later "
       "turn is accepted by OpenAI (real gpt-4o does it) but not by providers that count calls and results, "
       "such as Mistral.",
       "Keep one result per call and give every call its own id."),
    _r("missing-tool-call-id", "Missing tool call id", "error",
       "A tool message without tool_call_id (or a tool call without id) cannot be paired.",
       "Set tool_call_id to the id of the call the message answers."),
    _r("invalid-tool-arguments", "Arguments are not a JSON object string", "error",
       "function.arguments must be a string holding a JSON object, exactly as the model produced it. An object "
       "sent unserialised is rejected; a string that is not a JSON object breaks tools and replays.",
       "Send json.dumps(arguments) (and '{}' for no arguments)."),
    _r("empty-tool-calls", "Empty tool_calls list", "error",
       "tool_calls: [] (for example an echo of a parsed completion) is rejected; omit the key instead.",
       "Remove the tool_calls key when there are no calls."),
    _r("null-content", "Content is null where a string is required", "error",
       "System, user and tool messages, and assistant messages without tool calls, need string (or content-part) "
       "content. Some providers (Ollama) also reject null on assistant tool-call messages.",
       'Send the text, or "" when there is none.'),
    _r("invalid-role", "Unknown role", "error",
       "Every message needs a role the API knows: system, developer, user, assistant or tool (function is the "
       "legacy protocol).",
       "Use one of the known roles, or remove the message."),
    _r("invalid-tool-name", "Invalid function name", "error",
       "Function names must match ^[a-zA-Z0-9_-]+$ and not be empty; MCP-style names with '.', '/' or spaces are "
       "rejected, in tool calls and in the tools list alike.",
       "Rename the function with letters, digits, '_' and '-' only (e.g. replace '.' by '_')."),
    _r("tool-call-id-too-long", "Tool call id too long", "error",
       "OpenAI accepts tool call ids of at most 40 characters; ids minted by other providers or gateways are "
       "often longer.",
       "Shorten the id consistently in the call and its result."),
    _r("invalid-tool-call-id", "Tool call id in the wrong form", "error",
       "Some providers require a specific id form: Mistral exactly 9 letters or digits, Anthropic "
       "^[a-zA-Z0-9_-]+$. OpenAI's call_... ids fail Mistral's check.",
       "Rewrite the ids (call and result alike) in the provider's form."),
    _r("malformed-tool-call", "Malformed tool call", "error",
       'A tool_calls entry must be an object {"id", "type": "function", "function": {"name", "arguments"}} on '
       "an assistant message.",
       'Rebuild the entry with id, "type": "function" and a function object.'),
    _r("wrong-type", "Field of the wrong JSON type", "error",
       "A message field holds a JSON type the API does not define for it: a tool_call_id or call id that is an "
       "array or a number, tool_calls that is a number or an object, a role that is an object. The provider "
       "rejects it, and a result whose id is not a string cannot be paired with its call.",
       "Send the field with the JSON type the API defines (see the finding), or remove it."),
    _r("invalid-messages", "No messages", "error",
       "messages must be a non-empty list of message objects.",
       "Send at least one message."),
    _r("empty-tools", "Empty tools list", "warning",
       "tools: [] declares nothing; DeepSeek rejects it (runebookai/tome#87) and other providers' schemas want "
       "at least one tool. Omit the key instead.",
       "Remove the tools key when there are no tools."),
    _r("missing-reasoning-content", "Thinking-mode message without reasoning_content", "error",
       "In DeepSeek's thinking mode (deepseek-reasoner, thinking enabled) every assistant message of a tool loop "
       "must be sent back with its reasoning_content; clients that drop it get HTTP 400. Only the deepseek "
       "profile checks it.",
       "Send each assistant tool-call message back with the reasoning_content the API returned."),
    _r("reasoning-content-in-input", "reasoning_content sent back to a model that rejects it", "error",
       "DeepSeek-R1 (deepseek-reasoner before thinking-mode tool calls) returned HTTP 400 when any input message "
       "carried reasoning_content; its docs state the 400 but not the error body (lint/deepseek.py quotes the "
       "sentence). The opposite of thinking mode (missing-reasoning-content). Only the deepseek-r1 profile checks it.",
       "Remove reasoning_content from every message before sending the history back."),
    _r("results-out-of-order", "Results in another order than the calls", "warning",
       "Parallel results in another order than the calls are fine where results are paired by id (OpenAI), but "
       "servers whose chat template binds results by position (vLLM, Ollama) give each call the wrong result.",
       "Put the tool results in the same order as the tool_calls."),
    _r("legacy-function-call", "Legacy function_call protocol", "warning",
       "role 'function' and function_call belong to the deprecated functions API: no ids, so results cannot be "
       "paired, and newer models and several providers reject it.",
       "Convert to tool_calls / role 'tool' (importers.convert_legacy)."),
    _r("undeclared-tool", "Call to a tool the request does not declare", "warning",
       "The history calls a function the request's tools do not list; the model may invent calls to it or "
       "ignore the history.",
       "Declare the tool in tools, or drop the calls to it."),
    _r("tools-missing-for-history", "Tool history but no tools", "info",
       "The history holds tool calls but the request declares no tools. OpenAI accepts it, and the classic flow "
       "does it on purpose so the model cannot call again; tool_choice \"none\" with the same tools is the "
       "alternative that keeps them declared. Bedrock Converse rejects it (\"The toolConfig field must be defined "
       "when using toolUse and toolResult content blocks.\", langgenius/dify#17545, "
       "aws-samples/bedrock-access-gateway#239, 2026). Anthropic rejected it in 2024 (\"Requests which include "
       "tool_use or tool_result blocks must define tools.\", anthropics/anthropic-sdk-python#494) and accepts it "
       "now (HTTP 200, vercel/ai#17005, 2026), though models answered with empty content (vercel/ai#12379).",
       "Where the provider needs them, send the same tools (with tool_choice \"none\" where supported)."),
    _r("tool-result-outside-user", "Tool result outside a user message", "error",
       "Anthropic Messages: tool_result blocks belong in the user message right after the assistant message whose "
       "tool_use blocks they answer; in an assistant message they are rejected.",
       "Move the tool_result blocks into the next user message."),
    _r("thinking-not-first", "Thinking turn does not start with thinking", "error",
       "Anthropic with extended thinking on: the final assistant turn (the one a tool loop continues) must start "
       "with its thinking or redacted_thinking block, and any assistant message holding thinking must start with "
       "it. Clients that drop or reorder the thinking blocks are rejected.",
       "Send the assistant message back exactly as returned, thinking blocks first."),
    _r("thinking-when-disabled", "Thinking sent with thinking off", "error",
       "Anthropic with thinking off rejects a thinking block in the final assistant turn (for example history "
       "recorded with thinking on, replayed without it).",
       "Enable thinking for the request, or drop the thinking blocks of the final assistant turn."),
    _r("thinking-changed", "Thinking block changed between calls", "error",
       "A thinking block is signed; the signature check fails if the block differs in any way from what the model "
       "returned (edited, re-serialized, reordered, merged, or from another model). Checked against the blocks "
       "this trace showed in earlier responses and requests.",
       "Send thinking blocks back byte-for-byte as the API returned them, or leave them out."),
    _r("empty-text-block", "Empty text block", "error",
       "Anthropic rejects text content blocks with empty text.",
       "Drop the empty text block (or put the text in)."),
    _r("empty-message", "Empty message", "error",
       "Anthropic rejects messages with empty content, except an optional final assistant message (a prefill).",
       "Drop the empty message or give it content."),
    _r("function-call-placement", "Function call turn out of place", "error",
       "Gemini: a model turn with functionCall parts must come right after a user turn or a function response turn "
       "(a history that starts with a call, e.g. after a trim, is rejected).",
       "Trim so the history starts with a user turn; keep call and response turns together."),
    _r("function-response-placement", "Function response turn out of place", "error",
       "Gemini: a turn with functionResponse parts must come right after the model turn that made the calls.",
       "Put the responses right after their call turn, or drop them with their calls."),
    _r("missing-thought-signature", "Function call without its thought signature", "error",
       "Gemini 3: the first functionCall part of each model step in the current turn must be sent back with the "
       "thoughtSignature the API returned (only the first call of a parallel batch carries one).",
       "Send model parts back exactly as returned, thoughtSignature included."),
    _r("conversion-loss", "Lost in conversion to the provider's shape", "warning",
       "To judge a chain with another provider's rules it is converted to that provider's request shape; what the "
       "shape has no place for (a thinking signature in Chat Completions, a redacted thinking block) is listed "
       "here rather than dropped silently. A provider reached this way never sees it.",
       "Keep provider-specific state with the provider that issued it, or accept that the target never sees it."),
    _r("system-not-first", "System message not first", "warning",
       "A system (or developer) message after the conversation started; Mistral and several chat templates "
       "require it first.",
       "Move the system message to the start, or turn it into a user message."),
    _r("user-after-tool", "User message right after tool results", "warning",
       "The assistant never answered the tool results before the next user turn. OpenAI accepts it; Mistral "
       "rejects it (Unexpected role 'user' after role 'tool').",
       "Insert the assistant's answer to the tool results before the user message."),
    # --- the Responses API (lint/responses.py; texts and sources in its TEXTS) ---
    _r("responses-missing-output", "Responses: function_call without output", "error",
       "Responses API: every function_call item in the input (or in the stored chain of previous_response_id) "
       "needs a function_call_output with the same call_id after it. Text: \"No tool output found for function "
       "call call_….\" (CLIProxyAPI#2368; tjardoo/openai-client#124).",
       "Send the function_call_output for the call, or drop the function_call."),
    _r("responses-orphan-output", "Responses: output without its function_call", "error",
       "Responses API: a function_call_output must answer a function_call item before it, in this input or in "
       "the stored chain. Text: \"No tool call found for function call output with call_id call_….\" "
       "(continue#10092; microsoft/vscode#320060).",
       "Send the function_call item before its output (or continue the response that made it)."),
    _r("responses-missing-call-id", "Responses: function_call_output without call_id", "error",
       "Responses API: a function_call_output needs its call_id (openai/codex#42088); an empty one is rejected "
       "as \"Invalid 'input[N].call_id': empty string. …\" (BigPizzaV3/CodexPlusPlus#315).",
       "Set call_id to the call_id of the function_call it answers."),
    _r("responses-reasoning-without-follower", "Responses: reasoning item without its following item", "error",
       "Responses API: a reasoning item must travel with the output item that followed it. Text: \"Item 'rs_…' "
       "of type 'reasoning' was provided without its required following item.\" (continue#8933; vercel/ai#7099).",
       "Send the reasoning item together with the function_call or message that came after it, or drop both."),
    _r("responses-call-without-reasoning", "Responses: function_call without its reasoning item", "error",
       "Responses API: a function_call (with its fc_ id) that a reasoning model returned after a reasoning item "
       "must be sent back with it. Text: \"Item 'fc_…' of type 'function_call' was provided without its required "
       "'reasoning' item: 'rs_…'.\" (cline#12242; continue#10018; langchainjs PR #9082).",
       "Send the reasoning item right before the function_call, or continue with previous_response_id."),
    _r("responses-duplicate-item", "Responses: duplicate item id", "error",
       "Responses API: two items with one id, often history re-sent together with previous_response_id. Text: "
       "\"Duplicate item found with id rs_…. Remove duplicate items from your input and try again.\" "
       "(OpenRouterTeam/ai-sdk-provider#254).",
       "Send only the new items with previous_response_id, or the whole history without it."),
    _r("responses-repeated-history", "Responses: history re-sent after previous_response_id", "warning",
       "Responses API: the request continues a stored response and also re-sends the items that chain already "
       "holds (without ids, so the server accepts it): the model sees them twice and they are billed twice.",
       "With previous_response_id send only the new items."),
])


NATIVE_RULES = frozenset({"tool-result-outside-user", "thinking-not-first", "thinking-when-disabled", "thinking-changed",
                          "empty-text-block", "empty-message", "conversion-loss", "function-call-placement",
                          "function-response-placement", "missing-thought-signature"})
"""Rules only the native checks of other wire APIs (``lint/anthropic.py``, ``lint/gemini.py``) and the conversion
(``lint/native.py``) emit; a Chat Completions payload never triggers them."""


def rules_markdown() -> str:
    """docs/lint.md: the rule catalogue and each profile's severities (a test keeps the file in sync)."""
    from .profiles import PROFILES

    lines = ["# Protocol linter rules", "",
             "Generated by `agent_core.lint.rules.rules_markdown()`; tests fail when this file is out of date.",
             "", "Each finding carries the rule id, severity, call index, message index, the tool call ids, the "
             "native JSON path of the element at fault (`path`: `messages[3].tool_calls[1].id`, "
             "`tools[0].function.name`), a one-line explanation, the selected provider's exact error text (`api_error`, or none when the "
             "provider does not check or its text is not documented) and a fix.", "",
             "| rule | title | default | what it means | fix |", "|---|---|---|---|---|"]
    for r in RULES.values():
        lines.append(f"| `{r.id}` | {r.title} | {r.severity} | {r.explanation} | {r.fix} |")
    names = list(PROFILES)
    lines += ["", "## Severity per provider profile", "",
              "`error` = the provider rejects the request; `warning` = accepted but likely wrong or silently "
              "mis-paired; `info` = accepted and often deliberate, never fails a lint run; `off` = not reported. "
              "`azure` is an alias of `openai`.", "",
              "| rule | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for r in RULES.values():
        lines.append(f"| `{r.id}` | " + " | ".join(PROFILES[n].severity(r.id, default=r.severity) for n in names)
                     + " |")
    variants = sorted({k for p in PROFILES.values() for k in p.severities if ":" in k})
    for v in variants:
        rule = v.split(":")[0]
        lines.append(f"| `{v}` | " + " | ".join(PROFILES[n].severity(rule, v.split(":")[1], RULES[rule].severity)
                                                for n in names) + " |")
    lines += ["", "## Profiles", ""]
    for p in PROFILES.values():
        lines.append(f"- **{p.name}** ({p.title}): {p.note}")
    return "\n".join(lines + _texts_markdown() + _native_markdown()) + "\n"


def _texts_markdown() -> list[str]:
    """Each profile's exact error texts (Chat Completions rules) with their sources; a rejection whose body is not
    documented shows the provider's documented sentence, labelled as documentation."""
    from .deepseek import DOCUMENTED
    from .profiles import PROFILES

    lines = ["", "## Provider texts", "",
             ("The exact text each profile reports per rule (`{n}`, `{ids}` ... are filled in), and where it is quoted "
              "from. A rule a profile rejects without a text here reports no text: it is never invented."), "",
             "| profile | rule | exact text | source |", "|---|---|---|---|"]
    for p in PROFILES.values():
        by_text = {text: p.sources[rule.split(":")[0]] for rule, text in p.templates.items()
                   if rule.split(":")[0] in p.sources}          # a text shared by two rules has one source
        for rule, text in p.templates.items():
            source = p.sources.get(rule) or p.sources.get(rule.split(":")[0]) or by_text.get(text, "")
            lines.append(f"| {p.name} | `{rule}` | {text.replace('|', '&#124;')} | {source} |")
        for (name, rule), (sentence, source) in DOCUMENTED.items():
            if name == p.name:
                lines.append(f"| {p.name} | `{rule}` | no error body documented; the docs say: \"{sentence}\" | "
                             f"{source} |")
    return lines


def _native_markdown() -> list[str]:
    """The native Anthropic Messages and Gemini texts with their sources, and the verdict matrix."""
    from .native_texts import ANTHROPIC_SOURCES, ANTHROPIC_TEXTS, GEMINI_SOURCES, GEMINI_TEXTS

    lines = ["", "## Native wire APIs", "",
             ("A request written for Anthropic Messages (`POST /v1/messages`) or Gemini (`:generateContent`) is "
             "judged on its native body by its own provider's profile (`anthropic`, `gemini`), with these texts and "
             "native locations (`messages[1].content[0]`; Anthropic's texts write `messages.1.content.0`). Any other "
             "profile judges it converted to Chat Completions (`apis/convert.py`); what the conversion cannot carry "
             "is a `conversion-loss` finding, never dropped silently."), ""]
    for title, texts, sources in (("Anthropic Messages", ANTHROPIC_TEXTS, ANTHROPIC_SOURCES),
                                  ("Gemini", GEMINI_TEXTS, GEMINI_SOURCES)):
        lines += [f"### {title}", "", "| rule | exact text | source |", "|---|---|---|"]
        for rule, text in texts.items():
            lines.append(f"| `{rule}` | {text.replace('|', '&#124;')} | {sources.get(rule, '')} |")
        lines.append("")
    lines += ["## The verdict matrix", "",
              ("`chain-studio lint PATH --profile all` prints one line per profile: `accepted`, or the first rejection "
              "(call, native location, rule, the provider's exact text, or a note that the text is not documented). "
              "`--format json` gives `{\"verdicts\": [{\"profile\", \"accepted\", \"rule\", \"text\", \"call\", "
              "\"location\", \"conversion_losses\"}]}`; the exit code is 1 when any profile rejects.")]
    return lines
