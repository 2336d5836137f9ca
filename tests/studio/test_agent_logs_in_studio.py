"""Agents SDK exports and Inspect AI eval logs open in the studio with their exact calls (AppTest, Timeline)."""
from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import FIXTURES, walk

INSPECT = FIXTURES / "foreign" / "inspect"


def _texts(at) -> str:
    """Everything the page shows as text (markdown, code, captions, warnings)."""
    out = []
    for node in walk(at._tree):
        for attr in ("value", "body"):
            value = getattr(getattr(node, "proto", None), attr, None)
            if isinstance(value, str):
                out.append(value)
    return "\n".join(out)


def _agents_export(tmp_path, base_url):
    spec = importlib.util.spec_from_file_location(
        "agent_logs", FIXTURES.parent / "agent_core" / "test_import_agent_logs.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    path = tmp_path / "agents.jsonl"
    module.write_agents_export(path, base_url)
    return path


@pytest.mark.parametrize("kind", ["agents-sdk", "inspect"])
def test_timeline_shows_the_exact_calls(open_studio, demo_server, tmp_path, kind):
    if kind == "inspect":
        path, sent = INSPECT / "weather.json", json.loads((INSPECT / "sent.json").read_text(encoding="utf-8"))
    else:
        path = _agents_export(tmp_path, demo_server.base_url)
        sent = [json.loads(b) for b in demo_server.received]
    at = open_studio(path, page="screens/timeline.py")
    assert not at.exception, [e.message for e in at.exception]
    assert at.metric[0].value == str(len(sent)) == "2"
    at.number_input(key="call_input").set_value(1).run()      # the second call: the tool round's result
    shown = _texts(at)
    last = sent[-1]["messages"]
    # the tool result the second call sent, and its tool call id, are on the page as sent
    assert last[-1]["content"] in shown or json.dumps(last[-1]["content"]) in shown
    assert last[-1]["tool_call_id"] in shown
    if kind == "agents-sdk":
        assert "did not record tools" in shown        # the importer's note: tools were not in the export


def test_tools_nobody_recorded_are_not_shown_as_zero():
    from agent_core.ingest.detect import parse_any
    from studio.viewmodels.timeline import tools_count

    recorded = parse_any(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}), "body.json")
    assert tools_count(recorded, None) == 0                      # a request body: no tools key means none sent
    items = [{"object": "trace.span", "id": "s", "trace_id": "t", "span_data": {
        "type": "generation", "model": "m", "input": [{"role": "user", "content": "hi"}], "output": []}}]
    unrecorded = parse_any(json.dumps({"data": items}), "agents.json")
    assert tools_count(unrecorded, unrecorded.calls[0].tools) is None
