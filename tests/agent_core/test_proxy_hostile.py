"""The recording proxy given hostile requests: a negative Content-Length, a key as the session label."""
from __future__ import annotations

import json
import socket
import time
from urllib.parse import urlsplit

import httpx2
import pytest

from agent_core.serve.proxy import SESSION_HEADER, RecordingProxy


@pytest.fixture
def proxy(demo_server, tmp_path):
    with RecordingProxy(demo_server.base_url, port=0, trace_dir=tmp_path / "proxy") as p:
        yield p


def _exchange(base_url: str, raw: bytes) -> bytes:
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as s:
        s.sendall(raw)
        chunks = []
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        return b"".join(chunks)


@pytest.mark.parametrize("length", ["-5", "-1", "abc", "1e3"])
def test_an_invalid_content_length_is_refused_and_not_forwarded(proxy, length):
    body = json.dumps({"model": "demo", "messages": [{"role": "user", "content": "hi"}]}).encode()
    request = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
               f"Content-Length: {length}\r\n\r\n").encode() + body
    t0 = time.perf_counter()
    reply = _exchange(proxy.base_url, request)
    assert time.perf_counter() - t0 < 4       # answered at once, not after the client gave up
    assert reply.startswith(b"HTTP/1.") and b" 400 " in reply.split(b"\r\n", 1)[0], reply[:200]
    proxy.stop()
    recorded = [p.name for p in proxy.trace_dir.glob("*.jsonl") if p.name != "index.jsonl"]
    assert recorded == []                     # nothing went upstream, nothing was recorded as a call


def test_a_key_as_session_label_lands_in_no_file_name_and_no_file(proxy):
    key = "sk-proj-SessionKey0123456789abcdefXYZ"
    with httpx2.Client(timeout=30) as c:
        r = c.post(proxy.base_url + "/chat/completions", headers={SESSION_HEADER: key},
                   json={"model": "demo", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200
    proxy.stop()
    files = sorted(proxy.trace_dir.iterdir())
    assert any(p.name.startswith("session-redacted-") for p in files), [p.name for p in files]
    for p in files:
        for fragment in (key, key[3:15], "SessionKey"):
            assert fragment not in p.name
            assert fragment.encode() not in p.read_bytes(), p.name


def test_a_session_label_with_path_characters_stays_in_the_directory(proxy):
    with httpx2.Client(timeout=30) as c:
        r = c.post(proxy.base_url + "/chat/completions", headers={SESSION_HEADER: "../../etc/passwd\u202e".encode()},
                   json={"model": "demo", "messages": [{"role": "user", "content": "hi"}]})
    assert r.status_code == 200
    proxy.stop()
    names = [p.name for p in proxy.trace_dir.iterdir()]
    assert all("/" not in n and ".." not in n and n.isascii() for n in names), names
    assert any(n.startswith("session-etc-passwd-") for n in names), names
