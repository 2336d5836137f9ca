"""Lint findings kept on disk between servers (studio/view_store.py): keyed by trace, profile and code, checked by
hash, never trusted when damaged. Expected findings come from the linter itself (``lint_trace``)."""
from __future__ import annotations

import os
import stat

import pytest
import streamlit as st

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.lint.scan import lint_trace
from agent_core.trace.reader import read_trace
from studio import view_store

NAIVE = SAMPLE_TRACES / "naive_trim_orphan.jsonl"


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv(view_store.ENV, str(tmp_path / "views"))
    return tmp_path / "views"


def _found():
    return [f.export() for f in lint_trace(read_trace(NAIVE), profile="openai")]


def test_a_view_reads_back_only_under_its_own_key(store, monkeypatch):
    found = _found()
    assert found and view_store.save("findings", "d1", "openai", found)
    assert view_store.load("findings", "d1", "openai") == found
    assert view_store.load("findings", "d1", "anthropic") is None
    assert view_store.load("findings", "d2", "openai") is None
    [path] = store.glob("*.json")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    monkeypatch.setattr(view_store, "code_digest", lambda: "other code")
    assert view_store.load("findings", "d1", "openai") is None, "findings of other code were trusted"


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_a_damaged_file_is_never_trusted_and_is_removed(store, damage):
    found = _found()
    view_store.save("findings", "d1", "openai", found)
    [path] = store.glob("*.json")
    data = bytearray(path.read_bytes())
    if damage == "flip":
        data[-5] ^= 0x01
    elif damage == "truncate":
        data = data[:-10]
    else:
        data = bytearray()
    path.write_bytes(bytes(data))
    assert view_store.load("findings", "d1", "openai") is None
    assert not path.exists()


def test_off_and_values_json_would_change_are_not_stored(store, monkeypatch):
    assert not view_store.save("findings", "d1", "openai", [{"at": (1, 2)}])     # a tuple reads back as a list
    assert not store.exists() or not list(store.glob("*.json"))
    monkeypatch.setenv(view_store.ENV, "off")
    assert view_store.directory() is None
    assert not view_store.save("findings", "d1", "openai", [])
    monkeypatch.delenv(view_store.ENV)
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", "off")
    assert view_store.directory() is None


def test_at_most_max_files_are_kept(store, monkeypatch):
    monkeypatch.setattr(view_store, "MAX_FILES", 3)
    for i in range(5):
        view_store.save("findings", f"d{i}", "openai", [i])
        os.utime(next(p for p in store.glob("*.json") if view_store.load("findings", f"d{i}", "openai") == [i]),
                 ns=(i * 10**9, i * 10**9))
    assert len(list(store.glob("*.json"))) == 3
    assert view_store.load("findings", "d4", "openai") == [4]


def test_another_server_reads_the_findings_instead_of_linting(open_studio, store, monkeypatch):
    from studio import services

    st.cache_resource.clear()
    at = open_studio(NAIVE, "screens/timeline.py")
    expected = sum(1 for f in _found() if f["severity"] != "info")
    assert {m.label: m.value for m in at.metric}["Findings"] == str(expected)
    assert list(store.glob("findings-*.json"))
    st.cache_resource.clear()                                 # a new server: nothing in memory
    linted: list = []
    monkeypatch.setattr(services._findings_vm, "findings_for", lambda *a: linted.append(a) or [])
    at = open_studio(NAIVE, "screens/timeline.py")
    assert linted == [] and {m.label: m.value for m in at.metric}["Findings"] == str(expected)
