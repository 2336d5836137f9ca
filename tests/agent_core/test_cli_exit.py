"""The ``chain-studio`` command ends without freeing what it built (cli/main.py : console, core/heap.py : keep): its
output, exit code and exit handlers are those of ``main``, and nothing is kept when ``main`` runs in a process that
goes on (a test, a server)."""
from __future__ import annotations

import io
import os
import subprocess
import sys

from agent_core.cli.main import main
from agent_core.core import heap
from agent_core.core.paths import SAMPLE_TRACES
from agent_core.replay.report import replay_file

SAMPLE = str(SAMPLE_TRACES / "naive_trim_orphan.jsonl")


def test_the_command_prints_and_exits_as_main_and_runs_the_exit_handlers(tmp_path, capsys):
    store = tmp_path / "counts"
    run = subprocess.run([sys.executable, "-m", "agent_core.cli", "replay", SAMPLE, "--policy", "keep-all"],
                         capture_output=True, text=True, env={**os.environ, "CHAIN_STUDIO_TOKEN_CACHE": str(store)})
    assert main(["replay", SAMPLE, "--policy", "keep-all"]) == run.returncode == 0
    assert run.stdout == capsys.readouterr().out and run.stdout.endswith("}\n")
    # fewer counts than a batch: on disk only through the store's exit handler (trace/tokens.py : token_store)
    assert [p.stat().st_size > 0 for p in store.glob("*.bin")] == [True]
    lint = subprocess.run([sys.executable, "-m", "agent_core.cli", "lint", SAMPLE], capture_output=True, text=True)
    assert lint.returncode == main(["lint", SAMPLE]) == 1         # the sample's orphan is an error


def test_nothing_is_kept_by_a_process_that_goes_on():
    before = len(heap._left)
    replay_file(SAMPLE, "keep-all", out=io.StringIO())
    assert len(heap._left) == before == 0
