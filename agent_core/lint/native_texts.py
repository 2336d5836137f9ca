"""The exact error texts of the native Anthropic Messages and Gemini rules, and where each is quoted from.

Kept apart from the checks (``anthropic.py``, ``gemini.py``) so the docs generator (``rules.rules_markdown``)
lists them without importing the checkers. Every text is quoted from the public report its source names
(../shared/design/protocol-errors.md, section 5, has the quotes); none is invented.
"""
from __future__ import annotations

_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

ANTHROPIC_TEXTS: dict[str, str] = {
    "missing-tool-result": ("messages.{n}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                            "{ids}. Each `tool_use` block must have a corresponding `tool_result` block in the next "
                            "message."),
    "unknown-tool-call-id": ("messages.{n}.content.{k}: unexpected `tool_use_id` found in `tool_result` blocks: {id}. "
                             "Each `tool_result` block must have a corresponding `tool_use` block in the previous "
                             "message."),
    "tool-result-outside-user": "`tool_result` blocks can only be in `user` messages",
    "thinking-not-first": ("messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                           "`{type}`. When `thinking` is enabled, a final `assistant` message must start with a "
                           "thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We "
                           "recommend you include thinking blocks from previous turns. To avoid this requirement, "
                           "disable `thinking`. Please consult our documentation at " + _DOCS),
    "thinking-not-first:order": ("messages.{n}.content.0: If an assistant message contains any thinking blocks, the "
                                 "first block must be thinking or redacted_thinking. Found {type}."),
    "thinking-when-disabled": ("messages.{n}.content.{k}: When thinking is disabled, an `assistant` message in the "
                               "final position cannot contain `thinking`. To use thinking blocks, enable `thinking` "
                               "in your request."),
    "thinking-changed": "messages.{n}.content.{k}: Invalid `signature` in `thinking` block",
    "empty-text-block": "messages: text content blocks must be non-empty",
    "empty-message": ("messages.{n}: all messages must have non-empty content except for the optional final "
                      "assistant message"),
    "invalid-role": ('messages: Unexpected role "{role}". Allowed roles are "user" or "assistant". For instructions '
                     "on how to use tools, see https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview."),
    "invalid-tool-call-id": "messages.{n}.content.{k}.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
}
ANTHROPIC_SOURCES: dict[str, str] = {
    "missing-tool-result": "anthropics/claude-code#5989, #2697; Kilo-Org/kilocode#5163",
    "unknown-tool-call-id": "anthropics/claude-code#13460; CLIProxyAPI#497",
    "tool-result-outside-user": "tghamm/Anthropic.SDK#128",
    "thinking-not-first": "OpenRouterTeam/ai-sdk-provider#162; n8n-io/n8n#22550; haystack-core-integrations#2146",
    "thinking-not-first:order": "anthropics/claude-code#20705",
    "thinking-when-disabled": "tailcallhq/forgecode#1195, #1853",
    "thinking-changed": "anthropics/claude-code#10627; anthropics/anthropic-sdk-python#1598 (maintainer: the check "
                        "fails if a block differs in any way)",
    "empty-text-block": "anthropics/claude-code#59812",
    "empty-message": "anthropics/claude-code#6774",
    "invalid-role": "NyarchLinux/NyarchAssistant#157 (role \"tool\")",
    "invalid-tool-call-id": "tailcallhq/forgecode#1142",
}
GEMINI_TEXTS: dict[str, str] = {
    "function-call-placement": ("Please ensure that function call turn comes immediately after a user turn or after a "
                                "function response turn."),
    "function-response-placement": "Please ensure that function response turn comes immediately after a function call turn",
    "missing-tool-result": ("Please ensure that the number of function response parts is equal to the number of "
                            "function call parts of the function call turn."),
    "missing-thought-signature": ("Function call is missing a thought_signature in functionCall parts. This is required "
                                  "for tools to work correctly, and missing thought_signature may lead to degraded model "
                                  "performance. Additional data, function call `default_api:{name}` , position {pos}."),
}
GEMINI_SOURCES: dict[str, str] = {
    "function-call-placement": "google-gemini/gemini-cli#11814; Antigravity-Manager PR #3396",
    "function-response-placement": "langchain-ai/langchain#27799",
    "missing-tool-result": "google-gemini/gemini-cli#3124, #16415, #4217",
    "missing-thought-signature": "5ire#405; ai.google.dev/gemini-api/docs/thought-signatures (which parts carry it); "
                                 "'position' is filled with the content index (its meaning is not documented)",
}
