"""The demo model over HTTP: an OpenAI-compatible server on 127.0.0.1.

Serves POST /v1/chat/completions (plain and ``"stream": true``), POST /v1/responses
(``demo_responses``), POST /v1/messages (Anthropic Messages, ``demo_anthropic``), Gemini's
``:generateContent`` / ``:streamGenerateContent`` (``demo_gemini``) and GET /v1/models. It rejects a
malformed message chain as OpenAI does: HTTP 400
with OpenAI's error envelope and wording (the linter's openai profile).

Fault injection, for tests and demos over real HTTP: a request header
``X-Demo-Fault`` (or the server's ``fault`` argument) set to one of
``400``, ``401``, ``429``, ``500``, ``timeout``, ``malformed``, ``cut-stream``;
add ``-once`` (``500-once``) to fail only the first attempt of a request. The Responses, Anthropic and
Gemini endpoints answer each fault in their own wire shape (``demo_faults``).
"""
from __future__ import annotations

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_core.serve import demo_anthropic, demo_faults, demo_gemini, demo_model, demo_responses

from ._background import BackgroundServer

FAULTS = ("400", "401", "429", "500", "timeout", "malformed", "cut-stream")
MAX_BODY_BYTES = 64 * 1024 * 1024


def _error(message: str, type_: str = "invalid_request_error", param: str | None = None,
           code: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "param": param, "code": code}}


def protocol_rejection(body: dict) -> dict | None:
    """OpenAI's 400 error body for a request it would reject, else None."""
    from agent_core.lint.scan import (
        api_rejection,  # the linter owns the rules and the exact wording
    )
    return api_rejection(body, profile="openai")


class _Handler(BaseHTTPRequestHandler):
    server: "_Server"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: tests and the CLI print their own lines
        if self.server.verbose:
            super().log_message(format, *args)

    def _send_json(self, status: int, payload: Any, headers: dict | None = None) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            self._send_json(200, {"object": "list", "data": [
                {"id": demo_model.MODEL_NAME, "object": "model", "created": 0, "owned_by": "chain-studio"}]})
        else:
            self._send_json(404, _error(f"Unknown path {self.path}", code="not_found"))

    def do_POST(self) -> None:
        if self.path.split("?")[0].rstrip("/") == demo_anthropic.PATH:
            self._anthropic()
            return
        if demo_gemini.serves(self.path):
            self._gemini()
            return
        path = self.path.split("?")[0].rstrip("/")
        if path not in ("/v1/chat/completions", "/chat/completions", "/v1/responses", "/responses"):
            self._send_json(404, _error(f"Unknown path {self.path}", code="not_found"))
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._send_json(413, _error("Request body too large"))
            return
        raw = self.rfile.read(length)
        self.server.received.append(raw)
        fault = self.headers.get("X-Demo-Fault") or self.server.fault
        if fault and self._inject(fault, raw):
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            self._send_json(400, _error("We could not parse the JSON body of your request."))
            return
        if path.endswith("/responses"):     # the Responses API: serve/demo_responses.py
            self._responses(body)
            return
        if not isinstance(body, dict) or not isinstance(body.get("messages"), list):
            self._send_json(400, _error("Missing required parameter: 'messages'.", param="messages"))
            return
        rejection = protocol_rejection(body)
        if rejection is not None:
            self._send_json(400, rejection)
            return
        completion = demo_model.respond(body)
        if body.get("stream"):
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            self._stream(demo_model.stream_chunks(completion, include_usage))
        else:
            self._send_json(200, completion)

    def _anthropic(self) -> None:
        """``POST /v1/messages``: the Anthropic Messages endpoint (``demo_anthropic``)."""
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(min(length, MAX_BODY_BYTES))
        self.server.received.append(raw)
        if self._native_fault(raw, demo_anthropic.fault):
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        refused = demo_anthropic.error("There was an issue with your request body: it is not JSON.") \
            if body is None else demo_anthropic.rejection(body)
        if refused is not None:
            self._send_json(400, refused)
            return
        message = demo_anthropic.respond(body)
        if not body.get("stream"):
            self._send_json(200, message)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(demo_anthropic.sse(demo_anthropic.stream_events(message)))
        self.wfile.flush()
        self.close_connection = True

    def _gemini(self) -> None:
        """``.../models/{model}:generateContent`` and ``:streamGenerateContent``: Gemini (``demo_gemini``)."""
        raw = self.rfile.read(min(int(self.headers.get("Content-Length") or 0), MAX_BODY_BYTES))
        self.server.received.append(raw)
        if self._native_fault(raw, lambda kind, body: demo_gemini.fault(kind, body, self.path)):
            return
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        refused = demo_gemini.rejection(body)
        if refused is not None:
            self._send_json(400, refused)
            return
        response = demo_gemini.respond(body)
        if ":streamGenerateContent" not in self.path:
            self._send_json(200, response)
            return
        sse = "alt=sse" in self.path
        data = demo_gemini.stream_bytes(response, sse)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if sse else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _responses(self, body: Any) -> None:
        status, payload = demo_responses.respond(body, self.server.responses)
        if status != 200 or not (isinstance(body, dict) and body.get("stream")):
            self._send_json(status, payload)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for event in demo_responses.stream_events(payload):
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event, ensure_ascii=False)}\n\n".encode())
            self.wfile.flush()
        self.close_connection = True

    def _stream(self, chunks: list[dict], cut_after: int | None = None) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Connection", "close")
        self.end_headers()
        for i, chunk in enumerate(chunks):
            if cut_after is not None and i >= cut_after:
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(f"data: {json.dumps(chunk, ensure_ascii=False)}\n\n".encode("utf-8"))
            self.wfile.flush()
        self.wfile.write(b"data: [DONE]\n\n")
        self.wfile.flush()
        self.close_connection = True

    def _spent(self, fault: str, raw: bytes) -> bool:
        """Whether a ``-once`` fault was already spent on this body (and spend it now if not)."""
        if not fault.endswith("-once"):
            return False
        key = hashlib.sha1(raw).hexdigest()
        with self.server.lock:
            if key in self.server.spent:
                return True
            self.server.spent.add(key)
        return False

    def _native_fault(self, raw: bytes, make: Any) -> bool:
        """The request's fault in its wire API's shape (``make(kind, body)`` -> ``demo_faults.FaultReply``)."""
        fault = self.headers.get("X-Demo-Fault") or self.server.fault
        if not fault or self._spent(fault, raw):
            return False
        try:
            body = json.loads(raw)
        except (ValueError, RecursionError):
            body = None
        reply = make(demo_faults.kind_of(fault), body)
        if reply is None:
            return False
        if demo_faults.kind_of(fault) == "timeout":
            time.sleep(self.server.timeout_seconds)
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        if reply.stream:
            self.send_header("Connection", "close")
        else:
            self.send_header("Content-Length", str(len(reply.data) if reply.length is None else reply.length))
        for k, v in reply.headers.items():
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(reply.data)
        self.wfile.flush()
        if reply.stream or reply.length is not None:
            self.close_connection = True
        return True

    def _inject(self, fault: str, raw: bytes) -> bool:
        """Answer with the fault; False when a ``-once`` fault was already spent on this body."""
        kind = demo_faults.kind_of(fault)
        if kind == "cut-stream" and self.path.split("?")[0].rstrip("/").endswith("/responses"):
            return self._native_fault(raw, demo_responses.fault)
        if self._spent(fault, raw):
            return False
        if kind == "400":
            self._send_json(400, _error("Invalid parameter: injected fault (demo model).", param="messages"))
        elif kind == "401":
            self._send_json(401, _error("Incorrect API key provided. You can find your API key at "
                                        "https://platform.openai.com/account/api-keys.", code="invalid_api_key"))
        elif kind == "429":
            self._send_json(429, _error("Rate limit reached for requests (demo model fault injection).",
                                        type_="requests", code="rate_limit_exceeded"), headers={"Retry-After": "1"})
        elif kind == "500":
            self._send_json(500, _error("The server had an error while processing your request.", type_="server_error"))
        elif kind == "timeout":
            time.sleep(self.server.timeout_seconds)
            self._send_json(504, _error("demo model timed out on purpose", type_="server_error"))
        elif kind == "malformed":
            data = b"<html>this is not JSON"
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        elif kind == "cut-stream":
            try:
                body = json.loads(raw)
            except ValueError:
                body = {"messages": []}
            self._stream(demo_model.stream_chunks(demo_model.respond(body)), cut_after=2)
        else:
            return False
        return True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], fault: str | None, verbose: bool):
        super().__init__(address, _Handler)
        self.fault = fault
        self.verbose = verbose
        self.received: list[bytes] = []
        self.spent: set[str] = set()
        self.lock = threading.Lock()
        self.timeout_seconds = 5.0
        self.responses = demo_responses.ResponsesStore()

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (a timeout test, a cut stream) is not a server error."""
        import sys

        if not isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            super().handle_error(request, client_address)


class DemoModelServer(BackgroundServer):
    """Runs the demo model in a background thread.

    Args:
        port: 0 picks a free port.
        fault: a fault applied to every request (see module docstring).

    ``received`` holds the raw bytes of every request body, so tests can
    compare what the server got with what was recorded.
    """

    thread_name = "demo-model"

    def __init__(self, port: int = 0, host: str = "127.0.0.1", fault: str | None = None, verbose: bool = False):
        super().__init__(_Server((host, port), fault, verbose))

    @property
    def received(self) -> list[bytes]:
        return self._server.received

    @property
    def responses(self) -> demo_responses.ResponsesStore:
        """The stored responses of ``/v1/responses`` and, per id, exactly what the model answered from."""
        return self._server.responses

    @property
    def timeout_seconds(self) -> float:
        return self._server.timeout_seconds

    @timeout_seconds.setter
    def timeout_seconds(self, value: float) -> None:
        self._server.timeout_seconds = value
