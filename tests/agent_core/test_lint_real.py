"""The linter on the real traces, over real HTTP against the demo model, and across whole traces."""
from __future__ import annotations

import json

import openai
import pytest

from agent_core.core.errors import MalformedTraceError
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_payload, lint_request, lint_trace
from agent_core.trace.model import Call, Trace

O1 = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
      "'tool_call_id'. The following tool_call_ids did not have response messages: ")


def _call(cid, name="get_weather", args='{"city": "Paris"}'):
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}


def test_tau_bench_is_clean_under_openai_and_reuses_ids_under_mistral(real_traces):
    path = real_traces / "tau-bench-gpt-4o-airline" / "gpt-4o-airline.sample.json"
    trace = load_any(path)
    records = json.loads(path.read_text())
    assert trace.format == "tau-bench" and len(trace.meta["conversations"]) == len(records) == 41
    assert len(trace.calls) == sum(1 for r in records for m in r["traj"] if m["role"] == "assistant")
    assert [f for f in lint_trace(trace, profile="openai") if f.severity == "error"] == []
    mistral = lint_trace(trace, profile="mistral")
    for conv, record in zip(trace.meta["conversations"], records):
        # the ids a later assistant message re-uses, among the messages some request carried
        traj = record["traj"]
        last_assistant = max(i for i, m in enumerate(traj) if m["role"] == "assistant")
        seen, reused = set(), set()
        for m in traj[:last_assistant]:
            for c in m.get("tool_calls") or []:
                (reused if c["id"] in seen else seen).add(c["id"])
        c0, c1 = conv["calls"]
        reported = {cid for f in mistral if c0 <= f.call < c1 and f.rule == "duplicate-tool-call-id"
                    for cid in f.tool_call_ids}
        assert reported == reused, conv["name"]
    assert sum(1 for conv in trace.meta["conversations"]
               if any(conv["calls"][0] <= f.call < conv["calls"][1] and f.rule == "duplicate-tool-call-id"
                      for f in mistral)) == 14  # the README's count for this sample
    dup = next(f for f in mistral if f.rule == "duplicate-tool-call-id")
    assert dup.severity == "error" and dup.api_error == "Not the same number of function calls and responses"


def test_toolbench_is_legacy(real_traces):
    files = sorted((real_traces / "toolbench-chatgpt-function-call").rglob("*.json"))
    assert len(files) == 15
    with_chains = 0
    for path in files:
        try:
            trace = load_any(path)
        except MalformedTraceError as err:
            # An answer file whose chains are all invalid imports no call: refused with the reason, not 0 calls.
            assert "no call could be imported" in str(err) and "no train_messages" in str(err), path
            continue
        assert trace.format == "toolbench"
        findings = lint_trace(trace)
        if trace.calls:
            with_chains += 1
            rules = {f.rule for f in findings}
            assert "legacy-function-call" in rules and rules <= {"legacy-function-call", "undeclared-tool"}, path
            assert all(f.severity == "warning" for f in findings)
            if path.name == "21_ChatGPT_DFS_woFilter_w2.json" and "G3" in str(path):
                # gpt-3.5 really called a function name it was never offered
                assert {f.message for f in findings if f.rule == "undeclared-tool"} == {
                    "Message 4 calls 'dota_2_steam_web', which the request's tools do not declare."}
    assert with_chains == 13


def test_swe_agent_files_read_and_lint_clean(real_traces):
    files = sorted((real_traces / "swe-agent-function-calling-demos").rglob("*.traj"))
    assert len(files) == 4
    for path in files:
        trace = load_any(path)
        history = json.loads(path.read_text())["history"]
        assert trace.format == "swe-agent"
        assert len(trace.stream) == len(history)
        assert len(trace.calls) == sum(m["role"] == "assistant" for m in history)
        assert any("tool_call_ids[0] became tool_call_id" in w for w in trace.warnings)
        tool = next(m for m in trace.stream if m.role == "tool")
        assert tool.tool_call_id == next(m for m in history if m["role"] == "tool")["tool_call_ids"][0]
        assert [f for f in lint_trace(trace) if f.severity == "error"] == []


def test_demo_model_rejects_a_broken_chain_over_http(demo_server):
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="test-key", max_retries=0)
    broken = [{"role": "user", "content": "北京天气"},
              {"role": "assistant", "content": None, "tool_calls": [_call("call_abc")]},
              {"role": "user", "content": "还在吗？"}]
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="chain-studio-demo-model", messages=broken)
    assert caught.value.status_code == 400
    assert caught.value.response.json() == {"error": {"message": O1 + "call_abc", "type": "invalid_request_error",
                                                      "param": "messages.[1].role", "code": None}}
    fixed = broken[:2] + [{"role": "tool", "tool_call_id": "call_abc", "content": '{"temperature_c": 3}'}]
    reply = client.chat.completions.create(model="chain-studio-demo-model", messages=fixed)
    assert reply.choices[0].message.role == "assistant"


def test_demo_model_rejects_an_orphan_with_openais_text(demo_server):
    client = openai.OpenAI(base_url=demo_server.base_url, api_key="test-key", max_retries=0)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="m", messages=[{"role": "tool", "tool_call_id": "x", "content": "1"},
                                                            {"role": "user", "content": "hi"}])
    assert caught.value.response.json()["error"]["message"] == (
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.")


def _growing_trace(n_calls: int, broken_at: int | None = None) -> Trace:
    """A full-history trace: every call re-sends everything so far."""
    messages: list = [{"role": "system", "content": "be brief"}]
    calls = []
    for k in range(n_calls):
        messages = messages + [{"role": "user", "content": f"question {k}"}]
        if k % 3 == 1:
            messages = messages + [{"role": "assistant", "content": None, "tool_calls": [_call(f"call_{k}")]}]
            if k != broken_at:
                messages = messages + [{"role": "tool", "tool_call_id": f"call_{k}", "content": "ok"}]
        calls.append(Call(index=k, request={"model": "m", "messages": messages,
                                            "tools": [{"type": "function", "function": {"name": "get_weather"}}]}))
        messages = messages + [{"role": "assistant", "content": f"answer {k}"}]
    return Trace(source="synthetic", format="request-jsonl", calls=calls)


@pytest.mark.parametrize("broken_at", [None, 4])
def test_lint_trace_resuming_gives_the_same_findings_as_linting_each_call(broken_at):
    trace = _growing_trace(40, broken_at)
    expected = [f for c in trace.calls for f in lint_request(c.request, call=c.index)]
    assert [f.export() for f in lint_trace(trace)] == [f.export() for f in expected]
    if broken_at is not None:
        assert {f.call for f in expected if f.rule == "missing-tool-result"} == set(range(broken_at, 40))


def test_lint_trace_when_payloads_shrink_or_change_tools():
    a = {"role": "user", "content": "a"}
    orphan = {"role": "tool", "tool_call_id": "x", "content": "1"}
    trace = Trace(source="t", format="x", calls=[
        Call(index=0, request={"messages": [a, orphan]}),
        Call(index=1, request={"messages": [orphan]}),
        Call(index=2, request={"messages": [orphan, a], "tools": []}),
        Call(index=3, request={"messages": "not a list"}),
    ])
    got = [(f.call, f.rule, f.index) for f in lint_trace(trace)]
    assert got == [(0, "orphan-tool", 1), (1, "orphan-tool", 0), (2, "empty-tools", None), (2, "orphan-tool", 0),
                   (2, "user-after-tool", 1), (3, "invalid-messages", None)]
    assert lint_payload([a, orphan])[0].call == 0
