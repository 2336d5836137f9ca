"""The proxy loses nothing: ``chain-studio proxy`` as a subprocess, 20 SDK threads, SIGTERM mid-run, 5 times.

Every exchange whose response a client fully received must be in a trace, with the reply the client
got, and every conversation's last reply must be in its stream (the proxy finalized it on SIGTERM).
"""
from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import openai

from agent_core.trace.reader import read_trace

KEY = "sk-proj-shutdownTestKey0123456789abcdef"
THREADS, CALLS, ROUNDS = 20, 20, 5


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(base_url: str, n: int, received: list, lock: threading.Lock) -> None:
    """One conversation of up to CALLS calls (every other one streamed); stops at the first failure."""
    client = openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0, timeout=20)
    history = [{"role": "system", "content": f"You are worker {n}."}]
    for k in range(CALLS):
        history.append({"role": "user", "content": f"worker {n} says {k}"})
        sent = json.dumps(history, ensure_ascii=False)
        try:
            if k % 2:
                text = "".join(chunk.choices[0].delta.content or "" for chunk in client.chat.completions.create(
                    model="demo", messages=history, stream=True) if chunk.choices)
            else:
                text = client.chat.completions.create(model="demo", messages=history).choices[0].message.content
        except Exception:       # the proxy went away: this response was not fully received
            return
        with lock:
            received.append((sent, text))
        history.append({"role": "assistant", "content": text})


def _run_once(upstream: str, out: Path, stop_after: int) -> list[tuple[str, str]]:
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "agent_core.cli", "proxy", "--upstream", upstream,
                             "--port", str(port), "--trace", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONUNBUFFERED": "1"})
    received: list[tuple[str, str]] = []
    lock = threading.Lock()
    threads = [threading.Thread(target=_worker, args=(f"http://127.0.0.1:{port}/v1", n, received, lock), daemon=True)
               for n in range(THREADS)]
    try:
        first = proc.stdout.readline()
        assert "chain-studio proxy on http://127.0.0.1:" in first, first or proc.stderr.read()
        for t in threads:
            t.start()
        deadline = time.monotonic() + 20
        while len(received) < stop_after and time.monotonic() < deadline and any(t.is_alive() for t in threads):
            time.sleep(0.005)
        assert len(received) >= stop_after, "the clients made too little progress"
    finally:
        proc.send_signal(signal.SIGTERM)
        stdout, stderr = proc.communicate(timeout=40)
    for t in threads:
        t.join(timeout=20)
        assert not t.is_alive()
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and stderr == "", stderr
    assert f"recorded {len(list(out.glob('conversation-*.jsonl')))} conversation(s)" in stdout
    with lock:
        return list(received)


def test_sigterm_mid_run_loses_no_exchange_the_client_received(demo_server, tmp_path):
    started = time.monotonic()
    for round_ in range(ROUNDS):
        out = tmp_path / f"round-{round_}"
        stop_after = 40 + 50 * round_          # SIGTERM at a different point of the run each time
        received = _run_once(demo_server.base_url, out, stop_after)
        assert len(received) < THREADS * CALLS, "SIGTERM came after the run ended"
        recorded: dict[str, str | None] = {}
        for path in sorted(out.glob("conversation-*.jsonl")):
            trace = read_trace(path)
            for call in trace.calls:
                if call.status == 200 and call.error is None:
                    recorded[json.dumps(call.request["messages"], ensure_ascii=False)] = call.reply["content"]
            # finalized on SIGTERM: the last reply is a message of the stream
            last = trace.calls[-1]
            if last.status == 200 and last.error is None:
                assert trace.stream[-1].to_openai()["content"] == last.reply["content"], path.name
        missing = [sent for sent, _ in received if sent not in recorded]
        assert not missing, f"round {round_}: {len(missing)} of {len(received)} received exchanges not recorded"
        assert all(recorded[sent] == text for sent, text in received)
        index = [json.loads(line) for line in (out / "index.jsonl").read_text(encoding="utf-8").splitlines()]
        assert not any("recording_error" in e for e in index)
    assert time.monotonic() - started < 60


class _SlowUpstream:
    """A tiny upstream on 127.0.0.1: a stream whose connection stays open a while after ``[DONE]``,
    or (``delay``) an answer that comes late."""

    def __init__(self, linger: float = 0.0, delay: float = 0.0):
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                time.sleep(delay)
                chunk = {"id": "chatcmpl-slow", "object": "chat.completion.chunk", "created": 1, "model": "slow",
                         "choices": [{"index": 0, "delta": {"role": "assistant", "content": "done soon"},
                                      "finish_reason": "stop"}]}
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for data in (f"data: {json.dumps(chunk)}\n\n".encode(), b"data: [DONE]\n\n"):
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                    self.wfile.flush()
                time.sleep(linger)
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        class Server(ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass        # the proxy dropping a stream its client left resets this side: not the test's business

        self.server = Server(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def test_a_stream_is_recorded_before_its_done_reaches_the_client(tmp_path):
    import httpx2

    from agent_core.serve.proxy import RecordingProxy

    with _SlowUpstream(linger=3.0) as upstream, \
            RecordingProxy(upstream.base_url, port=0, trace_dir=tmp_path / "p") as proxy:
        with httpx2.Client(timeout=10) as client, client.stream(
                "POST", proxy.base_url + "/chat/completions",
                json={"model": "slow", "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as r:
            t0 = time.monotonic()
            lines = []
            for line in r.iter_lines():
                lines.append(line)
                if line == "data: [DONE]":
                    break
            # the client has its whole answer; the upstream has not closed the stream yet
            (call,) = read_trace(tmp_path / "p" / "conversation-001.jsonl").calls
            assert time.monotonic() - t0 < 2.5
        assert call.reply == {"role": "assistant", "content": "done soon"} and call.error is None


def test_recording_errors_are_reported_and_hangups_are_quiet(demo_server, tmp_path, capsys):
    import httpx2

    from agent_core.serve.proxy import RecordingProxy

    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "p", verbose=True) as proxy:
        def broken(*args, **kwargs):
            raise OSError("disk full")

        proxy.recorder.record_chat = broken
        r = httpx2.post(proxy.base_url + "/chat/completions", timeout=10,
                        json={"model": "demo", "messages": [{"role": "user", "content": "hi"}]})
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Noted: hi"
        assert proxy.errors == ["POST /v1/chat/completions: OSError: disk full"]
    (entry,) = [json.loads(line) for line in (tmp_path / "p" / "index.jsonl").read_text().splitlines()]
    assert entry["recording_error"] == "POST /v1/chat/completions: OSError: disk full"
    assert entry["method"] == "POST" and entry["file"] is None
    # a client that hangs up before its answer: one line under --verbose, no traceback
    with _SlowUpstream(delay=0.5) as upstream, \
            RecordingProxy(upstream.base_url, port=0, trace_dir=tmp_path / "q", verbose=True) as proxy:
        body = b'{"model": "slow", "stream": true, "messages": [{"role": "user", "content": "bye"}]}'
        with socket.create_connection(("127.0.0.1", proxy.port)) as s:
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                      b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        deadline = time.monotonic() + 10
        while not (tmp_path / "q" / "conversation-001.jsonl").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
    out, err = capsys.readouterr()
    assert "Traceback" not in err and err == "", err
    (line,) = [line for line in out.splitlines() if "disconnected" in line]
    assert re.fullmatch(r"client 127\.0\.0\.1:\d+ disconnected \((BrokenPipe|ConnectionReset)Error\)", line), out
    (call,) = read_trace(tmp_path / "q" / "conversation-001.jsonl").calls
    assert call.error.startswith("the client disconnected mid-response")
