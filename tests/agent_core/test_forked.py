"""A value computed in a forked child (agent_core/core/forked.py): it comes back whole, and nothing is lost when
the child cannot compute it."""
from __future__ import annotations

import os

import pytest

from agent_core.core import forked
from agent_core.core.forked import Forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def test_the_value_is_computed_in_another_process_and_comes_back_whole():
    parent = os.getpid()
    big = {"pids": None, "text": "写" * 300_000}        # over a pipe's buffer: read while the child writes
    job = Forked(lambda: {**big, "pids": (parent, os.getpid())})
    assert job.forked
    value = job.result()
    assert value["text"] == big["text"] and value["pids"][0] == parent and value["pids"][1] != parent


def test_a_child_that_fails_leaves_the_value_to_the_caller():
    parent = os.getpid()

    def only_here() -> int:
        if os.getpid() != parent:
            raise RuntimeError("the child fails")
        return 42
    job = Forked(only_here)
    assert job.forked and job.result() == 42


def test_the_caller_meets_the_error_itself():
    def fails() -> None:
        raise ValueError("bad input")
    with pytest.raises(ValueError, match="bad input"):
        Forked(fails).result()


def test_without_a_fork_the_caller_computes_the_value(monkeypatch):
    def no_fork() -> int:
        raise OSError("Resource temporarily unavailable")
    monkeypatch.setattr(forked.os, "fork", no_fork)
    job = Forked(lambda: os.getpid())
    assert not job.forked and job.result() == os.getpid()
