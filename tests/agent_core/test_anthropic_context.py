"""Anthropic context editing replayed: anthropic-clear-tool-uses on the 60-round sample, anthropic-clear-thinking.

Expectations are computed from the recorded stream itself (which tool results exist, which tool uses are the
newest, how many cookbook tokens the full history has by real tiktoken), not from the policy.
"""
from __future__ import annotations

from agent_core.cli.main import main
from agent_core.core.msg import Msg
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import has_errors
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.trace.tokens import counter_for
from agent_core.trim.anthropic_context import CLEARED_PREFIX, ClearThinking
from agent_core.trim.registry import make_policy

SAMPLE = SAMPLE_TRACES / "long_trimmed_fact.jsonl"
FACT = "A-2024-0715"


def _run(**params):
    trace = load_any(SAMPLE)
    policy = policy_for_trace("anthropic-clear-tool-uses", {k: str(v) for k, v in params.items()}, trace)
    return trace, replay(trace, policy)


def test_sixty_rounds_old_results_become_placeholders_and_the_fact_stays():
    trace, result = _run(trigger=2000)
    counter = counter_for(trace.calls[0].model)
    stream = trace.stream
    tool_results = [m.id for m in stream if m.role == "tool"]
    assert len(trace.calls) == 84 and len(tool_results) == 24
    for r in result.calls:
        history = stream[:r.position]
        full_tokens = sum(counter.count_message(m.to_openai()) for m in history)
        cleared = [i[len(CLEARED_PREFIX):] for i in r.ids if i.startswith(CLEARED_PREFIX)]
        # every message of the full history is there, in order (placeholders stand in for cleared results)
        assert [i.removeprefix(CLEARED_PREFIX) for i in r.ids] == [m.id for m in history]
        if full_tokens <= 2000:
            assert cleared == [], r.call
        else:
            results_here = [m.id for m in history if m.role == "tool"]
            assert cleared == results_here[:-3], r.call       # all but the 3 newest tool uses' results
        assert any(FACT in str(m.get("content")) for m in r.messages), r.call   # the fact is a user message: kept
        assert not has_errors(r.findings), r.call            # a placeholder keeps its tool_call_id: pairing intact
    first = next(r.call for r in result.calls if any(i.startswith(CLEARED_PREFIX) for i in r.ids))
    assert first == 51 and sum(len(r.dropped) for r in result.calls) == 21
    # what the app really sent lost the fact at call 20 (max-messages), the emulated server-side editing never does
    assert FACT not in str(trace.calls[20].messages) and FACT in str(trace.calls[19].messages)


def test_report_names_placeholders_and_the_probe(capsys):
    assert main(["replay", str(SAMPLE), "--policy", "anthropic-clear-tool-uses", "--param", "trigger=2000",
                 "--probe", FACT, "--format", "text"]) == 0
    out = capsys.readouterr().out
    assert "call 51: 104 messages" in out and "dropped 11 (anthropic-clear-tool-uses)" in out
    assert f"'{FACT}' was not forgotten under anthropic-clear-tool-uses" in out
    assert f"'{FACT}' is gone from call 20 under recorded" in out


def test_parameters():
    trace, base = _run(trigger=2000)
    last = base.calls[-1]
    names = {}
    for m in trace.stream:
        for c in m.tool_calls or ():
            names[c["id"]] = c["function"]["name"]
    kept_tools = {"calculate"}
    _, excluded = _run(trigger=2000, exclude_tools="calculate")
    for m in excluded.calls[-1].messages:
        if m.get("role") == "tool" and names.get(m.get("tool_call_id")) in kept_tools:
            assert "cleared" not in str(m.get("content"))
    assert sum(i.startswith(CLEARED_PREFIX) for i in excluded.calls[-1].ids) < sum(
        i.startswith(CLEARED_PREFIX) for i in last.ids)
    _, least = _run(trigger=2000, clear_at_least=1_000_000)
    assert all(not any(i.startswith(CLEARED_PREFIX) for i in r.ids) for r in least.calls)
    _, inputs = _run(trigger=2000, clear_tool_inputs="true")
    cleared_calls = {m["tool_call_id"] for m in inputs.calls[-1].messages
                     if m.get("role") == "tool" and "cleared" in str(m.get("content"))}
    args = [c["function"]["arguments"] for m in inputs.calls[-1].messages for c in m.get("tool_calls") or []
            if c["id"] in cleared_calls]
    assert args and set(args) == {"{}"}
    _, default = _run()                      # the documented default trigger (100,000 tokens) never fires here
    assert all(r.same for r in default.calls[:20])
    assert all(not any(i.startswith(CLEARED_PREFIX) for i in r.ids) for r in default.calls)


def _assistant(i: int, thinking: bool) -> Msg:
    blocks = ([{"type": "thinking", "thinking": f"step {i}", "signature": f"sig{i}"}] if thinking else []) + [
        {"type": "text", "text": f"answer {i}"}]
    return Msg(role="assistant", content=blocks, id=f"a{i}")


def test_clear_thinking_keeps_the_newest_turns():
    messages = [Msg(role="user", content="q0", id="u0"), _assistant(0, True), Msg(role="user", content="q1", id="u1"),
                _assistant(1, True), Msg(role="user", content="q2", id="u2"), _assistant(2, True)]
    kept = ClearThinking(keep=1).apply(messages)
    shapes = [[b["type"] for b in m.content] if m.role == "assistant" else m.role for m in kept.messages]
    assert shapes == ["user", ["text"], "user", ["text"], "user", ["thinking", "text"]]
    assert [m.id for m in kept.removed] == ["a0", "a1"]
    assert ClearThinking(keep=None).apply(messages).removed == []
    assert make_policy("anthropic-clear-thinking", keep="2").apply(messages).removed[0].id == "a0"


def _anthropic_log(tmp_path, rounds: int = 4):
    """A payload log of Anthropic Messages bodies: ``rounds`` weather tool rounds, full history each call."""
    import json

    tools = [{"name": "get_weather", "description": "Weather", "input_schema": {"type": "object"}}]
    messages: list = []
    bodies = []
    for r in range(rounds):
        messages.append({"role": "user", "content": f"Weather in city {r}?"})
        bodies.append({"model": "claude-sonnet-4-5", "max_tokens": 256, "tools": tools, "messages": list(messages)})
        messages.append({"role": "assistant", "content": [
            {"type": "tool_use", "id": f"toolu_{r:02d}", "name": "get_weather", "input": {"city": f"city {r}"}}]})
        messages.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{r:02d}", "content": f"city {r}: sunny " * 40}]})
        bodies.append({"model": "claude-sonnet-4-5", "max_tokens": 256, "tools": tools, "messages": list(messages)})
    path = tmp_path / "anthropic.jsonl"
    path.write_text("\n".join(json.dumps(b) for b in bodies), encoding="utf-8")
    return load_any(path)


def test_anthropic_native_trace_tool_result_blocks_become_placeholders(tmp_path):
    trace = _anthropic_log(tmp_path)
    policy = policy_for_trace("anthropic-clear-tool-uses", {"trigger": "200", "keep": "1",
                                                            "clear_tool_inputs": "true"}, trace)
    last = replay(trace, policy, profile="anthropic").calls[-1]
    results = [b for m in last.messages if isinstance(m.get("content"), list) for b in m["content"]
               if b.get("type") == "tool_result"]
    uses = [b for m in last.messages if isinstance(m.get("content"), list) for b in m["content"]
            if b.get("type") == "tool_use"]
    assert [b["tool_use_id"] for b in results] == ["toolu_00", "toolu_01", "toolu_02", "toolu_03"]
    assert ["cleared" in b["content"] for b in results] == [True, True, True, False]     # keep=1: the newest stays
    assert [b["input"] for b in uses] == [{}, {}, {}, {"city": "city 3"}]               # clear_tool_inputs
    assert not has_errors(last.findings)          # the native anthropic rules: pairing intact
    untouched = replay(trace, policy_for_trace("anthropic-clear-tool-uses", {}, trace), profile="anthropic")
    assert all(r.same for r in untouched.calls)   # below the documented default trigger: exactly what was sent
