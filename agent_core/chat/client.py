"""The LLM client: the official openai SDK, with every HTTP attempt recorded.

Recording hooks the SDK's own HTTP client through a transport, so the trace
holds the request body exactly as the SDK sent it (not what we meant to
send), the raw response, status, latency and errors; SDK retries pass
through the transport again and show up as separate attempts. Headers are
never recorded, so the API key cannot leak through them; any copy of the
key inside a body or error text is redacted as well.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, Iterator
from urllib.parse import urlsplit

import openai

from agent_core.apis.base import api_for_path
from agent_core.apis.chat_completions import CHAT_COMPLETIONS
from agent_core.apis.responses import RESPONSES
from agent_core.core.errors import EndpointError
from agent_core.core.msg import format_timestamp, utc_now
from agent_core.trace.events import CallAttempt
from agent_core.trace.recorder import NullRecorder, Recorder

_HTTP_CLIENT_CLASS = openai.DefaultHttpxClient
# The SDK ships with httpx or its fork httpx2; use whichever its client class is built on.
_httpx = sys.modules[_HTTP_CLIENT_CLASS.__mro__[1].__module__.split(".")[0]]

DEFAULT_MODEL = "gpt-4o-mini"
REDACTED = "[REDACTED]"


@dataclass(frozen=True)
class Endpoint:
    """Where calls go. ``api_key`` is held in memory only; ``__repr__`` hides it."""

    base_url: str
    model: str
    api_key: str = ""
    is_demo: bool = False

    def __repr__(self) -> str:
        return f"Endpoint(base_url={self.base_url!r}, model={self.model!r}, is_demo={self.is_demo})"

    @property
    def host(self) -> str:
        return urlsplit(self.base_url).netloc or self.base_url


def configured_endpoint(base_url: str | None = None, api_key: str | None = None,
                        model: str | None = None) -> Endpoint | None:
    """The endpoint from arguments, then OPENAI_BASE_URL / OPENAI_API_KEY / CHAIN_STUDIO_MODEL.

    Returns None when neither a key nor a base URL is configured: the caller
    then uses the bundled demo model.
    """
    base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
    model = model or os.environ.get("CHAIN_STUDIO_MODEL") or None
    if not api_key and not base_url:
        return None
    return Endpoint(base_url=base_url or "https://api.openai.com/v1", model=model or DEFAULT_MODEL,
                    api_key=api_key or "not-needed")


def redact(text: str | None, secrets: list[str]) -> str | None:
    if text is None:
        return None
    for s in secrets:
        if s:
            text = text.replace(s, REDACTED)
    return text


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


class _CallContext(threading.local):
    call: int | None = None
    attempts: int = 0
    purpose: str = "chat"
    message_ids: list[str] | None = None


class _RecordingStream(_httpx.SyncByteStream):
    """Passes a streamed body through and records it when it ends (or breaks)."""

    def __init__(self, inner: Any, finish):
        self._inner = inner
        self._finish = finish
        self._chunks: list[bytes] = []
        self._done = False

    def __iter__(self) -> Iterator[bytes]:
        try:
            for chunk in self._inner:
                self._chunks.append(chunk)
                yield chunk
        except Exception as err:
            self._end(f"stream broken: {type(err).__name__}: {err}")
            raise
        self._end(None)

    def _end(self, error: str | None) -> None:
        if not self._done:
            self._done = True
            self._finish(b"".join(self._chunks), error)

    def close(self) -> None:
        self._end(None)
        close = getattr(self._inner, "close", None)
        if close:
            close()


class _RecordingTransport(_httpx.BaseTransport):
    def __init__(self, inner: Any, client: "LLMClient"):
        self._inner = inner
        self._client = client

    def handle_request(self, request):  # noqa: ANN001 - the SDK's httpx Request
        ctx = self._client._ctx
        ctx.attempts += 1
        raw = request.read()
        body = _parse_json(raw) if raw else None
        attempt = CallAttempt(
            call=ctx.call if ctx.call is not None else self._client._next_call_index(),
            attempt=ctx.attempts, method=request.method, url=str(request.url),
            request_body=body if body is not None else (raw.decode("utf-8", "replace") if raw else None),
            started_at=format_timestamp(utc_now()), purpose=ctx.purpose,
            stream=bool(isinstance(body, dict) and body.get("stream")), message_ids=ctx.message_ids,
            request_sha256=CallAttempt.sha256_of(raw),
        )
        t0 = time.perf_counter()
        try:
            response = self._inner.handle_request(request)
        except Exception as err:
            attempt.latency_ms = (time.perf_counter() - t0) * 1000
            attempt.error = self._client._redact(f"{type(err).__name__}: {err}")
            self._client._record(attempt)
            raise
        attempt.status = response.status_code
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            def finish(data: bytes, error: str | None) -> None:
                attempt.latency_ms = (time.perf_counter() - t0) * 1000
                api = api_for_path(str(request.url)) or CHAT_COMPLETIONS
                chunks, done = api.parse_stream(data)
                attempt.response_body = api.reassemble(chunks) if chunks else None
                if error is None and not done and response.status_code < 400:
                    error = "stream ended before " + ("response.completed" if api is RESPONSES else "[DONE]")
                attempt.error = self._client._redact(error)
                self._client._record(attempt)

            return _httpx.Response(status_code=response.status_code, headers=response.headers,
                                   stream=_RecordingStream(response.stream, finish),
                                   extensions=response.extensions, request=request)
        try:
            content = response.read()
        except Exception as err:
            attempt.latency_ms = (time.perf_counter() - t0) * 1000
            attempt.error = self._client._redact(f"{type(err).__name__}: {err}")
            self._client._record(attempt)
            raise
        finally:
            response.close()
        attempt.latency_ms = (time.perf_counter() - t0) * 1000
        parsed = _parse_json(content)
        attempt.response_body = parsed
        if response.status_code >= 400 or parsed is None:
            text = content.decode("utf-8", "replace")
            attempt.error = self._client._redact(
                text if response.status_code >= 400 else f"response is not JSON: {text[:500]}")
        self._client._record(attempt)
        return _httpx.Response(status_code=response.status_code, headers=response.headers, content=content,
                               extensions=response.extensions, request=request)

    def close(self) -> None:
        self._inner.close()


class LLMClient:
    """Chat Completions through the official SDK, recording every attempt.

    Args:
        endpoint: where to send calls (see ``configured_endpoint``).
        recorder: receives a ``CallAttempt`` per HTTP attempt.
        max_retries: passed to the SDK; each retry is recorded as its own attempt.
        timeout: seconds per attempt.
        first_call: the number of the first call (``TraceWriter.first_call`` when appending to a trace).
    """

    def __init__(self, endpoint: Endpoint, recorder: Recorder | None = None, max_retries: int = 2,
                 timeout: float = 60.0, temperature: float = 0, first_call: int = 0):
        self.endpoint = endpoint
        self.recorder = recorder or NullRecorder()
        self.temperature = temperature
        self.timeout = timeout
        """Seconds per attempt."""
        self.extra_headers: dict[str, str] = {}
        """Headers added to every request (a session id for the proxy, a demo-model fault switch)."""
        self._secrets = [endpoint.api_key] if endpoint.api_key else []
        self._ctx = _CallContext()
        self._lock = threading.Lock()
        self._calls = first_call
        transport = _RecordingTransport(_httpx.HTTPTransport(), self)
        self._sdk = openai.OpenAI(base_url=endpoint.base_url, api_key=endpoint.api_key or "not-needed",
                                  max_retries=max_retries, timeout=timeout,
                                  http_client=_HTTP_CLIENT_CLASS(transport=transport))

    def _next_call_index(self) -> int:
        with self._lock:
            n = self._calls
            self._calls += 1
            return n

    def _redact(self, text: str | None) -> str | None:
        return redact(text, self._secrets)

    def _record(self, attempt: CallAttempt) -> None:
        if isinstance(attempt.response_body, (dict, list)) and self._secrets:
            attempt.response_body = json.loads(self._redact(json.dumps(attempt.response_body, ensure_ascii=False)))
        self.recorder.call_attempt(attempt)

    def complete(self, messages: list[dict], tools: list[dict] | None = None, *, purpose: str = "chat",
                 message_ids: list[str] | None = None, stream: bool = False, **extra: Any) -> dict:
        """One chat completion; returns the response body as a plain dict.

        Raises:
            EndpointError: the endpoint failed after the SDK's retries; one
                sentence with the status and the provider's own message.
        """
        kwargs: dict[str, Any] = {"model": self.endpoint.model, "messages": messages,
                                  "temperature": self.temperature, **extra}
        if tools:
            kwargs["tools"] = tools
        if self.extra_headers:
            kwargs["extra_headers"] = dict(self.extra_headers)
        host = self.endpoint.host

        def create() -> dict:
            if stream:
                chunks = [_dumped(c, host) for c in self._sdk.chat.completions.create(stream=True, **kwargs)]
                completion = CHAT_COMPLETIONS.reassemble(chunks)
                if not any(c.get("finish_reason") for c in completion["choices"]):
                    raise EndpointError(f"{host} cut the stream before the reply was finished; try again")
                return completion
            return _dumped(self._sdk.chat.completions.create(**kwargs), host)
        return self._guarded(create, purpose, message_ids)

    def respond(self, items: list[dict] | str, tools: list[dict] | None = None, *, instructions: str | None = None,
                previous_response_id: str | None = None, purpose: str = "chat", message_ids: list[str] | None = None,
                stream: bool = False, **extra: Any) -> dict:
        """One Responses API call (``POST /responses``); returns the response body as a plain dict.

        ``tools`` are flat Responses function tools. Raises ``EndpointError`` like ``complete``.
        """
        kwargs: dict[str, Any] = {"input": items, **extra}
        if tools:
            kwargs["tools"] = tools
        if instructions:
            kwargs["instructions"] = instructions
        if previous_response_id:
            kwargs["previous_response_id"] = previous_response_id
        if self.extra_headers:
            kwargs["extra_headers"] = dict(self.extra_headers)

        def create() -> dict:
            if stream:
                events = [e.model_dump(mode="json", exclude_none=True) for e in
                          self._sdk.responses.create(model=self.endpoint.model, stream=True, **kwargs)]
                body = RESPONSES.reassemble(events)
                if body.get("status") != "completed":
                    raise EndpointError(f"{self.endpoint.host} ended the stream before the response was completed")
                return body
            return self._sdk.responses.create(model=self.endpoint.model, **kwargs).model_dump(mode="json",
                                                                                             exclude_none=True)
        return self._guarded(create, purpose, message_ids)

    def _guarded(self, create, purpose: str, message_ids: list[str] | None) -> dict:
        """Run one API call as this client's next call; every failure becomes one ``EndpointError`` line."""
        ctx = self._ctx
        ctx.call, ctx.attempts, ctx.purpose, ctx.message_ids = self._next_call_index(), 0, purpose, message_ids
        host, started = self.endpoint.host, time.monotonic()
        try:
            return create()
        except openai.APIStatusError as err:
            raise EndpointError(self._redact(
                f"{host} answered HTTP {err.status_code}: {_provider_message(err)}{_advice(err)}")) from None
        except openai.APITimeoutError:
            raise EndpointError(f"{host} did not answer in {time.monotonic() - started:.0f} s "
                                f"({ctx.attempts} attempt{'s' if ctx.attempts != 1 else ''} of "
                                f"{self.timeout:g} s); check that it is up, or try again") from None
        except openai.APIConnectionError as err:
            cause = err.__cause__ or err
            if type(cause).__name__ == "RemoteProtocolError":      # it answered, then the body was cut mid-way
                raise EndpointError(self._redact(f"{host} cut the reply mid-way ({cause}); try again")) from None
            hint = "; is it running?" if "refused" in str(cause).lower() else ""
            raise EndpointError(self._redact(f"could not connect to {host}: {cause}{hint}")) from None
        except openai.OpenAIError as err:
            raise EndpointError(self._redact(f"{host}: {err}")) from None
        except ValueError:
            raise EndpointError(f"{host} answered with a body that is not valid JSON") from None
        finally:
            ctx.call = None

    def close(self) -> None:
        self._sdk.close()


def _dumped(result: Any, host: str) -> dict:
    """The SDK's parsed answer as a dict. The SDK hands back a bare string when the body was not JSON of
    the expected kind: an event stream where a JSON body was asked for, often cut off mid-way."""
    if hasattr(result, "model_dump"):
        return result.model_dump(exclude_none=True)
    if isinstance(result, str) and "data:" in result:
        raise EndpointError(f"{host} answered with an event stream that ended before a complete reply "
                            "(the stream was cut); try again")
    raise EndpointError(f"{host} answered with a body that is not a chat completion ({type(result).__name__})")


def _advice(err: Any) -> str:
    """What to do about an HTTP error, when the status says it."""
    status = getattr(err, "status_code", None)
    if status == 401:
        return " (check OPENAI_API_KEY or --api-key)"
    if status == 429:
        response = getattr(err, "response", None)
        after = response.headers.get("retry-after") if response is not None else None
        return f" (retry after {after} s)" if after else " (wait and try again)"
    return ""


def _provider_message(err: Any) -> str:
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
        if isinstance(inner, str):
            return inner
    return str(getattr(err, "message", err))
