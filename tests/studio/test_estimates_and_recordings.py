"""Counts estimated from a sample say so (Tokens page, replay text reports), and the Traces list finds the
recordings ``chain-studio proxy`` and ``collect`` write in subfolders."""
from __future__ import annotations

import json
import os

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.report import replay_file
from agent_core.trace.model import Call, Trace
from agent_core.trace.tokens import TokenCounter, trace_sampled_texts

BIG = "word " * 500_001          # 2,500,005 characters: over TokenCounter.EXACT_LIMIT (2,000,000)
NEAR = "word " * 390_000         # 1,950,000 characters: encoded whole, exact


def _chat_trace(text: str) -> Trace:
    first = [{"role": "user", "content": text}]
    return Trace(source="t", format="f", calls=[
        Call(index=0, request={"model": "gpt-4o", "messages": first}),
        Call(index=1, request={"model": "gpt-4o", "messages": [*first, {"role": "assistant", "content": "ok"}]})])


def test_the_sampled_texts_are_the_ones_the_counter_estimates():
    for text, expected in ((BIG, 1), (NEAR, 0)):
        trace = _chat_trace(text)
        counter = TokenCounter(model="gpt-4o")      # a fresh counter: its own tally of sampled texts
        counter.count_calls_by_role(trace.calls)
        assert counter.estimated_texts == expected
        assert trace_sampled_texts(trace) == expected   # one text, carried by both calls
    responses = Trace(source="t", format="f", calls=[Call(index=0, request={"model": "gpt-4.1", "input": BIG})])
    assert trace_sampled_texts(responses) == 1


def test_replay_text_reports_say_the_counts_are_estimated(tmp_path):
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": BIG}]}))
    resp = tmp_path / "responses.json"
    resp.write_text(json.dumps({"model": "gpt-4.1", "input": [{"role": "user", "content": BIG}]}))
    for path in (chat, resp):
        last = replay_file(str(path), "keep-all", fmt="text").splitlines()[-1]
        assert last.startswith("note: token counts estimated from a sample: 1 text over 2M characters"), last
    exact = replay_file(str(SAMPLE_TRACES / "classic_remembers.jsonl"), "keep-all", fmt="text")
    assert "estimated from a sample" not in exact


def test_tokens_traces_and_replay_pages_say_the_counts_are_estimated_from_a_sample(open_studio, tmp_path):
    path = tmp_path / "big.json"
    path.write_text(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": BIG}]}))
    for page in ("screens/tokens.py", "screens/traces.py", "screens/replay.py"):
        at = open_studio(path, page)
        notes = [c.value for c in at.caption if "estimated from a sample" in c.value]
        assert len(notes) == 1, (page, notes)
        assert notes[0].startswith("Token counts estimated from a sample: 1 text over 2M characters"), page
    plain = open_studio(SAMPLE_TRACES / "classic_remembers.jsonl", "screens/tokens.py")
    assert not [c.value for c in plain.caption if "estimated from a sample" in c.value]


def _recordings(tmp_path):
    folder = tmp_path / "traces"
    files = {"top.jsonl": 100, "collect/otel.jsonl": 300, "proxy-20261203-101010/session.jsonl": 200,
             "collect/notes.txt": 400, "proxy-20261203-101010/deeper/two.jsonl": 500}
    for name, mtime in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(SAMPLE_TRACES.joinpath("classic_remembers.jsonl").read_text())
        os.utime(path, (mtime, mtime))
    return folder


def test_traces_list_reads_one_subfolder_level_newest_first_and_bounded(tmp_path, monkeypatch):
    from studio import services

    monkeypatch.setenv("CHAIN_STUDIO_TRACES_DIR", str(_recordings(tmp_path)))
    monkeypatch.delenv("CHAIN_STUDIO_OPEN", raising=False)
    labels = [s.label for s in services.builtin_sources() if s.kind == "recording"]
    # newest first; a .txt and a file two levels down are not listed
    assert labels == ["collect/otel.jsonl", "proxy-20261203-101010/session.jsonl", "top.jsonl"]
    monkeypatch.setattr(services, "MAX_RECORDINGS", 2)
    assert [s.label for s in services.builtin_sources() if s.kind == "recording"] == labels[:2]


def test_traces_page_offers_a_collect_recording(open_studio, tmp_path, monkeypatch):
    monkeypatch.setenv("CHAIN_STUDIO_TRACES_DIR", str(_recordings(tmp_path)))
    at = open_studio(None)
    options = [o for box in at.selectbox for o in box.options]
    assert any("collect/otel.jsonl" in o for o in options), options
