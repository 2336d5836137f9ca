"""Provider profiles: how strictly each OpenAI-compatible provider checks a message chain.

A profile maps every lint rule to a severity (``error`` = the provider rejects
the request, ``warning`` = it is accepted but probably wrong or silently
mis-paired, ``info`` = accepted and often deliberate, worth knowing but never a
failure, ``off`` = not reported) and to the provider's own error text.

Severity keys may carry a variant after a colon (``duplicate-tool-call-id:reused``)
for the cases where providers disagree about one part of a rule; the lookup
falls back to the plain rule id.

Every template is quoted from ../shared/design/protocol-errors.md (the ``sources``
table names the entry, e.g. ``O1``). Placeholders in braces are filled by the
linter: ``{n}`` message index, ``{ids}`` comma-separated ids, ``{id}``, ``{i}``/``{j}``
two indexes, ``{k}`` position inside a message, ``{L}`` a length, ``{type}`` a JSON
type name, ``{role}``. A rule with no template means the text is not documented
for that provider: findings then carry ``api_error=None``.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent_core.core.errors import UnknownChoiceError

from .deepseek import R1_DOC_SOURCE, reject_reasoning_input
from .deepseek import RULE as REASONING_IN_INPUT

SEVERITIES = ("error", "warning", "info", "off")
"""Most to least severe; only ``error`` fails a lint run."""


@dataclass(frozen=True)
class Profile:
    """One provider's strictness and wording."""

    name: str
    """Profile id used on the command line (``openai``, ``mistral`` ...)."""
    title: str
    """Human name shown in the studio."""
    severities: dict[str, str] = field(default_factory=dict)
    """rule id (or ``rule:variant``) -> error | warning | info | off; missing rules use the rule's default."""
    templates: dict[str, str] = field(default_factory=dict)
    """rule id (or ``rule:variant``) -> the provider's exact error text with ``{placeholders}``."""
    sources: dict[str, str] = field(default_factory=dict)
    """rule id -> where the text is documented (protocol-errors.md entry or thread)."""
    max_tool_call_id: int | None = None
    """Longest tool call id accepted (OpenAI: 40), None when unchecked."""
    tool_call_id_pattern: str | None = None
    """Regular expression every tool call id must match in full, None when unchecked."""
    index_style: str = "openai"
    """How message indexes are counted in the texts: ``openai`` or ``anthropic`` (turns after translation)."""
    note: str = ""
    """One sentence on what is special about this provider."""
    reasoning_check: Callable[[Any, Any, int], None] | None = None
    """Called by the scan with (scan, entry, index) for every message that carries reasoning_content, for a provider
    with a rule about reasoning sent back (``lint/deepseek.py``); None: the scan does not look."""

    def severity(self, rule: str, variant: str | None = None, default: str = "error") -> str:
        if variant is not None:
            value = self.severities.get(f"{rule}:{variant}")
            if value is not None:
                return value
        return self.severities.get(rule, default)

    def template(self, rule: str, variant: str | None = None) -> str | None:
        if variant is not None and f"{rule}:{variant}" in self.templates:
            return self.templates[f"{rule}:{variant}"]
        return self.templates.get(rule)


# --- OpenAI (and Azure OpenAI, which returns the same texts) -------------------------------------

_OPENAI_MISSING = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                   "'tool_call_id'. The following tool_call_ids did not have response messages: {ids}")
_OPENAI_ORPHAN = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                  "'tool_calls'.")

_OPENAI_TEMPLATES = {
    "missing-tool-result": _OPENAI_MISSING,
    "interleaved-message": _OPENAI_MISSING,
    "orphan-tool": _OPENAI_ORPHAN,
    "unknown-tool-call-id": "Invalid parameter: 'tool_call_id' of '{id}' not found in 'tool_calls' of previous message.",
    "duplicate-tool-call-id": ("Invalid parameter: Duplicate value for 'tool_call_id' of '{id}', in messages[{i}] "
                               "and messages[{j}]."),
    "missing-tool-call-id": "Missing parameter 'tool_call_id': messages with role 'tool' must have a 'tool_call_id'.",
    "missing-tool-call-id:call": "Missing required parameter: 'messages[{n}].tool_calls[{k}].id'.",
    "invalid-tool-arguments": ("Invalid type for 'messages[{n}].tool_calls[{k}].function.arguments': expected a "
                               "string, but got {type} instead."),
    "empty-tool-calls": ("Invalid 'messages[{n}].tool_calls': empty array. Expected an array with minimum length 1, "
                         "but got an empty array instead."),
    "null-content": "Invalid value for 'content': expected a string, got null.",
    "null-content:missing": "Missing required parameter: 'messages[{n}].content'.",
    "invalid-role": ("Invalid value: '{role}'. Supported values are: 'system', 'assistant', 'user', 'function', "
                     "'tool', and 'developer'."),
    "invalid-tool-name": ("Invalid 'messages[{n}].tool_calls[{k}].function.name': string does not match pattern. "
                          "Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'."),
    "invalid-tool-name:empty": ("Invalid 'messages[{n}].tool_calls[{k}].function.name': empty string. Expected a "
                                "string with minimum length 1, but got an empty string instead."),
    "invalid-tool-name:tools": ("Invalid 'tools[{k}].function.name': string does not match pattern. Expected a "
                                "string that matches the pattern '^[a-zA-Z0-9_-]+$'."),
    "tool-call-id-too-long": ("Invalid 'messages[{n}].tool_calls[{k}].id': string too long. Expected a string with "
                              "maximum length 40, but got a string with length {L} instead."),
    "malformed-tool-call": "Missing required parameter: 'messages[{n}].tool_calls[{k}].type'.",
    "invalid-messages": ("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
                         "empty array instead."),
    "legacy-function-call:non-assistant": "Invalid parameter: only messages with role 'assistant' can have a function call.",
}
_OPENAI_SOURCES = {
    "missing-tool-result": "O1", "interleaved-message": "O1", "orphan-tool": "O2", "unknown-tool-call-id": "O3",
    "duplicate-tool-call-id": "O4", "missing-tool-call-id": "O5", "invalid-tool-arguments": "O10",
    "empty-tool-calls": "O6", "null-content": "O8", "invalid-role": "O17 (same wording, Chat Completions role list)",
    "invalid-tool-name": "O11/O12", "tool-call-id-too-long": "O13", "malformed-tool-call": "O14",
    "invalid-messages": "O7", "legacy-function-call": "O16",
}
_OPENAI_SEVERITIES = {
    "duplicate-tool-call-id:reused": "off",        # real gpt-4o reuses ids across turns (tau-bench)
    "null-content:assistant-tool-calls": "off",    # allowed: the tau-bench gpt-4o trace does it
    "user-after-tool": "warning",
    "results-out-of-order": "off",                 # OpenAI pairs by id
    "invalid-tool-call-id": "off",
    "legacy-function-call:non-assistant": "error",
}

# --- the others --------------------------------------------------------------------------------------

_PAIRING = ("missing-tool-result", "orphan-tool", "interleaved-message", "unknown-tool-call-id",
            "duplicate-tool-call-id")


def _lenient_pairing(level: str = "warning") -> dict[str, str]:
    """Servers that pair by position or tool name: broken pairing is accepted and silently mis-bound."""
    return {rule: level for rule in _PAIRING} | {"results-out-of-order": "warning", "missing-tool-call-id": "off",
                                                 "duplicate-tool-call-id:reused": "off", "tool-call-id-too-long": "off",
                                                 "invalid-tool-call-id": "off"}


_DEEPSEEK_MISSING = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                     "'tool_call_id'. (insufficient tool messages following tool_calls message)")
_DASHSCOPE_PREFIX = "<400> InternalError.Algo.InvalidParameter: "
_DASHSCOPE_MISSING = (_DASHSCOPE_PREFIX + 'An assistant message with "tool_calls" must be followed by tool messages '
                      'responding to each "tool_call_id". The following tool_call_ids did not have response '
                      'messages: message[{n}].role')
_MISTRAL_COUNT = "Not the same number of function calls and responses"
_ANTHROPIC_MISSING = ("messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: {ids}. "
                      "Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
_ANTHROPIC_UNEXPECTED = ("messages.{n}.content.{k}: unexpected tool_use_id found in tool_result blocks: {id}. Each "
                         "tool_result block must have a corresponding tool_use block in the previous message.")
_BEDROCK_NO_TOOLS = "The toolConfig field must be defined when using toolUse and toolResult content blocks."
_BEDROCK_COUNT = ("The number of toolResult blocks at messages.{n}.content exceeds the number of toolUse blocks of "
                  "previous turn.")
_BEDROCK_MIXED = "messages.{n}.content: Conversation blocks and tool result blocks cannot be provided in the same turn."
_GEMINI_COUNT = ("Please ensure that the number of function response parts is equal to the number of function call "
                 "parts of the function call turn.")

PROFILES: dict[str, Profile] = {
    "openai": Profile(
        name="openai", title="OpenAI / Azure OpenAI", severities=dict(_OPENAI_SEVERITIES),
        templates=dict(_OPENAI_TEMPLATES), sources=dict(_OPENAI_SOURCES), max_tool_call_id=40,
        note="Pairs results by id; accepts reused ids across turns and a user turn after tool results."),
    "deepseek": Profile(
        name="deepseek", title="DeepSeek",
        severities={"duplicate-tool-call-id:reused": "off", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "warning", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "off", "empty-tools": "error", "missing-reasoning-content": "error"},
        templates={"missing-tool-result": _DEEPSEEK_MISSING, "interleaved-message": _DEEPSEEK_MISSING,
                   "missing-reasoning-content": (
                       "Missing `reasoning_content` field in the assistant message at message index {i}. For more "
                       "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls"),
                   "orphan-tool": "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"},
        sources={"missing-tool-result": "DeepSeek (langgenius/dify#32222)", "orphan-tool": "DeepSeek (OpenManus#23)",
                 "missing-reasoning-content": "deepseek-ai/DeepSeek-V3#1053", "empty-tools": "runebookai/tome#87"},
        note="Strict pairing; its texts never name the ids or the index."),
    "deepseek-r1": Profile(
        name="deepseek-r1", title="DeepSeek-R1 (deepseek-reasoner before thinking-mode tool calls)",
        severities={"duplicate-tool-call-id:reused": "off", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "warning", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "off", REASONING_IN_INPUT: "error"},
        # No texts: R1's docs state a 400 for reasoning_content in the input without its body, and R1 did not
        # take function calls, so DeepSeek's pairing texts (seen on deepseek-chat and thinking mode) are not its.
        templates={}, sources={REASONING_IN_INPUT: R1_DOC_SOURCE},
        reasoning_check=reject_reasoning_input,
        note="The older deepseek-reasoner (R1) contract, the opposite of thinking mode: reasoning_content in any "
             "input message is a 400 (documented, no error body). The model name alone cannot tell R1 from thinking "
             "mode, so this profile is chosen by hand, never by default."),
    "dashscope": Profile(
        name="dashscope", title="Qwen / Alibaba DashScope",
        severities={"duplicate-tool-call-id:reused": "off", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "warning", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "off", "legacy-function-call": "error"},
        templates={"missing-tool-result": _DASHSCOPE_MISSING, "interleaved-message": _DASHSCOPE_MISSING,
                   "orphan-tool": (_DASHSCOPE_PREFIX + 'messages with role "tool" must be a response to a preceeding '
                                   'message with "tool_calls".'),
                   "empty-tool-calls": "Empty tool_calls is not supported in message",
                   "legacy-function-call": ("The [function_call] is not supported in the message; however, you may "
                                            "be able to use [tool_calls]")},
        sources={"missing-tool-result": "QwenLM/qwen-code#315", "orphan-tool": "mcp-openai-gemini-llama-example#5",
                 "empty-tool-calls": "vscode-unify-chat-provider#65", "legacy-function-call": "QwenLM/Qwen3#573"},
        note="OpenAI-derived wording with double quotes; rejects the legacy function_call protocol."),
    "mistral": Profile(
        name="mistral", title="Mistral (La Plateforme, mistral-common)",
        severities={"duplicate-tool-call-id:reused": "error", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "error", "system-not-first": "error", "results-out-of-order": "off",
                    "tool-call-id-too-long": "off", "invalid-tool-call-id": "error"},
        templates={"missing-tool-result": _MISTRAL_COUNT, "interleaved-message": _MISTRAL_COUNT,
                   "orphan-tool": _MISTRAL_COUNT, "orphan-tool:after-user": "Unexpected role 'tool' after role 'user'",
                   "duplicate-tool-call-id": _MISTRAL_COUNT,
                   "duplicate-tool-call-id:reused": _MISTRAL_COUNT, "duplicate-tool-call-id:same-message": _MISTRAL_COUNT,
                   "user-after-tool": "Unexpected role 'user' after role 'tool'",
                   "missing-tool-call-id": "Tool call id has to be defined.",
                   "missing-tool-call-id:call": "Tool call id has to be defined.",
                   "unknown-tool-call-id": "Unexpected tool call id in tool results",
                   "invalid-tool-call-id": "Tool call id was {id} but must be a-z, A-Z, 0-9, with a length of 9."},
        sources={"missing-tool-result": "mistralai/client-python#234 (code 3230)",
                 "duplicate-tool-call-id": "NousResearch/hermes-agent#11722 (multiset count)",
                 "user-after-tool": "onyx-dot-app/onyx#6458", "orphan-tool:after-user": "charmbracelet/crush#279",
                 "missing-tool-call-id": "mistral-go#8",
                 "unknown-tool-call-id": "vllm-project/vllm#34745", "invalid-tool-call-id": "magentic#276 (code 3280)",
                 "system-not-first": "MODSetter/SurfSense#287 (HTTP 500, no text)"},
        tool_call_id_pattern=r"[a-zA-Z0-9]{9}",
        note="Counts calls and results (a reused id fails), wants an assistant turn after tool results, 9-char ids."),
    "anthropic": Profile(
        name="anthropic", title="Anthropic (via OpenAI-format gateways)",
        severities={"duplicate-tool-call-id:reused": "warning", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "off", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "error", "missing-tool-call-id": "error",
                    # Rejected in 2024 (anthropic-sdk-python#494); accepted since, but models answered with
                    # empty content (vercel/ai#12379, Feb 2026) before claude-sonnet-4-6 (vercel/ai#17005).
                    "tools-missing-for-history": "warning"},
        templates={"missing-tool-result": _ANTHROPIC_MISSING, "interleaved-message": _ANTHROPIC_MISSING,
                   "orphan-tool": _ANTHROPIC_UNEXPECTED, "unknown-tool-call-id": _ANTHROPIC_UNEXPECTED,
                   "invalid-tool-call-id": "messages.{n}.content.{k}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
                   "missing-tool-call-id:call": "messages.{n}.content.{k}.tool_use.id: Field required"},
        sources={"missing-tool-result": "anthropics/claude-code#1237", "orphan-tool": "openclaw-billing-proxy#34",
                 "invalid-tool-call-id": "tailcallhq/forgecode#1142", "missing-tool-call-id": "Antigravity-Manager#710",
                 "tools-missing-for-history": "anthropics/anthropic-sdk-python#494 (400 in 2024); vercel/ai#17005 "
                                              "(HTTP 200 on claude-sonnet-4-6, July 2026)"},
        tool_call_id_pattern=r"[a-zA-Z0-9_-]+", index_style="anthropic",
        note="Indexes count Anthropic turns: system removed, tool results merged into one user turn."),
    "bedrock": Profile(
        name="bedrock", title="Amazon Bedrock Converse (via OpenAI-format gateways)",
        severities={"duplicate-tool-call-id:reused": "warning", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "error", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "off", "tools-missing-for-history": "error"},
        # Texts for these rules only; the other rules report without one. {n} counts Converse turns (system
        # apart, tool results and the text after them merged into one user turn, as gateways send them).
        templates={"tools-missing-for-history": _BEDROCK_NO_TOOLS, "orphan-tool": _BEDROCK_COUNT,
                   "unknown-tool-call-id": _BEDROCK_COUNT, "duplicate-tool-call-id": _BEDROCK_COUNT,
                   "user-after-tool": _BEDROCK_MIXED},
        sources={"tools-missing-for-history": "langgenius/dify#17545 (2025); aws-samples/bedrock-access-gateway#239 "
                                              "(2026)", "orphan-tool": "Curie#16; strands harness-sdk#1435; "
                 "pydantic-ai#2327", "user-after-tool": "langchain-aws#141"},
        index_style="anthropic",
        note="Converse needs toolConfig whenever the history holds toolUse or toolResult blocks, at most as many "
             "results as calls, and no text in the turn that carries tool results."),
    "gemini": Profile(
        name="gemini", title="Google Gemini (OpenAI format routed to Gemini)",
        severities={"duplicate-tool-call-id:reused": "off", "null-content:assistant-tool-calls": "off",
                    "user-after-tool": "warning", "results-out-of-order": "off", "tool-call-id-too-long": "off",
                    "invalid-tool-call-id": "off"},
        templates={"missing-tool-result": _GEMINI_COUNT, "interleaved-message": _GEMINI_COUNT,
                   "orphan-tool": "Please ensure that function response turn comes immediately after a function call turn"},
        sources={"missing-tool-result": "google-gemini/gemini-cli#3124 (INVALID_ARGUMENT)",
                 "orphan-tool": "langchain-ai/langchain#27799"},
        note="Counts function responses against function calls per turn."),
    "ollama": Profile(
        name="ollama", title="Ollama (/v1 compatibility layer)",
        severities=_lenient_pairing() | {"null-content:assistant-tool-calls": "error", "user-after-tool": "off"},
        templates={"null-content": "invalid message content type: <nil>",
                   "null-content:assistant-tool-calls": "invalid message content type: <nil>"},
        sources={"null-content": "pydantic/pydantic-ai#5206"},
        note="No id pairing (results bind by order or tool name), but rejects content: null."),
    "vllm": Profile(
        name="vllm", title="vLLM and chat-template servers",
        severities=_lenient_pairing() | {"null-content:assistant-tool-calls": "off", "user-after-tool": "warning",
                                         "system-not-first": "warning"},
        templates={}, sources={},
        note="No protocol validation: the chat template decides, often binding results by position."),
}

ALIASES = {"azure": "openai", "azure-openai": "openai", "qwen": "dashscope", "claude": "anthropic",
           "deepseek-reasoner-r1": "deepseek-r1"}


def get_profile(name: str | None = None) -> Profile:
    """The profile by name or alias (``None`` -> openai); raises ``UnknownChoiceError`` naming the choices."""
    key = (name or "openai").strip().lower()
    key = ALIASES.get(key, key)
    try:
        return PROFILES[key]
    except KeyError:
        raise UnknownChoiceError(f"unknown provider profile {name!r}; choose one of "
                       f"{', '.join(list(PROFILES) + list(ALIASES))}") from None


def profile_names() -> list[str]:
    """Every accepted profile name, aliases included (for --profile choices)."""
    return list(PROFILES) + list(ALIASES)

# A function_call on a non-assistant message is malformed everywhere, not just deprecated.
# reasoning_content echo is DeepSeek's requirement alone (older vLLM even rejected the field).
for _p in PROFILES.values():
    _p.severities.setdefault("legacy-function-call:non-assistant", "error")
    _p.severities.setdefault("missing-reasoning-content", "off")
    _p.severities.setdefault(REASONING_IN_INPUT, "off")
