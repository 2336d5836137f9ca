"""Paging through Phoenix's spans endpoint when a page is too slow, without a Phoenix.

A real Phoenix (test_phoenix.py) cannot be made slow on demand, so this one behaviour runs against a stand-in
HTTP server that answers like ``GET /v1/projects/{p}/spans`` (newest first, ``limit``, ``next_cursor``) and
takes too long for pages of more than 10 spans. Everything else about Phoenix is tested against the real one.
"""
from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import ClassVar

import pytest

from agent_core.ingest.phoenix import PhoenixError, iter_pages, parse_project_url

SPANS = [{"context": {"trace_id": "t1", "span_id": f"s{i}"}, "start_time": f"2026-12-03T10:00:{i:02d}+00:00",
          "attributes": {}} for i in range(23)]


class _Stand(BaseHTTPRequestHandler):
    limits: ClassVar[list[int]] = []

    def do_GET(self) -> None:
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(self.path).query))
        limit = int(query["limit"])
        self.limits.append(limit)
        if limit > 10:
            time.sleep(1.5)
        newest_first = SPANS[::-1]
        start = int(query.get("cursor", 0))
        page = newest_first[start:start + limit]
        more = start + limit < len(newest_first)
        body = json.dumps({"data": page, "next_cursor": str(start + limit) if more else None}).encode()
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass                                 # the client gave up on this page

    def log_message(self, *args) -> None:
        pass


@pytest.fixture
def stand():
    _Stand.limits = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Stand)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_a_slow_page_is_asked_again_smaller_and_every_span_arrives_once(stand):
    pages = list(iter_pages(stand, "p", page_size=40, timeout=0.5))
    assert _Stand.limits[:3] == [40, 20, 10]
    assert [len(p) for p in pages] == [10, 10, 3]
    got = [s["context"]["span_id"] for p in pages for s in p]
    assert sorted(got) == sorted(s["context"]["span_id"] for s in SPANS) and len(set(got)) == 23


def test_project_urls():
    assert parse_project_url("http://127.0.0.1:6006/projects/UHJvamVjdDox/traces?x=1") == (
        "http://127.0.0.1:6006", "UHJvamVjdDox")
    assert parse_project_url("https://phoenix.example/base/projects/my%20app") == (
        "https://phoenix.example/base", "my app")
    with pytest.raises(PhoenixError):
        parse_project_url("http://127.0.0.1:6006/traces/abc")
