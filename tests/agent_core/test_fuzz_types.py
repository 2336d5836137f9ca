"""Hypothesis: any JSON value at any path of every importer's format (request body, bare messages, request/response
record, OTLP JSON, AgentScope dump, Chain Studio trace event) loads, lints and replays, or is refused in one line
that names the file; never an exception."""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.core.errors import ChainStudioError, MalformedTraceError
from agent_core.ingest.detect import parse_any
from agent_core.lint.scan import lint_trace
from agent_core.replay.engine import replay
from agent_core.trim.registry import make_policy

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import hostile_inputs

BASES = {"request": hostile_inputs.REQUEST, "messages": hostile_inputs.MESSAGES, "record": hostile_inputs.RECORD,
         "otel": hostile_inputs.OTEL, "agentscope": hostile_inputs.AGENTSCOPE}
TRACE_LINES = hostile_inputs._trace_lines()


def _paths(value, prefix=()):
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


PATHS = {name: [p for p in _paths(base) if p] for name, base in BASES.items()}
scalars = (st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30) | st.floats()
           | st.text(max_size=8) | st.sampled_from(["\ud800", hostile_inputs.MARKUP, "", "x" * 300]))
values = st.recursive(scalars, lambda c: st.lists(c, max_size=3) | st.dictionaries(
    st.sampled_from(["role", "content", "tool_calls", "id", "function", "name", "type", "key", "value"]), c,
    max_size=3), max_leaves=10)
PLACEHOLDER = re.compile(r"\{[A-Za-z_]\w*\}")      # a provider template's slot left unfilled
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))


def _check(text: str) -> None:
    try:
        trace = parse_any(text, "<fuzz>")
    except MalformedTraceError as err:
        assert "\n" not in str(err) and str(err).startswith("<fuzz>") and "Chain Studio bug" not in str(err), str(err)
        return
    raw_template = not PLACEHOLDER.search(text)     # (a "{n}" the input itself holds may be quoted back)
    for profile in ("openai", "mistral", "anthropic", "gemini"):
        for f in lint_trace(trace, profile=profile):
            assert not (raw_template and PLACEHOLDER.search(f.message + (f.api_error or ""))), (profile, f)
    try:
        replay(trace, make_policy("max-messages"))
    except ChainStudioError as err:
        assert "\n" not in str(err)


@SETTINGS
@given(st.sampled_from(sorted(BASES)), st.data(), values)
def test_any_value_at_any_path_of_every_format(name, data, value):
    path = data.draw(st.sampled_from(PATHS[name]))
    _check(json.dumps(hostile_inputs._set(BASES[name], path, value)))


@SETTINGS
@given(st.integers(min_value=0, max_value=len(TRACE_LINES) - 1), st.data(), values)
def test_any_value_at_any_field_of_a_trace_event(line, data, value):
    event = TRACE_LINES[line]
    path = data.draw(st.sampled_from([p for p in _paths(event) if p and p != ("type",)]))
    lines = [json.dumps(e) for e in TRACE_LINES]
    lines[line] = json.dumps(hostile_inputs._set(event, path, value))
    _check("\n".join(lines) + "\n")


def test_an_otlp_time_outside_fixed64_is_no_time():
    """OTLP's ``startTimeUnixNano`` is a ``fixed64`` (opentelemetry-proto trace.proto): a negative or wider value
    is not a time, and reads as none rather than crashing the importer (hypothesis found -62135596800000004097)."""
    from agent_core.ingest.otlp import nanos

    assert nanos({"t": -62_135_596_800_000_004_097}, "t") == 0
    assert nanos({"t": 2 ** 64}, "t") == 0 and nanos({"t": str(2 ** 64)}, "t") == 0
    assert nanos({"t": 2 ** 64 - 1}, "t") == 2 ** 64 - 1 and nanos({"t": "1764000000000000000"}, "t") == 1764000000000000000
