"""The recording proxy: point any OpenAI-compatible app at it and get Chain Studio traces.

``chain-studio proxy --upstream URL`` listens on 127.0.0.1 only and forwards
every request to the upstream unchanged: the body bytes, the method, the
query string and the headers (minus hop-by-hop headers, ``Host`` and the
proxy's own ``X-Chain-Studio-Session``). The upstream's status, headers and
body bytes go back to the client as they come, streamed chunk by chunk.

Each conversation exchange (``/chat/completions``, Anthropic's ``/v1/messages``: any path a wire
adapter in ``apis/`` serves) is recorded (exact request body, response
body, status, latency, usage; a streamed response reassembled from its SSE
chunks) into a trace file per conversation, with the message stream, drops
and edits inferred by ``ingest/payload_log.py`` because a proxy sees no memory
(the files: ``proxy_recorder.py``). An exchange is recorded before the last
bytes of its response (a stream's ``[DONE]``) go out; stopping drains the
exchanges in flight first. Other ``/v1`` exchanges go to ``other.jsonl``.
Headers are never recorded, and every
credential seen in a request header (``Authorization`` bearer token,
``api-key``, ``x-api-key`` ...) is replaced by ``[REDACTED]`` in everything
written, should it appear in a body, URL or error text. Layout:
docs/trace-format.md, "Recording proxy".
"""
from __future__ import annotations

import json
import os
import re
import signal
import sys
import threading
import time
import zlib
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from agent_core.apis.base import api_for_path
from agent_core.apis.chat_completions import CHAT_COMPLETIONS
from agent_core.apis.responses import RESPONSES
from agent_core.core.errors import ChainStudioError
from agent_core.core.msg import format_timestamp, utc_now
from agent_core.core.paths import traces_dir
from agent_core.trace.events import CallAttempt
from agent_core.trace.writer import REDACTED

from ._background import BackgroundServer
from .proxy_recorder import ProxyRecorder, looks_like_secret

try:  # the fork the installed openai SDK uses; plain httpx has the same API
    import httpx2 as _httpx
except ImportError:  # pragma: no cover - depends on the installed SDK
    import httpx as _httpx

SESSION_HEADER = "X-Chain-Studio-Session"
DEFAULT_PORT = 8787
MAX_BODY_BYTES = 64 * 1024 * 1024
MAX_RECORDED_RESPONSE_BYTES = 64 * 1024 * 1024
# RFC 9110 hop-by-hop headers, plus the ones the proxy itself must set or consumes.
_HOP_BY_HOP = {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te",
               "trailer", "trailers", "transfer-encoding", "upgrade"}
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "expect", SESSION_HEADER.lower()}
_SECRET_HEADERS = {"authorization", "proxy-authorization", "api-key", "x-api-key", "x-goog-api-key",
                   "openai-api-key", "x-auth-token"}
_TIMEOUTS = {"connect": 15.0, "read": 600.0, "write": 120.0, "pool": 30.0}
DRAIN_SECONDS = 30.0
"""How long stopping waits for exchanges in flight to finish (and be recorded)."""
_SSE_END = b"\ndata: [DONE]"
"""The last SSE event, at the start of a line (a JSON string cannot hold a raw newline)."""


class _TerminalEvent:
    """Spots the end of a Responses stream: a complete ``response.completed`` (or failed / incomplete) event block.

    Only the current block is buffered; an event line cannot be forged by content (a JSON string holds no newline).
    """

    def __init__(self) -> None:
        self._block = b""

    def ends(self, chunk: bytes) -> bool:
        self._block += chunk.replace(b"\r\n", b"\n")
        *blocks, self._block = self._block.split(b"\n\n")
        return any(b.lstrip(b"\n").startswith(tuple(b"event: " + t.encode() for t in _RESPONSES_ENDS)) for b in blocks)


_RESPONSES_ENDS = ("response.completed", "response.failed", "response.incomplete")


class ProxyError(ChainStudioError):
    """The proxy cannot start (bad upstream URL, port in use)."""


def upstream_url(upstream: str, path: str) -> str:
    """Where a request for ``path`` goes.

    An upstream with a path (``https://api.openai.com/v1``, ``http://host/api/v1``)
    replaces the client's ``/v1`` prefix; an upstream without one gets the
    client's path unchanged.
    """
    parts = urlsplit(upstream)
    base_path = parts.path.rstrip("/")
    req_path, _, query = path.partition("?")
    if base_path:
        if req_path == "/v1" or req_path.startswith("/v1/"):
            req_path = req_path[3:]
        req_path = base_path + req_path
    return urlunsplit((parts.scheme, parts.netloc, req_path or "/", query, ""))


def _credentials(name: str, value: str) -> list[str]:
    """The secret strings in one request header (the bearer token and the whole value)."""
    if name.lower() not in _SECRET_HEADERS or not value:
        return []
    out = [value.strip()]
    m = re.match(r"\s*(?:bearer|basic|token)\s+(\S+)", value, re.I)
    if m:
        out.append(m.group(1))
    return [s for s in out if len(s) >= 4]


_SECRET_QUERY = re.compile(r"(?i)([?&](?:api[-_]?key|key|access[-_]?token|token)=)[^&#]*")


def _redact_query(url: str) -> str:
    """Credentials some providers take in the query string (``?key=``, ``?api-key=``) never reach a file."""
    return _SECRET_QUERY.sub(lambda m: m.group(1) + REDACTED, url)


def _decode(data: bytes, encoding: str) -> tuple[bytes | None, str | None]:
    """Undo Content-Encoding for the record only (the client gets the bytes as they came)."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        return data, None
    try:
        if encoding in ("gzip", "x-gzip", "deflate"):
            return zlib.decompress(data, wbits=47), None
        if encoding == "br":
            import brotli  # type: ignore[import-not-found]
            return brotli.decompress(data), None
        if encoding == "zstd":
            import zstandard  # type: ignore[import-not-found]
            return zstandard.ZstdDecompressor().decompressobj().decompress(data), None
    except ImportError:
        return None, f"response body not recorded: no decoder for Content-Encoding {encoding}"
    except Exception as err:  # a corrupt body is the upstream's problem; note it, keep going
        return None, f"response body not recorded: {encoding} decoding failed ({err})"
    return None, f"response body not recorded: unknown Content-Encoding {encoding}"


def _parse_json(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


class _Handler(BaseHTTPRequestHandler):
    server: "_ProxyServer"
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass    # the proxy prints its own one-line summaries (without headers)

    def do_GET(self) -> None:
        if not self.server.begin():     # stopping: the client gets no answer it could mistake for a recorded one
            self.close_connection = True
            return
        try:
            self._forward()
        finally:
            self.server.end()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = do_GET

    def _read_body(self) -> bytes | None:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            parts, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > MAX_BODY_BYTES:
                    return None
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length < 0:          # read(-1) would wait for the client to close: pinned handler, body forwarded
            raise ValueError("negative Content-Length")
        if length > MAX_BODY_BYTES:
            return None
        return self.rfile.read(length) if length else b""

    def _send_error_json(self, status: int, message: str) -> None:
        data = json.dumps({"error": {"message": message, "type": "proxy_error", "param": None, "code": None}}
                          ).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _forward(self) -> None:
        srv = self.server
        started = format_timestamp(utc_now())
        t0 = time.perf_counter()
        try:
            raw = self._read_body()
        except (ValueError, OSError):
            self.close_connection = True
            self._send_error_json(400, "chain-studio proxy: could not read the request body")
            return
        if raw is None:
            self.close_connection = True
            self._send_error_json(413, f"chain-studio proxy: request body over {MAX_BODY_BYTES} bytes")
            return
        headers, secrets = [], []
        for name, value in self.headers.items():
            secrets += _credentials(name, value)
            if name.lower() not in _NOT_FORWARDED:
                headers.append((name, value))
        if secrets:
            srv.recorder.add_secrets(secrets)
        session = self.headers.get(SESSION_HEADER) or None
        if session is not None and looks_like_secret(session):
            srv.recorder.add_secrets([session])     # kept out of the file name, the trace and the index
        retry = (self.headers.get("X-Stainless-Retry-Count") or "0").strip() not in ("", "0")
        url = upstream_url(srv.upstream, self.path)
        api = api_for_path(urlsplit(url).path) if self.command == "POST" else None
        is_chat = api is not None      # a conversation call of a known wire API (Chat Completions, Anthropic ...)
        request_body = _parse_json(raw) if raw else None
        if request_body is None and raw:
            request_body = raw.decode("utf-8", "replace")
        attempt = CallAttempt(call=0, attempt=1, method=self.command, url=srv.recorder._redact(_redact_query(url)),
                              request_body=request_body, started_at=started, purpose="chat" if is_chat else "other",
                              stream=bool(isinstance(request_body, dict) and request_body.get("stream")),
                              request_sha256=CallAttempt.sha256_of(raw))
        upstream_request = _httpx.Request(self.command, url, headers=headers, content=raw,
                                          extensions={"timeout": dict(_TIMEOUTS)})
        try:
            response = srv.transport.handle_request(upstream_request)
        except Exception as err:
            timeout = isinstance(err, _httpx.TimeoutException)
            attempt.latency_ms = (time.perf_counter() - t0) * 1000
            attempt.error = srv.recorder._redact(f"{type(err).__name__}: {err}")
            status = 504 if timeout else 502
            self._send_error_json(status, srv.recorder._redact(
                f"chain-studio proxy: upstream {urlsplit(srv.upstream).netloc} "
                f"{'did not answer in time' if timeout else 'could not be reached'} ({type(err).__name__})"))
            self._record(attempt, session, retry, is_chat)
            return
        def finish(data: bytes, error: str | None) -> None:
            attempt.latency_ms = (time.perf_counter() - t0) * 1000
            attempt.status = response.status_code
            self._fill_response(attempt, response, data, error)
            self._record(attempt, session, retry, is_chat)

        self._relay(response, finish)

    def _relay(self, response: Any, finish) -> None:
        """Send the upstream's status, headers and body bytes on, as they arrive.

        ``finish`` records the exchange just before the last bytes go out, so a
        client that has its whole response finds the call in the trace.
        """
        reason = response.extensions.get("reason_phrase", b"")
        reason = reason.decode("latin-1") if isinstance(reason, bytes) else str(reason or "")
        self.send_response_only(response.status_code, reason or None)
        has_length = False
        length = None
        for name, value in response.headers.raw:
            key = name.decode("latin-1")
            if key.lower() in _HOP_BY_HOP:
                continue
            if key.lower() == "content-length":
                has_length = True
                try:
                    length = int(value)
                except ValueError:
                    length = None
            self.send_header(key, value.decode("latin-1"))
        bodiless = self.command == "HEAD" or response.status_code in (204, 304) or response.status_code < 200
        chunked = not has_length and not bodiless and self.request_version != "HTTP/1.0"
        if not has_length and not bodiless and not chunked:
            self.close_connection = True      # HTTP/1.0: the end of the body is the end of the connection
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        chunks: list[bytes] = []
        kept = sent = 0
        finished = False
        sse = response.headers.get("content-type", "").startswith("text/event-stream")
        tail = b"\n"
        events = _TerminalEvent() if sse and api_for_path(urlsplit(self.path).path) is RESPONSES else None

        def done(error: str | None) -> None:
            nonlocal finished
            if not finished:
                finished = True
                if kept >= MAX_RECORDED_RESPONSE_BYTES and error is None:
                    error = f"response over {MAX_RECORDED_RESPONSE_BYTES} bytes; recorded body truncated"
                finish(b"".join(chunks), error)

        try:
            self.end_headers()      # the first write: a client that hung up is found here
            for chunk in response.stream:
                if not chunk:
                    continue
                if kept < MAX_RECORDED_RESPONSE_BYTES:
                    chunks.append(chunk)
                    kept += len(chunk)
                sent += len(chunk)
                if bodiless:
                    continue
                if sse:     # the client may stop reading at [DONE]: the exchange is recorded before it goes out
                    tail = (tail + chunk)[-(len(_SSE_END) + len(chunk)):]
                    if _SSE_END in tail or (events is not None and events.ends(chunk)):
                        done(None)
                if length is not None and sent >= length:
                    done(None)
                if chunked:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                else:
                    self.wfile.write(chunk)
                self.wfile.flush()
            done(None)
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError) as err:
            done(f"the client disconnected mid-response ({type(err).__name__})")
            self.close_connection = True
            self.server.client_gone(self.client_address, err)
        except Exception as err:     # the upstream broke off: the client sees the cut, the trace says so
            done(f"upstream stream broken: {type(err).__name__}: {err}")
            self.close_connection = True
        finally:
            response.close()

    def _fill_response(self, attempt: CallAttempt, response: Any, data: bytes, error: str | None) -> None:
        redact = self.server.recorder._redact
        body, note = _decode(data, response.headers.get("content-encoding", ""))
        if body is None:
            attempt.error = redact(note or "")
            return
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            api = api_for_path(urlsplit(attempt.url).path) or CHAT_COMPLETIONS
            chunks, done = api.parse_stream(body)
            attempt.response_body = api.reassemble(chunks) if chunks else None
            if error is None and not done and response.status_code < 400:
                error = ("stream ended before [DONE]" if api is CHAT_COMPLETIONS else
                         "stream ended before response.completed" if api is RESPONSES else
                         "stream ended before its last event")
        else:
            parsed = _parse_json(body) if body else None
            attempt.response_body = parsed
            if response.status_code >= 400 and error is None:
                error = body.decode("utf-8", "replace")[:4000]
            elif parsed is None and body and attempt.purpose == "chat" and error is None:
                error = f"response is not JSON: {body[:500].decode('utf-8', 'replace')}"
        attempt.error = redact(error) if error else None

    def _record(self, attempt: CallAttempt, session: str | None, retry: bool, is_chat: bool) -> None:
        srv = self.server
        try:
            if is_chat and api_for_path(urlsplit(attempt.url).path) is RESPONSES:
                entry = srv.recorder.record_responses(attempt, session)
            else:
                entry = srv.recorder.record_chat(attempt, session, retry) if is_chat else srv.recorder.record_other(attempt)
        except Exception as err:    # recording must never break the app's traffic, nor fail unseen
            message = f"{attempt.method} {urlsplit(attempt.url).path}: {type(err).__name__}: {err}"
            srv.errors.append(srv.recorder._redact(message))
            try:
                srv.recorder.record_failure(attempt, message)
            except Exception as again:
                srv.errors.append(f"index.jsonl: {type(again).__name__}: {again}")
            return
        if srv.verbose:
            print(f"{entry['method']} {entry['path']} -> {entry['status']} {entry['latency_ms']} ms "
                  f"[{entry['file']} call {entry['call']}]", flush=True)


class _ProxyServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128    # socketserver's 5 resets clients that connect together (a test suite, an eval)

    def __init__(self, address: tuple[str, int], upstream: str, recorder: ProxyRecorder, verbose: bool):
        super().__init__(address, _Handler)
        self.upstream = upstream
        self.recorder = recorder
        self.verbose = verbose
        self.transport = _httpx.HTTPTransport()
        self.errors: list[str] = []
        self._flight = threading.Condition()
        self._active = 0
        self._closing = False

    def begin(self) -> bool:
        """An exchange starts; False once the proxy is stopping."""
        with self._flight:
            if self._closing:
                return False
            self._active += 1
            return True

    def end(self) -> None:
        with self._flight:
            self._active -= 1
            self._flight.notify_all()

    def drain(self, timeout: float) -> int:
        """Refuse new exchanges, wait for the ones in flight; returns how many are still running."""
        with self._flight:
            self._closing = True
            self._flight.wait_for(lambda: self._active == 0, timeout)
            return self._active

    def client_gone(self, address: Any, err: BaseException) -> None:
        """A client hanging up is its own business: one quiet line, and only under ``--verbose``."""
        if self.verbose:
            print(f"client {address[0]}:{address[1]} disconnected ({type(err).__name__})", flush=True)

    def handle_error(self, request: Any, client_address: Any) -> None:
        err = sys.exc_info()[1]
        if isinstance(err, (ConnectionError, TimeoutError)):
            self.client_gone(client_address, err)
            return
        self.errors.append(f"handling a request failed: {type(err).__name__}: {err}")
        if os.environ.get("CHAIN_STUDIO_DEBUG") == "1":
            super().handle_error(request, client_address)


class RecordingProxy(BackgroundServer):
    """Runs the proxy (in a background thread with ``start``, or ``serve_forever``).

    Args:
        upstream: the real endpoint's base URL (``https://api.openai.com/v1``).
        port: local port; 0 picks a free one. The proxy binds to 127.0.0.1 only.
        trace_dir: where the trace files go (default ``traces/proxy-<timestamp>/``).
    """

    thread_name = "chain-studio-proxy"

    def __init__(self, upstream: str, port: int = DEFAULT_PORT, trace_dir: str | Path | None = None,
                 verbose: bool = False, observers: tuple = ()):
        parts = urlsplit(upstream)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise ProxyError(f"--upstream must be an http(s) URL such as https://api.openai.com/v1, got {upstream!r}")
        if "@" in parts.netloc:
            raise ProxyError("--upstream must not hold credentials; the client's own headers are forwarded")
        self.upstream = upstream.rstrip("/")
        self.trace_dir = Path(trace_dir) if trace_dir else (
            traces_dir() / f"proxy-{datetime.now().strftime('%Y%m%d-%H%M%S')}")
        self.recorder = ProxyRecorder(self.trace_dir, self.upstream, observers)
        try:
            server = _ProxyServer(("127.0.0.1", port), self.upstream, self.recorder, verbose)
        except OSError as err:
            self.recorder.close()
            raise ProxyError(f"cannot listen on 127.0.0.1:{port}: {err.strerror or err}") from None
        super().__init__(server)
        self._stopped = False

    @property
    def errors(self) -> list[str]:
        """Recording failures (the traffic itself went through)."""
        return self._server.errors

    def trace_files(self) -> list[Path]:
        return self.recorder.trace_files()

    def stop(self) -> None:
        """Stop accepting, let the exchanges in flight finish and be recorded, then finalize every conversation."""
        if self._stopped:
            return
        self._stopped = True
        if self._thread is not None:
            self._server.shutdown()
        left = self._server.drain(DRAIN_SECONDS)
        if left:
            self.errors.append(f"{left} exchange(s) still in flight after {DRAIN_SECONDS:.0f} s were not recorded")
        self._server.server_close()
        self._server.transport.close()
        try:
            self.recorder.close()
        except Exception as err:
            self.errors.append(f"finalizing the traces failed: {type(err).__name__}: {err}")


def run_proxy(upstream: str, port: int = DEFAULT_PORT, trace: str | None = None, verbose: bool = False,
              observers: tuple = ()) -> int:
    """The ``chain-studio proxy`` command: serve until Ctrl-C or SIGTERM, then finish and summarize.

    Returns 0, or 1 when some exchange could not be recorded (each reason is printed).
    """
    proxy = RecordingProxy(upstream, port=port, trace_dir=trace, verbose=verbose, observers=observers)
    stop = threading.Event()
    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, lambda *_: stop.set())
    proxy.start()
    print(f"chain-studio proxy on {proxy.base_url} -> {proxy.upstream}; recording to {proxy.trace_dir}/ "
          f"(Ctrl-C to stop)", flush=True)
    print(f"point your client at it: OPENAI_BASE_URL={proxy.base_url}; tag conversations with the "
          f"{SESSION_HEADER} header (optional)", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        proxy.stop()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    print(f"recorded {len(proxy.trace_files())} conversation(s) in {proxy.trace_dir}", flush=True)
    for error in proxy.errors:
        print(f"chain-studio proxy: not recorded: {error}", file=sys.stderr, flush=True)
    return 1 if proxy.errors else 0
