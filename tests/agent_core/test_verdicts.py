"""The verdict matrix: hand-made chains (tests/fixtures/verdicts/) x every provider profile.

Every expected text is typed from the provider's public report, quoted in
../shared/design/protocol-errors.md (source next to each constant), not copied from our profiles.
``chain-studio lint PATH --profile all --format json`` must reproduce the table exactly.
"""
from __future__ import annotations

import json

import pytest

from agent_core.cli.main import main
from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any
from agent_core.lint.profiles import PROFILES
from agent_core.lint.verdicts import call_verdicts, verdicts

FIXTURES = PROJECT_ROOT / "tests" / "fixtures" / "verdicts"

# OpenAI, aliasrobotics/cai#111 / morphic#136
OPENAI_MISSING = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                  "'tool_call_id'. The following tool_call_ids did not have response messages: {}")
OPENAI_ORPHAN = ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message with "
                 "'tool_calls'.")
# DeepSeek: langgenius/dify#32222, FoundationAgents/OpenManus#23, deepseek-ai/DeepSeek-V3#1053
DEEPSEEK_MISSING = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                    "'tool_call_id'. (insufficient tool messages following tool_calls message)")
DEEPSEEK_ORPHAN = "Messages with role 'tool' must be a response to a preceding message with 'tool_calls'"
DEEPSEEK_REASONING = ("Missing `reasoning_content` field in the assistant message at message index {}. For more "
                      "information, please refer to https://api-docs.deepseek.com/guides/thinking_mode#tool-calls")
# Qwen / DashScope: QwenLM/qwen-code#315, mcp-openai-gemini-llama-example#5
QWEN_MISSING = ('<400> InternalError.Algo.InvalidParameter: An assistant message with "tool_calls" must be followed '
                'by tool messages responding to each "tool_call_id". The following tool_call_ids did not have '
                'response messages: message[{}].role')
QWEN_ORPHAN = ('<400> InternalError.Algo.InvalidParameter: messages with role "tool" must be a response to a '
               'preceeding message with "tool_calls".')
# Mistral: mistralai/client-python#234, onyx-dot-app/onyx#6458
MISTRAL_COUNT = "Not the same number of function calls and responses"
MISTRAL_USER_AFTER_TOOL = "Unexpected role 'user' after role 'tool'"
# Anthropic: anthropics/claude-code#5989; openclaw-billing-proxy#34; n8n-io/n8n#22550 + OpenRouter ai-sdk-provider#162
ANTHROPIC_MISSING = ("messages.{}: `tool_use` ids were found without `tool_result` blocks immediately after: {}. Each "
                     "`tool_use` block must have a corresponding `tool_result` block in the next message.")
ANTHROPIC_ORPHAN_OLD = ("messages.{}.content.{}: unexpected tool_use_id found in tool_result blocks: {}. Each "
                        "tool_result block must have a corresponding tool_use block in the previous message.")
ANTHROPIC_THINKING_FIRST = (
    "messages.{}.content.0.type: Expected `thinking` or `redacted_thinking`, but found `{}`. When `thinking` is "
    "enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of "
    "`tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid "
    "this requirement, disable `thinking`. Please consult our documentation at "
    "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
# Gemini: google-gemini/gemini-cli#3124; gemini-cli#11814; langchain#27799
GEMINI_COUNT = ("Please ensure that the number of function response parts is equal to the number of function call "
                "parts of the function call turn.")
GEMINI_CALL_TURN = ("Please ensure that function call turn comes immediately after a user turn or after a function "
                    "response turn.")
GEMINI_RESPONSE_TURN = "Please ensure that function response turn comes immediately after a function call turn"
# Bedrock Converse: Curie#16 / pydantic-ai#2327; langchain-aws#141
BEDROCK_COUNT = ("The number of toolResult blocks at messages.{}.content exceeds the number of toolUse blocks of "
                 "previous turn.")
BEDROCK_MIXED = "messages.{}.content: Conversation blocks and tool result blocks cannot be provided in the same turn."
OLLAMA_NULL = "invalid message content type: <nil>"     # pydantic/pydantic-ai#5206
OPENAI_ARGS_TYPE = ("Invalid type for 'messages[1].tool_calls[0].function.arguments': expected a string, but got an "
                    "object instead.")                   # O10, aaif-goose/goose-mobile#20

# DeepSeek-R1 (the 2025 deepseek-reasoner): a 400 is documented, its body is not. The sentence, typed from
# api-docs.deepseek.com/guides/reasoning_model (archived web.archive.org/web/20250728201007), Multi-round Conversation:
R1_DOC = ("Please note that if the reasoning_content field is included in the sequence of input messages, the API "
          "will return a 400 error. Therefore, you should remove the reasoning_content field from the API response "
          "before making the API request, as demonstrated in the API example.")
R1_REJECTS = ("reasoning-content-in-input", None)     # no error text: never invented

OK = None
# chain -> profile -> None (accepted) or (rule, exact text or None when undocumented, native location)
TABLE: dict[str, dict[str, tuple | None]] = {
    "cc_trimmed_orphan": {
        "openai": ("orphan-tool", OPENAI_ORPHAN, "messages[1]"),
        "deepseek": ("orphan-tool", DEEPSEEK_ORPHAN, "messages[1]"),
        "dashscope": ("orphan-tool", QWEN_ORPHAN, "messages[1]"),
        "mistral": ("orphan-tool", MISTRAL_COUNT, "messages[1]"),
        "anthropic": ("orphan-tool", ANTHROPIC_ORPHAN_OLD.format(0, 0, "call_Ab12Cd34Ef"), "messages[1]"),
        "bedrock": ("orphan-tool", BEDROCK_COUNT.format(0), "messages[1]"),
        "gemini": ("orphan-tool", GEMINI_RESPONSE_TURN, "messages[1]"),
        "deepseek-r1": ("orphan-tool", None, "messages[1]"),      # R1 took no function calls: no text of its own
        "ollama": OK, "vllm": OK},
    "cc_unanswered_call": {
        "openai": ("missing-tool-result", OPENAI_MISSING.format("abcDEF123"), "messages[1].tool_calls[0]"),
        "deepseek": ("missing-tool-result", DEEPSEEK_MISSING, "messages[1].tool_calls[0]"),
        "dashscope": ("missing-tool-result", QWEN_MISSING.format(1), "messages[1].tool_calls[0]"),
        "mistral": ("missing-tool-result", MISTRAL_COUNT, "messages[1].tool_calls[0]"),
        "anthropic": ("missing-tool-result", ANTHROPIC_MISSING.format(1, "abcDEF123"), "messages[1].tool_calls[0]"),
        "bedrock": ("missing-tool-result", None, "messages[1].tool_calls[0]"),
        "gemini": ("missing-tool-result", GEMINI_COUNT, "messages[1].tool_calls[0]"),
        "ollama": ("null-content", OLLAMA_NULL, "messages[1].content"),
        "deepseek-r1": ("missing-tool-result", None, "messages[1].tool_calls[0]"),
        "vllm": OK},
    "cc_arguments_object": {
        **{p: ("invalid-tool-arguments", None, "messages[1].tool_calls[0].function.arguments") for p in PROFILES},
        "openai": ("invalid-tool-arguments", OPENAI_ARGS_TYPE, "messages[1].tool_calls[0].function.arguments")},
    # the thinking block, converted, travels as reasoning_content: DeepSeek-R1 refuses any in the input
    "anthropic_thinking_round": {**{p: OK for p in PROFILES}, "deepseek-r1": (*R1_REJECTS, "messages[1]")},
    "cc_deepseek_reasoning": {**{p: OK for p in PROFILES},
                              "deepseek-r1": (*R1_REJECTS, "messages[1].reasoning_content")},
    # a plain chat turn with its reasoning echoed: thinking mode ignores it, R1 refuses it
    "cc_deepseek_r1_chat": {**{p: OK for p in PROFILES},
                            "deepseek-r1": (*R1_REJECTS, "messages[1].reasoning_content")},
    "anthropic_unanswered_tool_use": {
        "openai": ("missing-tool-result", OPENAI_MISSING.format("abcDEF123"), "messages[1]"),
        "deepseek": ("missing-tool-result", DEEPSEEK_MISSING, "messages[1]"),
        "dashscope": ("missing-tool-result", QWEN_MISSING.format(1), "messages[1]"),
        "mistral": ("missing-tool-result", MISTRAL_COUNT, "messages[1]"),
        "anthropic": ("missing-tool-result", ANTHROPIC_MISSING.format(1, "abcDEF123"), "messages[1].content[1]"),
        "bedrock": ("missing-tool-result", None, "messages[1]"),
        "gemini": ("missing-tool-result", GEMINI_COUNT, "messages[1]"),
        "deepseek-r1": ("missing-tool-result", None, "messages[1]"),
        "ollama": OK, "vllm": OK},
    "anthropic_thinking_dropped": {
        **{p: OK for p in PROFILES},
        "deepseek": ("missing-reasoning-content", DEEPSEEK_REASONING.format(1), "messages[1]"),
        "anthropic": ("thinking-not-first", ANTHROPIC_THINKING_FIRST.format(1, "tool_use"), "messages[1].content[0]")},
    "gemini_history_starts_with_call": {
        **{p: OK for p in PROFILES},
        "mistral": ("user-after-tool", MISTRAL_USER_AFTER_TOOL, "contents[2]"),
        "bedrock": ("user-after-tool", BEDROCK_MIXED.format(1), "contents[2]"),
        "gemini": ("function-call-placement", GEMINI_CALL_TURN, "contents[0]")},
    "gemini_short_response_turn": {
        "openai": ("missing-tool-result", OPENAI_MISSING.format("abcDEF456"), "contents[1]"),
        "deepseek": ("missing-tool-result", DEEPSEEK_MISSING, "contents[1]"),
        "dashscope": ("missing-tool-result", QWEN_MISSING.format(1), "contents[1]"),
        "mistral": ("missing-tool-result", MISTRAL_COUNT, "contents[1]"),
        "anthropic": ("missing-tool-result", ANTHROPIC_MISSING.format(1, "abcDEF456"), "contents[1]"),
        "bedrock": ("missing-tool-result", None, "contents[1]"),
        "gemini": ("missing-tool-result", GEMINI_COUNT, "contents[1].parts[0]"),
        "deepseek-r1": ("missing-tool-result", None, "contents[1]"),
        "ollama": OK, "vllm": OK},
}
LOSSES = {   # chain -> profile -> conversion losses
    "anthropic_thinking_round": {p: 1 for p in PROFILES if p != "anthropic"},   # the thinking signature
    "cc_deepseek_reasoning": {"anthropic": 1, "bedrock": 1, "gemini": 1},     # reasoning_content without a signature
    "cc_deepseek_r1_chat": {"anthropic": 1, "bedrock": 1, "gemini": 1},
}


def _expected(chain: str) -> list[dict]:
    out = []
    for profile in PROFILES:
        row = TABLE[chain][profile]
        losses = LOSSES.get(chain, {}).get(profile, 0)
        out.append({"profile": profile, "accepted": row is None, "rule": row and row[0], "text": row and row[1],
                    "call": None if row is None else 0, "location": row and row[2], "conversion_losses": losses,
                    "documentation": None})
    return out


def _documentation(verdict: dict) -> dict:
    """The verdict with its ``documentation`` checked: DeepSeek-R1's documented sentence stands for the missing
    error body of its own rejection (labelled as documentation), and nothing else carries one."""
    doc = verdict["documentation"]
    if (verdict["profile"], verdict["rule"]) == ("deepseek-r1", "reasoning-content-in-input"):
        assert verdict["text"] is None
        assert doc.startswith("no error body is documented; the provider's docs say: ") and f'"{R1_DOC}"' in doc
        assert "api-docs.deepseek.com/guides/reasoning_model" in doc
        return {**verdict, "documentation": None}
    assert doc is None
    return verdict


def test_table_covers_every_fixture_and_profile():
    assert {p.stem for p in FIXTURES.glob("*.json")} == set(TABLE)
    assert all(set(row) == set(PROFILES) for row in TABLE.values())
    # every profile rejects something and accepts something: each column can fail
    for profile in PROFILES:
        column = [TABLE[c][profile] for c in TABLE]
        assert any(v is None for v in column) and any(v is not None for v in column), profile


@pytest.mark.parametrize("chain", sorted(TABLE))
def test_profile_all_reproduces_the_table(chain, capsys):
    path = FIXTURES / f"{chain}.json"
    code = main(["lint", str(path), "--profile", "all", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert {"verdicts": [_documentation(v) for v in out["verdicts"]]} == {"verdicts": _expected(chain)}
    assert code == (0 if all(v is None for v in TABLE[chain].values()) else 1)
    main(["lint", str(path), "--profile", "all"])
    lines = capsys.readouterr().out.splitlines()[1:]
    assert [line.split(":")[0].strip() for line in lines] == list(PROFILES)
    for line, profile in zip(lines, PROFILES):
        row = TABLE[chain][profile]
        assert ("accepted" in line) is (row is None)
        if row is not None and row[1] is not None:
            assert line.endswith(row[1]) or f"{row[1]} (" in line
        if row is not None and row[0] == "reasoning-content-in-input":
            assert f'docs say: "{R1_DOC}"' in line and "no error body is documented" in line


def test_per_call_matrix_matches_the_trace_verdict():
    trace = load_any(FIXTURES / "anthropic_unanswered_tool_use.json")
    per_call = call_verdicts(trace)
    assert list(per_call) == [0]
    assert [v.export() for v in per_call[0]] == [v.export() for v in verdicts(trace)]


def test_mistral_names_the_role_order_of_a_tool_result_after_a_user_turn():
    from agent_core.lint.scan import lint_payload

    after_user = [{"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "abcDEF123", "content": "x"}]
    after_system = [{"role": "system", "content": "s"}, after_user[1]]
    # charmbracelet/crush#279 (quoted in protocol-errors.md, section 5): Mistral's role-order wording
    assert [f.api_error for f in lint_payload(after_user, profile="mistral")] == [
        "Unexpected role 'tool' after role 'user'"]
    assert [f.api_error for f in lint_payload(after_system, profile="mistral")] == [MISTRAL_COUNT]
    assert [f.api_error for f in lint_payload(after_user, profile="openai")] == [OPENAI_ORPHAN]
