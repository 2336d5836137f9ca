"""The real OpenAI Agents SDK with its default model (the Responses API) through the recording proxy to the demo model.

No network: the SDK's client points at the proxy with a dummy key, and its tracing exporter is disabled.
"""
from __future__ import annotations

import asyncio
import json

import pytest

agents = pytest.importorskip("agents", reason="openai-agents is in the test extra")

from openai import AsyncOpenAI

from agent_core.ingest.detect import load_any
from agent_core.lint.scan import lint_trace
from agent_core.replay.responses import replay_responses
from agent_core.serve.proxy import RecordingProxy
from agent_core.trim.window import KeepAll


@agents.function_tool
def get_weather(city: str) -> str:
    """Weather in a city."""
    return json.dumps({"city": city, "condition": "sunny", "temperature_c": 21, "humidity": 40})


@pytest.fixture
def no_tracing():
    """The SDK's tracing off for the test only (it is global: test_import_agent_logs needs it on)."""
    agents.set_tracing_disabled(True)
    yield
    agents.set_tracing_disabled(False)


def test_agents_sdk_default_model_runs_through_the_proxy(demo_server, tmp_path, no_tracing):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        async def runs() -> None:   # one event loop: the async client belongs to it
            client = AsyncOpenAI(base_url=proxy.base_url, api_key="sk-dummy-agents", max_retries=0)
            model = agents.OpenAIResponsesModel(model="gpt-4.1", openai_client=client)   # the SDK's default kind
            agent = agents.Agent(name="helper", instructions="Be brief.", tools=[get_weather], model=model)
            result = await agents.Runner.run(agent, "Weather in Paris?")
            assert result.final_output == "Paris: sunny, 21°C, humidity 40%."
            first = await agents.Runner.run(agent, "Hi, my name is Ada.")
            again = await agents.Runner.run(agent, "What is my name?", previous_response_id=first.last_response_id)
            assert again.final_output == "Your name is Ada."
            run = agents.Runner.run_streamed(agent, "Weather in Paris?")
            async for _ in run.stream_events():
                pass
            assert run.final_output == "Paris: sunny, 21°C, humidity 40%."

        asyncio.run(runs())
        proxy.stop()
        assert proxy.errors == []
        files = sorted(proxy.trace_files())
    assert len(files) == 3           # the tool run, the previous_response_id pair, the streamed tool run
    calls = 0
    for path in files:
        trace = load_any(str(path))
        assert [f for f in lint_trace(trace)] == []
        for replayed, c in zip(replay_responses(trace, KeepAll()), trace.calls):
            assert replayed.native_items() == demo_server.responses.used[c.response["id"]]["input"]
            calls += 1
    assert calls == 6
