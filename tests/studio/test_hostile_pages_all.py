"""One generated hostile input per generator category through every studio page, with AppTest (issue 17).

The full run is ``python benchmarks/hostile_pages.py`` (every input; its figures are in the closing note); this
is its stratified subset (``--stratified``), driven by the same code: the studio opened on the input as
``chain-studio open`` does, then Traces, Timeline (first and middle call), Tokens, Lineage, Lint, Replay, Chat,
Compare and Learn in one session. No page may leave an uncaught exception, an error box may hold one line and no
traceback, and an input the studio refuses gets its refusal on every page. The chosen inputs include three that
crashed pages before: a symlink loop (every page), a tool call whose ``function`` is a number (Lineage) and
a call whose ``started_at`` is a number (Timeline).
"""
from __future__ import annotations

import pytest

from benchmarks import hostile_pages
from benchmarks.hostile_pages import hostile_inputs

INPUTS = hostile_pages.stratified(hostile_inputs.generate())


def test_the_subset_has_one_input_per_category():
    assert sorted(hostile_pages.category(i.name) for i in INPUTS) == sorted(hostile_pages.STRATA)
    assert [i.name for i in INPUTS] == [hostile_pages.STRATA[hostile_pages.category(i.name)] for i in INPUTS]


@pytest.mark.parametrize("item", INPUTS, ids=[i.name for i in INPUTS])
def test_every_page_survives_one_input_of_each_category(item, tmp_path, monkeypatch):
    monkeypatch.setenv(hostile_pages.OPEN_ENV, "")       # restored after the test (run_input sets it)
    runs = hostile_pages.run_input(item, tmp_path, timeout=60)
    assert len(runs) >= 1 + len(hostile_pages.PAGES)
    for run in runs:
        assert run.ok, (run.page, run.exceptions, run.bad_errors, run.timed_out)
    if item.special in ("loop", "fifo") or item.name == "huge/over-64mb":
        assert all(r.refused for r in runs), "an input the studio cannot read is refused on every page"
