"""A line-oriented payload log is streamed: no size limit, equal messages become one object, same trace."""
from __future__ import annotations

import json

import pytest

from agent_core.core import limits
from agent_core.core.errors import MalformedTraceError
from agent_core.ingest.detect import load_any, parse_any
from agent_core.trace.synthetic import synthetic_trace


def _log(tmp_path, calls: int = 60, window: int | None = None):
    trace = synthetic_trace(calls)
    path = tmp_path / "requests.jsonl"
    with open(path, "w", encoding="utf-8") as f:
        for c in trace.calls:
            body = dict(c.request)
            body["tools"] = [{"type": "function", "function": {"name": "get_weather", "parameters": {
                "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]
            if window:                  # an app that trims: system + the last `window` messages
                body["messages"] = body["messages"][:1] + body["messages"][1:][-window:]
            f.write(json.dumps({"request": body, "response": {"id": f"r{c.index}"}}, ensure_ascii=False) + "\n")
    return path


def _positions(trace) -> list[list[int | None]]:
    where = {m.id: i for i, m in enumerate(trace.stream)}
    return [[where.get(i) for i in c.message_ids] for c in trace.calls]


@pytest.mark.parametrize("window", [None, 9])
def test_a_streamed_log_gives_the_trace_a_whole_read_gives(tmp_path, window):
    path = _log(tmp_path, window=window)
    streamed = load_any(path)
    whole = parse_any(path.read_bytes(), str(path))
    assert streamed.format == whole.format == "request-response-jsonl"
    assert [c.messages for c in streamed.calls] == [c.messages for c in whole.calls]
    assert _positions(streamed) == _positions(whole)        # ids are fresh per import: compare where they point
    assert [m.to_openai() for m in streamed.stream] == [m.to_openai() for m in whole.stream]
    assert [(e.type, e.after_add) for e in streamed.events] == [(e.type, e.after_add) for e in whole.events]
    # equal messages of consecutive payloads are one object: memory follows the distinct messages
    objects = {id(m) for c in streamed.calls for m in c.messages}
    assert len(objects) <= len(streamed.stream) + 1
    # and the tool definitions every line repeats are one object too, equal to what each line holds
    assert [c.request["tools"] for c in streamed.calls] == [c.request["tools"] for c in whole.calls]
    assert len({id(c.request["tools"]) for c in streamed.calls}) == 1 < len({id(c.request["tools"]) for c in whole.calls})


def test_no_size_limit_for_a_line_log_but_one_for_a_single_document(tmp_path, monkeypatch):
    path = _log(tmp_path, calls=40)
    single = tmp_path / "one.json"
    single.write_text(json.dumps(json.loads(path.read_text(encoding="utf-8").splitlines()[-1])["request"]),
                      encoding="utf-8")
    monkeypatch.setattr(limits, "MAX_INPUT_BYTES", 1024)      # both files are bigger than this
    monkeypatch.setattr(limits, "MAX_INPUT_MB", 0)
    assert len(load_any(path).calls) == 40
    with pytest.raises(MalformedTraceError, match="CHAIN_STUDIO_MAX_INPUT_MB"):
        load_any(single)


def test_progress_reports_bytes_and_calls_and_bad_lines_are_named(tmp_path):
    path = _log(tmp_path, calls=30)
    seen = []
    load_any(path, progress=lambda done, total, lines: seen.append((done, total, lines)))
    size = path.stat().st_size
    assert seen[-1] == (size, size, 30)
    with open(path, "a", encoding="utf-8") as f:
        f.write('{"request": {"messages": [}\n')
    with pytest.raises(MalformedTraceError) as info:
        load_any(path)
    assert ":31:" in str(info.value) or "line 31" in str(info.value)
