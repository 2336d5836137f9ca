"""The OTLP exporter and `chain-studio open URL` against a real Arize Phoenix server (started here, offline).

One Phoenix for the module, on 127.0.0.1 and free ports, its database in a temp dir. It runs from its own
virtualenv (scripts/phoenix_venv.sh; arize-phoenix would move packages the project uses), and the test is
skipped, saying so, when that venv is missing. Every assertion about what Phoenix shows reads Phoenix's REST API
(``/v1/projects``, ``/v1/projects/{id}/spans``) -- the messages there are Phoenix's own conversion of our spans.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from agent_core.core.paths import PROJECT_ROOT
from agent_core.ingest.detect import load_any

PHOENIX_VENV = Path(os.environ.get("CHAIN_STUDIO_PHOENIX_VENV",
                                   Path.home() / ".cache" / "chain-studio" / "phoenix-venv"))
ORPHAN = PROJECT_ROOT / "sample_traces" / "naive_trim_orphan.jsonl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str):
    with urllib.request.urlopen(url, timeout=30) as response:
        return json.loads(response.read())


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory):
    python = PHOENIX_VENV / "bin" / "python"
    installing = PHOENIX_VENV.with_name(PHOENIX_VENV.name + ".installing")   # .ci/run installs it meanwhile
    waited = time.monotonic() + 900
    while installing.exists() and time.monotonic() < waited:
        time.sleep(2)
    if not python.exists() or installing.exists():
        pytest.skip(f"no Arize Phoenix venv at {PHOENIX_VENV}: run scripts/phoenix_venv.sh (needs the package registry)")
    workdir = tmp_path_factory.mktemp("phoenix")
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "PHOENIX_"))}
    env.update(PHOENIX_WORKING_DIR=str(workdir), PHOENIX_HOST="127.0.0.1", PHOENIX_PORT=str(port),
               PHOENIX_GRPC_PORT=str(_free_port()), PHOENIX_TELEMETRY_ENABLED="false")
    log = open(workdir / "phoenix.log", "wb")       # noqa: SIM115 -- closed in the teardown
    proc = subprocess.Popen([str(python), "-m", "phoenix.server.main", "serve"], env=env, stdout=log,
                            stderr=subprocess.STDOUT, cwd=workdir)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail("Phoenix exited: " + (workdir / "phoenix.log").read_text(errors="replace")[-2000:])
            try:
                with urllib.request.urlopen(base + "/healthz", timeout=2) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("Phoenix did not answer /healthz within 240 s")
            time.sleep(0.5)
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def _project_id(base: str, name: str) -> str:
    """Phoenix makes a project when it ingests the project's first span, asynchronously: wait for it (a full suite's
    load once made the first look come too early)."""
    deadline = time.monotonic() + 60
    while True:
        for project in _get(base + "/v1/projects")["data"]:
            if project["name"] == name:
                return project["id"]
        if time.monotonic() > deadline:
            raise AssertionError(f"no project {name!r} in Phoenix")
        time.sleep(0.5)


def _llm_spans(base: str, project: str, expected: int) -> list[dict]:
    """Phoenix ingests asynchronously: wait until it shows ``expected`` LLM spans."""
    deadline = time.monotonic() + 60
    while True:
        try:
            spans = _get(f"{base}/v1/projects/{project}/spans?limit=1000&span_kind=LLM")["data"]
        except urllib.error.HTTPError:          # the project appears with its first span
            spans = []
        if len(spans) >= expected or time.monotonic() > deadline:
            return sorted(spans, key=lambda s: s["start_time"])
        time.sleep(0.5)


def _phoenix_messages(attrs: dict) -> list[dict]:
    """The input messages as Phoenix shows them (its OpenInference attributes)."""
    out: dict[int, dict] = {}
    for key, value in attrs.items():
        parts = key.split(".")
        if key.startswith("llm.input_messages.") and parts[3] == "message":
            out.setdefault(int(parts[2]), {})[".".join(parts[4:])] = value
    return [out[i] for i in sorted(out)]


def _as_phoenix_shows(message: dict) -> dict:
    """What Phoenix must show for a Chat Completions message sent (role, text, tool calls, answered id)."""
    shown = {"role": message["role"]}
    if isinstance(message.get("content"), str):
        shown["content"] = message["content"]
    for k, tc in enumerate(message.get("tool_calls") or []):
        shown[f"tool_calls.{k}.tool_call.id"] = tc["id"]
        shown[f"tool_calls.{k}.tool_call.function.name"] = tc["function"]["name"]
        shown[f"tool_calls.{k}.tool_call.function.arguments"] = tc["function"]["arguments"]
    if message.get("tool_call_id"):
        shown["tool_call_id"] = message["tool_call_id"]
    return shown


def _cli(*args: str, env: dict | None = None, stdin: str | None = None) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "agent_core.cli", *args], input=stdin, capture_output=True,
                          text=True, timeout=180, cwd=PROJECT_ROOT, env={**os.environ, **(env or {})}, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc


def test_a_live_chat_shows_in_phoenix_with_its_messages_and_open_reproduces_it(phoenix, tmp_path):
    recorded = tmp_path / "chat.jsonl"
    _cli("chat", "--trace", str(recorded), "--otlp-endpoint", phoenix,
         stdin="帮我查一下成都天气\n北京呢？\n谢谢\n",
         env={"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=live-chat"})
    trace = load_any(recorded)
    assert len(trace.calls) >= 4 and any(c.tools for c in trace.calls)
    project = _project_id(phoenix, "live-chat")
    spans = _llm_spans(phoenix, project, len(trace.calls))
    assert len(spans) == len(trace.calls)
    assert len({s["context"]["trace_id"] for s in spans}) == 1            # one trace per conversation
    for span, call in zip(spans, trace.calls):
        assert _phoenix_messages(span["attributes"]) == [_as_phoenix_shows(m) for m in call.messages]
        assert span["attributes"]["llm.model_name"] == call.request["model"]
        assert span["attributes"]["llm.token_count.prompt"] == call.usage["prompt_tokens"]
    out = tmp_path / "from-phoenix.jsonl"
    proc = _cli("open", f"{phoenix}/projects/{project}", "--out", str(out))
    assert "page 1" in proc.stderr
    again = load_any(out)
    assert [c.request for c in again.calls] == [c.request for c in trace.calls]
    assert [c.response for c in again.calls] == [c.response for c in trace.calls]
    assert [c.messages for c in again.calls] == [c.messages for c in trace.calls]


def test_an_exported_trace_is_read_back_page_by_page_with_its_failures(phoenix, tmp_path):
    from agent_core.ingest.phoenix import open_project

    _cli("export", str(ORPHAN), "--as", "otlp", "--otlp-endpoint", phoenix + "/v1/traces",
         env={"OTEL_RESOURCE_ATTRIBUTES": "openinference.project.name=orphan-sample"})
    trace = load_any(ORPHAN)
    spans = _llm_spans(phoenix, "orphan-sample", len(trace.calls))
    # the SDK's guidance: instrumentation leaves a success UNSET and marks a failure ERROR
    assert [s["status_code"] for s in spans] == ["ERROR" if c.failed else "UNSET" for c in trace.calls]
    pages = []
    again = open_project(f"{phoenix}/projects/orphan-sample", page_size=2, progress=lambda p, n: pages.append((p, n)))
    assert pages == [(1, 2), (2, 4), (3, 6), (4, 7)]
    assert [c.request for c in again.calls] == [c.request for c in trace.calls]
    assert [c.status for c in again.calls] == [c.status for c in trace.calls]
    assert [c.started_at[:23] for c in again.calls] == [c.started_at[:23] for c in trace.calls]


def test_spans_without_the_exact_body_are_rebuilt_from_what_phoenix_shows(phoenix, tmp_path):
    """Spans as an instrumentation writes them (gen_ai.* only, no request body), made by the real SDK."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from agent_core.ingest.phoenix import open_project

    provider = TracerProvider(resource=Resource.create({"openinference.project.name": "genai-only"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=phoenix + "/v1/traces")))
    history = [{"role": "system", "parts": [{"type": "text", "content": "你是天气助手。"}]},
               {"role": "user", "parts": [{"type": "text", "content": "成都天气？"}]},
               {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_1", "name": "get_weather",
                                                "arguments": "{\"city\": \"成都\"}"}]},
               {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_1",
                                           "response": "{\"condition\": \"多云\"}"}]}]
    with provider.get_tracer("test").start_as_current_span("chat gpt-4o-mini") as span:
        span.set_attributes({"gen_ai.operation.name": "chat", "gen_ai.provider.name": "openai",
                             "gen_ai.request.model": "gpt-4o-mini",
                             "gen_ai.input.messages": json.dumps(history, ensure_ascii=False),
                             "gen_ai.output.messages": json.dumps([{"role": "assistant", "finish_reason": "stop",
                                                                    "parts": [{"type": "text", "content": "多云。"}]}],
                                                                  ensure_ascii=False)})
    provider.shutdown()
    _llm_spans(phoenix, "genai-only", 1)
    trace = open_project(f"{phoenix}/projects/genai-only")
    assert trace.calls[0].messages == [
        {"role": "system", "content": "你是天气助手。"}, {"role": "user", "content": "成都天气？"},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {
            "name": "get_weather", "arguments": "{\"city\": \"成都\"}"}}]},
        {"role": "tool", "content": "{\"condition\": \"多云\"}", "tool_call_id": "call_1"}]
    assert trace.calls[0].reply == {"role": "assistant", "content": "多云。"}
    assert any("rebuilt from llm.input_messages" in w for w in trace.warnings)
