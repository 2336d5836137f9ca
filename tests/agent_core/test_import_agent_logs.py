"""Files users already have: OpenAI Agents SDK trace exports and Inspect AI eval logs.

The Agents SDK export is produced in the test by the real ``openai-agents`` package (a ``TracingProcessor``
that appends every exported trace and span to a JSONL file, as a file exporter does) running an agent with a
tool against the demo model. The Inspect logs were produced once by the real ``inspect-ai`` against the demo
model (``tests/fixtures/foreign/inspect/make_inspect_log.py``; inspect-ai needs a venv of its own), with the
request bodies the demo model received saved beside them (``sent.json``): the import is checked against those.
"""
from __future__ import annotations

import asyncio
import json

import pytest

from agent_core.core.errors import MalformedTraceError
from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_request, lint_trace

INSPECT = PROJECT_ROOT / "tests" / "fixtures" / "foreign" / "inspect"


def _no_new_findings(trace, sent):
    real = {(i, f.rule) for i, body in enumerate(sent) for f in lint_request(body, call=i)}
    assert {(f.call, f.rule) for f in lint_trace(trace)} <= real


def write_agents_export(path, base_url: str) -> None:
    """Run a one-tool agent with the real Agents SDK; every trace and span export goes to ``path`` (JSONL)."""
    agents = pytest.importorskip("agents")
    from agents.tracing import TracingProcessor
    from openai import AsyncOpenAI

    class FileProcessor(TracingProcessor):
        def __init__(self):
            self.file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in shutdown)

        def _write(self, item) -> None:
            exported = item.export()
            if exported:
                self.file.write(json.dumps(exported, ensure_ascii=False) + "\n")
                self.file.flush()

        def on_trace_start(self, trace): pass

        def on_trace_end(self, trace): self._write(trace)

        def on_span_start(self, span): pass

        def on_span_end(self, span): self._write(span)

        def shutdown(self): self.file.close()

        def force_flush(self): self.file.flush()

    @agents.function_tool
    def get_weather(city: str) -> str:
        """The weather in a city now."""
        return json.dumps({"city": city, "condition": "sunny", "temperature_c": 21, "humidity": 40})

    processor = FileProcessor()
    agents.set_tracing_disabled(False)       # global in the SDK: another test may have turned it off
    agents.set_trace_processors([processor])
    try:
        agent = agents.Agent(name="weather", instructions="You are terse.", tools=[get_weather],
                             model=agents.OpenAIChatCompletionsModel(
                                 model="demo", openai_client=AsyncOpenAI(base_url=base_url, api_key="sk-test")))
        result = asyncio.run(agents.Runner.run(agent, "What is the weather in Paris?"))
        assert "sunny" in result.final_output
    finally:
        agents.set_trace_processors([])
        processor.shutdown()


def test_agents_sdk_export_imports_the_exact_messages(demo_server, tmp_path):
    path = tmp_path / "agents.jsonl"
    write_agents_export(path, demo_server.base_url)
    sent = [json.loads(b) for b in demo_server.received]
    trace = load_any(path)
    assert trace.format == "openai-agents" and len(trace.calls) == len(sent) == 2
    for call, body in zip(trace.calls, sent):
        assert call.request["messages"] == body["messages"]          # the generation span's input, exactly
        assert call.request["model"] == body["model"] and "tools" not in call.request
    assert trace.calls[0].reply["tool_calls"][0]["function"] == {"name": "get_weather", "arguments": '{"city": "Paris"}'}
    assert trace.calls[1].reply["content"] == "Paris: sunny, 21°C, humidity 40%."
    assert trace.meta["tools_recorded"] is False and "tools" in trace.meta["unrecorded"]
    assert any("not model calls" in w for w in trace.warnings)         # agent / function / turn spans, named
    _no_new_findings(trace, sent)
    # the same items as the SDK's backend exporter posts them: {"data": [...]}
    items = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    (tmp_path / "agents.json").write_text(json.dumps({"data": items}), encoding="utf-8")
    again = load_any(tmp_path / "agents.json")
    assert [c.request for c in again.calls] == [c.request for c in trace.calls]


@pytest.mark.parametrize("name", ["weather.json", "weather-converted.json"])
def test_inspect_eval_log_imports_the_exact_request_bodies(name):
    sent = json.loads((INSPECT / "sent.json").read_text(encoding="utf-8"))
    trace = load_any(INSPECT / name)
    assert trace.format == "inspect-eval" and len(trace.calls) == len(sent) == 2
    assert [c.request for c in trace.calls] == sent                    # call.request minus the SDK's kwargs
    assert trace.calls[0].response["choices"][0]["finish_reason"] == "tool_calls"
    assert any("extra_headers" in w for w in trace.warnings)
    assert trace.meta.get("tools_recorded", True) is not False and "unrecorded" not in trace.meta
    _no_new_findings(trace, sent)


def test_an_inspect_eval_zip_says_how_to_convert_it():
    with pytest.raises(MalformedTraceError, match="inspect log convert --to json"):
        load_any(INSPECT / "weather.eval")
