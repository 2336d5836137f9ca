"""Hostile input: random and mutated traces, payloads and JSONL never cause an uncaught exception;
every rejection is one line that names the location."""
from __future__ import annotations

import json
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.core.errors import ChainStudioError, MalformedTraceError
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import parse_any
from agent_core.lint.scan import lint_payload, lint_trace
from agent_core.replay.engine import replay
from agent_core.trace.reader import parse_trace
from agent_core.trim.registry import make_policy

SAMPLE = (SAMPLE_TRACES / "classic_remembers.jsonl").read_bytes()
LOCATION = re.compile(r"^<fuzz>(:\d+(:\d+)?)?: \S")
FUZZ_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))

scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(
    st.sampled_from(["role", "content", "tool_calls", "tool_call_id", "id", "function", "name", "arguments",
                     "messages", "type", "traj", "history", "model", "tools", "request", "response", "x"]), c,
    max_size=5), max_leaves=25)
roles = st.sampled_from(["system", "user", "assistant", "tool", "function", "developer", "bogus", None, 3])
messages = st.lists(st.fixed_dictionaries({"role": roles}, optional={
    "content": st.none() | st.text(max_size=10) | st.lists(json_values, max_size=2),
    "tool_calls": st.none() | st.lists(st.fixed_dictionaries({}, optional={
        "id": st.none() | st.sampled_from(["a", "b", "c" * 50]) | st.integers(),
        "type": st.just("function"),
        "function": st.none() | st.fixed_dictionaries({}, optional={
            "name": st.none() | st.sampled_from(["f", "bad name", ""]) | st.integers(),
            "arguments": st.none() | st.sampled_from(["{}", "[1]", "{bad", ""]) | json_values})}), max_size=3),
    "tool_call_id": st.none() | st.sampled_from(["a", "b", "zz"]),
    "name": st.none() | st.text(max_size=5)}), max_size=8)

checked = {"n": 0}


def _load(data: bytes | str):
    """Load or reject; a rejection must be one line naming the source (and line:column when known)."""
    checked["n"] += 1
    try:
        return parse_any(data, "<fuzz>")
    except MalformedTraceError as err:
        text = str(err)
        assert "\n" not in text and LOCATION.match(text), text
        return None


def _exercise(trace) -> None:
    lint_trace(trace)
    lint_trace(trace, profile="mistral")
    for name in ("max-messages", "naive-drop-oldest", "token-budget", "sliding-window"):
        try:
            replay(trace, make_policy(name))
        except ChainStudioError as err:        # e.g. a trace with no stream to replay: a sentence, not a crash
            assert "\n" not in str(err)


@FUZZ_SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes(data):
    _load(data)


@FUZZ_SETTINGS
@given(json_values)
def test_random_json_documents(value):
    trace = _load(json.dumps(value))
    if trace is not None:
        _exercise(trace)


@FUZZ_SETTINGS
@given(st.lists(json_values, min_size=2, max_size=5))
def test_random_jsonl(lines):
    trace = _load("\n".join(json.dumps(v) for v in lines))
    if trace is not None:
        _exercise(trace)


@FUZZ_SETTINGS
@given(messages, st.none() | st.lists(json_values, max_size=2))
def test_random_payloads_lint_and_load(msgs, tools):
    for profile in ("openai", "mistral", "ollama", "deepseek"):
        for finding in lint_payload(msgs, tools, profile=profile):
            assert finding.rule and finding.severity in ("error", "warning", "info")
    body = {"model": "gpt-4o", "messages": msgs}
    trace = _load(json.dumps(body))
    if trace is not None:
        _exercise(trace)


@FUZZ_SETTINGS
@given(st.data())
def test_mutated_sample_trace(data):
    raw = bytearray(SAMPLE)
    for _ in range(data.draw(st.integers(min_value=1, max_value=4))):
        op = data.draw(st.sampled_from(["flip", "delete", "insert", "truncate"]))
        pos = data.draw(st.integers(min_value=0, max_value=len(raw) - 1))
        if op == "flip":
            raw[pos] = data.draw(st.integers(min_value=0, max_value=255))
        elif op == "delete":
            del raw[pos:pos + data.draw(st.integers(min_value=1, max_value=40))]
        elif op == "insert":
            raw[pos:pos] = data.draw(st.sampled_from([b"{", b"}", b"\n", b'"', b"null", b"[[", b"\xff", b"9" * 30]))
        else:
            del raw[pos:]
        if not raw:
            raw = bytearray(b" ")
    trace = _load(bytes(raw))
    if trace is not None:
        _exercise(trace)


def test_deeply_nested_json_does_not_crash():
    for text in ("[" * 100_000, "[" * 100_000 + "]" * 100_000, '{"a":' * 50_000 + "1" + "}" * 50_000):
        assert _load(text) is None
    deep_line = '{"type":"header","format":"chain-studio-trace","version":1}\n' + "[" * 100_000 + "]" * 100_000 + "\n"
    try:
        parse_trace(deep_line, "<fuzz>")
        raise AssertionError("a nested non-object line must be refused")
    except MalformedTraceError as err:
        assert str(err).startswith("<fuzz>:2:")


def test_a_20_mb_single_message_is_handled():
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "x" * (20 * 1024 * 1024)}]}
    trace = parse_any(json.dumps(body), "<big>")
    assert len(trace.calls) == 1 and len(trace.calls[0].messages[0]["content"]) == 20 * 1024 * 1024
    assert not [f for f in lint_trace(trace) if f.severity == "error"]


def test_a_100_mb_file_is_refused_with_one_sentence(tmp_path):
    from agent_core.ingest.detect import load_any
    from agent_core.trace.reader import read_trace

    big = tmp_path / "huge.jsonl"
    with open(big, "wb") as f:
        f.truncate(100 * 1024 * 1024)      # sparse: costs no disk, and must not be read at all
    for loader in (load_any, read_trace):
        try:
            loader(big)
            raise AssertionError("a 100 MB file must be refused")
        except MalformedTraceError as err:
            assert str(err) == (f"{big}: is 100 MB; Chain Studio opens files up to 64 MB "
                                "(set CHAIN_STUDIO_MAX_INPUT_MB to raise the limit)")


def _documented_message_limit() -> int:
    """The per-request limit as Anthropic's SDK documents it (the highest any provider documents)."""
    import inspect

    import anthropic.types.message_create_params as params
    found = re.search(r"There is a limit of ([\d,]+) messages in a single request", inspect.getsource(params))
    assert found, "the anthropic SDK no longer documents its per-request message limit"
    return int(found.group(1).replace(",", ""))


def test_a_body_past_the_documented_message_limit_is_refused_in_one_line():
    from agent_core.ingest.payload_log import trace_from_requests

    n = _documented_message_limit() + 1
    turns = [{"role": "user", "content": "m"}] * n
    shapes = {
        "chat completions body": json.dumps({"model": "gpt-4o", "messages": turns}),
        "bare messages array": json.dumps(turns),
        "payload log line": json.dumps({"model": "gpt-4o", "messages": turns[:2]}) + "\n"
                            + json.dumps({"model": "gpt-4o", "messages": turns}) + "\n",
        "responses body": json.dumps({"model": "gpt-4o", "input": turns}),
        "gemini body": json.dumps({"contents": [{"role": "user", "parts": [{"text": "m"}]}] * n}),
    }
    for shape, text in shapes.items():
        try:
            parse_any(text, "<big>")
            raise AssertionError(f"a {shape} of {n:,} messages must be refused")
        except MalformedTraceError as err:
            assert re.fullmatch(rf"<big>: request [01] holds {n:,} messages; no provider accepts more than "
                                rf"{n - 1:,} in one request .*CHAIN_STUDIO_MAX_BODY_MESSAGES.*", str(err)), shape
    try:
        trace_from_requests([{"model": "gpt-4o", "messages": turns}], source="<spans>")
        raise AssertionError("the importers' common path must refuse it too")
    except MalformedTraceError as err:
        assert str(err).startswith(f"<spans>: request 0 holds {n:,} messages")


def test_a_body_at_the_message_limit_is_read(monkeypatch):
    import agent_core.core.limits as limits

    monkeypatch.setattr(limits, "MAX_BODY_MESSAGES", 3)
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                           {"role": "user", "content": "c"}]}
    assert len(parse_any(json.dumps(body), "<ok>").calls[0].messages) == 3
    body["messages"].append({"role": "assistant", "content": "d"})
    try:
        parse_any(json.dumps(body), "<over>")
        raise AssertionError("4 messages over a limit of 3 must be refused")
    except MalformedTraceError as err:
        assert str(err).startswith("<over>: request 0 holds 4 messages; no provider accepts more than 3 ")


def test_the_unparsed_count_agrees_with_the_parsed_one(monkeypatch):
    """The scan that refuses a long body before parsing it counts what the parsed body holds: brackets and
    quotes inside strings, arrays inside messages and a "messages" key deeper down do not count."""
    import agent_core.core.limits as limits

    monkeypatch.setattr(limits, "MAX_BODY_MESSAGES", 3)
    tricky = [{"role": "user", "content": 'a "role" [{ "x": ] } \\" ['},
              {"role": "assistant", "content": None, "tool_calls": [{"id": "c", "type": "function", "function": {
                  "name": "f", "arguments": "{\"role\": [1, {\"role\": 2}]}"}}]},
              {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "role"}]}]
    fits = {"model": "gpt-4o", "metadata": {"messages": [{"role": "x"}] * 5}, "messages": tricky}
    assert len(parse_any(json.dumps(fits), "<fits>").calls[0].messages) == 3
    over = {"model": "gpt-4o", "messages": tricky + [{"role": "user", "content": "]}"}]}
    for text in (json.dumps(over), json.dumps(over, indent=2)):
        try:
            parse_any(text, "<over>")
            raise AssertionError("4 messages over a limit of 3 must be refused")
        except MalformedTraceError as err:
            assert str(err).startswith("<over>: request 0 holds 4 messages; ")
