"""Every demo-model fault on the Responses, Anthropic Messages and Gemini endpoints, in that API's own shape,
through the real SDKs (openai's Responses via ``LLMClient``, anthropic, google-genai) and the recording proxy,
over real HTTP (issue 17): recorded, survived, one line.

The expected error classes and statuses are the SDKs' own (``anthropic.RateLimitError`` for a 429, google-genai's
``ClientError`` with ``code`` ...), which parse each provider's documented error envelope; a cut stream is judged
by the proxy's record (the SDKs' stream accumulators return what arrived without complaint).
"""
from __future__ import annotations

import anthropic
import httpx
import httpx2
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from agent_core.chat.client import Endpoint, LLMClient
from agent_core.core.errors import EndpointError
from agent_core.ingest.detect import load_any
from agent_core.serve.proxy import RecordingProxy
from agent_core.trace.reader import read_trace
from agent_core.trace.writer import TraceWriter

FAULTS = ["400", "401", "429", "500", "timeout", "malformed", "cut-stream", "cut-stream-once"]
STATUS = {"400": 400, "401": 401, "429": 429, "500": 500, "timeout": 504}
RESPONSES_WORDS = {"400": "HTTP 400: Invalid parameter", "401": "(check OPENAI_API_KEY or --api-key)",
                   "429": "(retry after 1 s)", "500": "HTTP 500", "timeout": "HTTP 504", "malformed": "not valid JSON",
                   "cut-stream": "", "cut-stream-once": ""}


def _proxy_calls(proxy: RecordingProxy) -> list:
    return [c for path in proxy.trace_files() for c in load_any(path).calls]


def _recorded_failure(calls: list, fault: str) -> None:
    """The proxy kept the failed exchange: its status, or the cut / the body that is not JSON."""
    attempts = [a for c in calls for a in c.attempts]
    if fault in STATUS:
        assert any(a.status == STATUS[fault] for a in attempts), [(a.status, a.error) for a in attempts]
    else:
        assert any(a.error for a in attempts), [(a.status, a.error) for a in attempts]
    assert any(a.status == 200 and not a.error for a in attempts), "the call after the fault is recorded too"


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault", FAULTS)
def test_responses_faults_through_the_client_and_proxy(demo_server, tmp_path, fault, stream):
    demo_server.timeout_seconds = 0.3
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        writer = TraceWriter(tmp_path / "t.jsonl")
        client = LLMClient(Endpoint(base_url=proxy.base_url, model="demo"), recorder=writer, max_retries=0,
                           timeout=10.0)
        client.extra_headers["X-Demo-Fault"] = fault
        with pytest.raises(EndpointError) as err:
            client.respond("hi", stream=stream)
        line = str(err.value)
        words = "ended the stream" if fault == "malformed" and stream else RESPONSES_WORDS[fault]
        assert "\n" not in line and words in line, line      # (HTML to a stream request: no events at all)
        if fault.startswith("cut-stream"):
            assert "cut" in line or "ended the stream" in line or "before the response was completed" in line, line
        client.extra_headers.clear()
        assert client.respond("My name is Ann", stream=stream)["status"] == "completed"     # the session goes on
        writer.close()
    failed, ok = read_trace(tmp_path / "t.jsonl").calls
    assert failed.failed and not ok.failed
    assert proxy.errors == []
    _recorded_failure(_proxy_calls(proxy), fault)


def _anthropic(base_url: str, fault: str | None) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=base_url.removesuffix("/v1"), api_key="sk-ant-test", max_retries=0,
                               timeout=10.0, default_headers={"X-Demo-Fault": fault} if fault else None)


ANTHROPIC_ERRORS = {"400": anthropic.BadRequestError, "401": anthropic.AuthenticationError,
                    "429": anthropic.RateLimitError, "500": anthropic.InternalServerError,
                    "timeout": anthropic.APIStatusError}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault", FAULTS)
def test_anthropic_faults_through_the_sdk_and_proxy(demo_server, tmp_path, fault, stream):
    demo_server.timeout_seconds = 0.3
    kwargs = {"model": "claude-sonnet-4-5", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = _anthropic(proxy.base_url, fault)
        if fault in ANTHROPIC_ERRORS:
            with pytest.raises(ANTHROPIC_ERRORS[fault]) as err:
                client.messages.create(**kwargs, stream=stream) if not stream else list(
                    client.messages.create(**kwargs, stream=True))
            assert err.value.status_code == STATUS[fault] and "\n" not in str(err.value)
            assert err.value.body["type"] == "error" and err.value.body["error"]["message"], err.value.body
            if fault == "429":
                assert err.value.response.headers["retry-after"] == "1"
        elif not stream:       # a body that is not JSON, or cut mid-way
            with pytest.raises((anthropic.APIError, ValueError)):
                client.messages.create(**kwargs)
        elif fault == "malformed":     # HTML to a stream request: no event at all (the SDK yields nothing)
            assert list(client.messages.create(**kwargs, stream=True)) == []
        else:      # cut after the first text delta: the events so far, and never message_stop
            kinds = [e.type for e in client.messages.create(**kwargs, stream=True)]
            assert kinds[0] == "message_start" and "message_stop" not in kinds and "content_block_delta" in kinds
        ok = _anthropic(proxy.base_url, None).messages.create(
            **{**kwargs, "messages": [{"role": "user", "content": "My name is Ann"}]})
        assert ok.stop_reason == "end_turn"            # the proxy goes on
    assert proxy.errors == []
    calls = _proxy_calls(proxy)
    _recorded_failure(calls, fault)
    if fault.startswith("cut-stream") and stream:
        assert any(a.error == "stream ended before its last event" for c in calls for a in c.attempts)


def _gemini(base_url: str, fault: str | None) -> genai.Client:
    return genai.Client(api_key="AIzaTestKey", http_options=types.HttpOptions(
        base_url=base_url.removesuffix("/v1"), headers={"X-Demo-Fault": fault} if fault else None))


GEMINI_STATUS = {"400": "INVALID_ARGUMENT", "401": "UNAUTHENTICATED", "429": "RESOURCE_EXHAUSTED",
                 "500": "INTERNAL", "timeout": "DEADLINE_EXCEEDED"}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
@pytest.mark.parametrize("fault", FAULTS)
def test_gemini_faults_through_the_sdk_and_proxy(demo_server, tmp_path, fault, stream):
    demo_server.timeout_seconds = 0.3
    root = demo_server.base_url.removesuffix("/v1")

    def call(client: genai.Client, text: str) -> str:
        if stream:
            return "".join(c.text or "" for c in client.models.generate_content_stream(
                model="gemini-2.5-flash", contents=text))
        return client.models.generate_content(model="gemini-2.5-flash", contents=text).text

    with RecordingProxy(root, port=0, trace_dir=tmp_path / "proxy") as proxy:
        client = _gemini(proxy.base_url, fault)
        if fault in GEMINI_STATUS:
            with pytest.raises(genai_errors.APIError) as err:
                call(client, "hi")
            assert err.value.code == STATUS[fault] and err.value.status == GEMINI_STATUS[fault]
            assert "\n" not in str(err.value)
        elif fault == "malformed" or not stream:   # not JSON, or a plain body cut mid-way (httpx's own error)
            with pytest.raises((genai_errors.APIError, ValueError, httpx.HTTPError, httpx2.HTTPError)) as err:
                call(client, "hi")
            assert "\n" not in str(err.value)
        else:       # the first chunk arrived, the one with finishReason never did
            assert call(client, "hi") == "This ans"
        assert call(_gemini(proxy.base_url, None), "My name is Ann")       # the proxy goes on
    assert proxy.errors == []
    _recorded_failure(_proxy_calls(proxy), fault)
