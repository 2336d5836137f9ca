"""Trim on Responses item groups: openai-truncation-auto (alias truncation-auto) and replay of a Responses trace."""
from __future__ import annotations

import json

from agent_core.apis.responses import item_groups
from agent_core.cli.main import main
from agent_core.core.msg import Msg
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.lint.scan import lint_request
from agent_core.trim.items import TruncationAuto
from agent_core.trim.registry import make_policy

U = {"role": "user", "content": "weather in Paris and Rome?"}
RS = {"type": "reasoning", "id": "rs_1", "summary": []}
FC1 = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "get_weather", "arguments": '{"city":"Paris"}'}
FC2 = {"type": "function_call", "id": "fc_2", "call_id": "c2", "name": "get_weather", "arguments": '{"city":"Rome"}'}
O1 = {"type": "function_call_output", "call_id": "c1", "output": "sunny " * 200}
O2 = {"type": "function_call_output", "call_id": "c2", "output": "rain " * 200}
MSG = {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Sunny and rainy."}]}
U2 = {"role": "user", "content": "thanks"}
ITEMS = [U, RS, FC1, FC2, O1, O2, MSG, U2]


def test_groups_keep_calls_with_outputs_and_reasoning_with_its_follower():
    assert item_groups(ITEMS) == [(0, 1), (1, 6), (6, 7), (7, 8)]


def test_truncation_auto_drops_whole_groups_oldest_first_and_stays_valid():
    policy = make_policy("truncation-auto", context_window=300)
    assert isinstance(policy, TruncationAuto) and policy.name == "openai-truncation-auto"
    keep, reason = policy.apply_items(ITEMS)
    assert keep == [6, 7] and "300-token context window" in reason       # the 400-token tool group cannot fit
    assert lint_request({"model": "m", "input": [ITEMS[k] for k in keep]}) == []
    keep, reason = TruncationAuto(context_window=100_000).apply_items(ITEMS)
    assert keep == list(range(len(ITEMS))) and reason == ""
    assert TruncationAuto(context_window=1).apply_items(ITEMS)[0] == [7]  # the last group always stays


def test_truncation_auto_on_chat_messages_keeps_pairs():
    msgs = [Msg.from_openai(m) for m in [
        {"role": "system", "content": "s"}, {"role": "user", "content": "x " * 300},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "y " * 300}, {"role": "user", "content": "ok"}]]
    result = TruncationAuto(context_window=200).apply(msgs)
    assert [m.role for m in result.messages] == ["system", "user"] and result.reason


def test_replay_cli_on_a_responses_trace(capsys):
    path = str(SAMPLE_TRACES / "responses_previous_id.jsonl")
    assert main(["replay", path, "--policy", "keep-all"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["api"] == "responses" and [len(c["items"]) for c in report["calls"]] == [1, 3, 5, 7]
    assert all(c["findings"] == [] and c["dropped"] == [] for c in report["calls"])
    assert main(["replay", path, "--policy", "truncation-auto", "--param", "context_window=120"]) == 0
    calls = json.loads(capsys.readouterr().out)["calls"]
    assert [len(c["dropped"]) for c in calls] == [0, 0, 1, 0] and calls[2]["tokens"] <= 120
    assert main(["replay", path, "--policy", "max-messages"]) == 2
    assert "on Responses item groups use keep-all or openai-truncation-auto" in capsys.readouterr().err
