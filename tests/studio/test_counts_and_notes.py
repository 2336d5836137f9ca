"""One count of calls in the CLI and on every screen, and the importer's notes on every screen that shows a trace."""
from __future__ import annotations

import json

import pytest
from conftest import HOSTILE, OTHER_PAGES, PAGES, SAMPLES

from agent_core.cli.main import main

# The screens that show the open trace (Chat and Learn show their own conversation).
TRACE_PAGES = [p for p in [*PAGES, *OTHER_PAGES] if p not in ("screens/chat.py", "screens/learn.py")]
U = {"role": "user", "content": "my name is Ada"}
A = {"role": "assistant", "content": "Nice to meet you, Ada!"}


def _unescaped(markdown: str) -> str:
    return markdown.replace("\\", "")


def _payload_log(tmp_path):
    """A request log with one line the importer skips, so it has a note to show."""
    path = tmp_path / "log.jsonl"
    path.write_text("\n".join([json.dumps({"model": "m", "messages": [U]}), json.dumps({"note": "not a request"}),
                               json.dumps({"model": "m", "messages": [U, A, U]})]) + "\n", encoding="utf-8")
    return path


def _cli_counts(path, capsys) -> tuple[int, int]:
    """(calls lint counts, lines ``export --as payloads`` writes)."""
    assert main(["lint", str(path), "--format", "json"]) in (0, 1)
    calls = json.loads(capsys.readouterr().out)["calls"]
    assert main(["export", str(path), "--as", "payloads"]) == 0
    return calls, len(capsys.readouterr().out.splitlines())


@pytest.mark.parametrize("name", [p.name for p in SAMPLES] + ["hostile", "payload-log"])
def test_lint_export_and_the_studio_count_the_same_calls(open_studio, tmp_path, capsys, name):
    paths = {p.name: p for p in SAMPLES} | {"hostile": HOSTILE, "payload-log": _payload_log(tmp_path)}
    path = paths[name]
    calls, payload_lines = _cli_counts(path, capsys)
    assert payload_lines == calls
    at = open_studio(path)
    assert [m.value for m in at.metric if m.label == "Calls"] == [f"{calls:,}"], "the Traces card"
    at.switch_page("screens/timeline.py").run()
    assert at.metric[0].label == "Calls" and at.metric[0].value == f"{calls:,}"
    assert at.number_input(key="call_input").max == calls - 1


def test_every_screen_shows_the_importers_notes(open_studio, tmp_path):
    path = _payload_log(tmp_path)
    note = "line 2 holds neither a request body nor a conversation and was skipped"
    at = open_studio(path)
    for page in TRACE_PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        assert note in [_unescaped(w.value) for w in at.warning], page


def test_many_notes_fold_into_an_expander(open_studio, tmp_path):
    path = tmp_path / "noisy.jsonl"
    lines = [json.dumps({"model": "m", "messages": [U]})] + [json.dumps({"n": i}) for i in range(6)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    at = open_studio(path, "screens/timeline.py")
    shown = [_unescaped(w.value) for w in at.warning]
    assert shown == [f"line {n} holds neither a request body nor a conversation and was skipped" for n in (2, 3, 4)]
    assert at.expander[0].label == "3 more importer notes"


def test_a_file_with_nothing_importable_is_one_sentence_on_every_screen(open_studio, tmp_path):
    """OTLP JSON of a chat span recorded without its messages (content capture off, the instrumentations' default)."""
    span = {"name": "chat gpt-4o", "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                                                  {"key": "gen_ai.request.model", "value": {"stringValue": "gpt-4o"}}]}
    path = tmp_path / "spans.json"
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span, span]}]}]}), encoding="utf-8")
    at = open_studio(path)
    for page in TRACE_PAGES:
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        if page != "screens/traces.py":
            assert len(at.error) == 1, (page, [e.value for e in at.error])
            assert ("2 spans carry no message content: enable content capture in your instrumentation"
                    in _unescaped(at.error[0].value)), page
