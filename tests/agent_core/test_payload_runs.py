"""An imported full-history log keeps each call's messages as runs over one shared array: memory per call is O(1)
beyond the messages it adds, and every call still gives exactly the body its line sent."""
from __future__ import annotations

import json

from agent_core.ingest.detect import load_any
from agent_core.lint.native import trace_profile
from agent_core.trace.payload import FromPayload


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _full_history_log(tmp_path, calls: int, name: str = "log.jsonl"):
    """A tool round every third call; each line re-sends every earlier message, as an app without trimming does."""
    tools = [{"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}]
    messages: list = [{"role": "system", "content": "You are terse."}]
    lines = []
    for k in range(calls):
        messages.append({"role": "user", "content": f"question {k}"})
        lines.append(json.dumps({"request": {"model": "gpt-4o-mini", "messages": messages, "tools": tools,
                                             "temperature": 0},
                                 "response": {"choices": [{"message": {"role": "assistant", "content": f"a{k}"}}]}},
                                ensure_ascii=False))
        if k % 3 == 2:
            messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{k}", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]})
            messages.append({"role": "tool", "tool_call_id": f"call_{k}", "content": f"result {k}"})
        else:
            messages.append({"role": "assistant", "content": f"a{k}"})
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, lines


def _footprint(trace) -> tuple[int, int, int]:
    """Run entries over all calls, shared array length, and message slots the calls' payloads hold (what a list
    per call would cost)."""
    parts = sum(len(c.payload.parts) for c in trace.calls)
    return parts, len(trace.calls[0].payload.added), sum(len(c.payload) for c in trace.calls)


def test_a_full_history_logs_calls_share_their_messages(tmp_path):
    small, _ = _full_history_log(tmp_path, 100, "small.jsonl")
    big, lines = _full_history_log(tmp_path, 200, "big.jsonl")
    a, b = load_any(small), load_any(big)
    (parts_a, added_a, slots_a), (parts_b, added_b, slots_b) = _footprint(a), _footprint(b)
    assert all(c.payload is not None for c in b.calls)
    assert parts_b == len(b.calls)                       # one run per call: O(1) beyond its new messages
    last_sent = json.loads(lines[-1])["request"]["messages"]     # a full history: every message sent, once
    assert added_b == len(last_sent) == len(b.stream) - 1         # each distinct message once (+ the last reply)
    assert slots_b > 3.9 * slots_a                       # what per-call lists would hold grows quadratically ...
    assert parts_b == 2 * parts_a and added_b < 2.1 * added_a    # ... what is kept, linearly
    for call in b.calls:                                 # nothing per call but its skeleton and its runs
        skeleton = FromPayload.stored(call, "request")
        assert skeleton["messages"] is None and skeleton["tools"] is None
        assert not call.__dict__.get("_message_ids")
    # and each call is exactly what its line sent (the real json library on that line alone)
    by_id = {m.id: m for m in b.stream}
    for call, line in zip(b.calls, lines):
        sent = json.loads(line)["request"]
        assert _dumps(call.request) == _dumps(sent)
        assert list(call.request) == list(sent)          # key order of the body kept
        assert [_dumps(by_id[i].to_openai()) for i in call.message_ids] == [_dumps(m) for m in sent["messages"]]


def test_a_trimmed_log_gives_each_call_what_it_sent(tmp_path):
    path, lines = _full_history_log(tmp_path, 60)
    trimmed = []
    for line in lines:
        row = json.loads(line)
        row["request"]["messages"] = row["request"]["messages"][:1] + row["request"]["messages"][1:][-7:]
        trimmed.append(json.dumps(row))
    path.write_text("\n".join(trimmed) + "\n", encoding="utf-8")
    trace = load_any(path)
    for call, line in zip(trace.calls, trimmed):
        assert _dumps(call.request) == _dumps(json.loads(line)["request"])
    assert len(trace.calls[0].payload.added) == len(trace.stream) - 1


def test_an_anthropic_body_is_kept_whole_and_judged_by_its_content_blocks(tmp_path):
    """The Messages API is told from a content block type Chat Completions does not have (``tool_use``)."""
    history = [{"role": "user", "content": "weather?"},
               {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "w", "input": {}}]},
               {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sun"}]}]
    path = tmp_path / "anthropic.jsonl"
    path.write_text("\n".join(json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": history[:n]})
                              for n in (1, 3)) + "\n", encoding="utf-8")
    trace = load_any(path)
    assert trace.calls[0].payload is not None and trace.calls[1].payload is None
    assert trace.calls[1].request["messages"] == history
    assert trace_profile(trace) == "openai"           # the first call has no sign of the Messages API ...
    single = tmp_path / "second.jsonl"
    single.write_text(path.read_text(encoding="utf-8").splitlines()[1] + "\n\n", encoding="utf-8")
    assert trace_profile(load_any(single)) == "anthropic"    # ... the second one has


def test_calls_keep_one_skeleton_only_while_its_bytes_are_the_same(tmp_path):
    """Consecutive calls whose other request keys serialize the same share one skeleton object; a value that is
    equal but written differently (0 / 0.0 / -0.0 / false, another key order) gets its own, and every call
    still gives what its line sent (the real json library on that line)."""
    lines, messages = [], [{"role": "system", "content": "s"}]
    heads = [{"model": "m", "temperature": 0}, {"model": "m", "temperature": 0}, {"model": "m", "temperature": 0.0},
             {"model": "m", "temperature": -0.0}, {"model": "m", "temperature": False},
             {"temperature": False, "model": "m"}, {"temperature": False, "model": "m"}]
    for k, head in enumerate(heads):
        messages = messages + [{"role": "user", "content": f"q{k}"}]
        request = {**head, "messages": messages}
        lines.append(json.dumps({"request": request, "response": {"choices": [{"message": {
            "role": "assistant", "content": f"a{k}"}}]}}))
        messages = messages + [{"role": "assistant", "content": f"a{k}"}]
    path = tmp_path / "heads.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    trace = load_any(path)
    skeletons = [FromPayload.stored(c, "request") for c in trace.calls]
    assert all(c.payload is not None for c in trace.calls)
    assert [skeletons[k] is skeletons[k - 1] for k in range(1, len(heads))] == \
        [True, False, False, False, False, True]
    for call, line in zip(trace.calls, lines):
        assert _dumps(call.request) == _dumps(json.loads(line)["request"])
