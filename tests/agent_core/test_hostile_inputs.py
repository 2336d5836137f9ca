"""Hostile files through the five file commands: one plain line, an exit code in {0, 1, 2}, the input untouched.

A representative subset of ``tests/fixtures/hostile_inputs.py`` (every family, every kind of hostile
value) runs in-process through the CLI's ``main`` with captured output; the cases only a real process
shows (a FIFO, /dev/zero behind a symlink, a closed pipe) run as subprocesses. The whole generator, as
child processes with time and memory figures, is ``benchmarks/hostile.py``.
"""
from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_core.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import hostile_inputs

ROOT = Path(__file__).resolve().parents[2]
COMMANDS = hostile_inputs.COMMANDS
ALL = hostile_inputs.generate()
BUG_LINE = hostile_inputs.BUG_LINE


def _subset() -> list[hostile_inputs.HostileInput]:
    """Every file-level input, and an even spread over each format family: about 60 inputs."""
    regular = [i for i in ALL if i.special is None and i.family != "huge"]
    picked = [i for i in regular if i.family == "file"][::2]
    for family in ("request", "messages", "jsonl", "otel", "agentscope", "trace"):
        members = [i for i in regular if i.family == family]
        picked += members[::max(1, len(members) // 6)][:6]
    must = {"trace/header.version=zero", "trace/header.meta=str", "request/messages.2.tool_calls=int",
            "request/messages.3.tool_call_id=list", "request/messages.1.role=obj", "file/surrogate-everywhere",
            "file/bigint-top", "request/messages.1.content=surrogate"}
    picked += [i for i in regular if i.name in must and i not in picked]
    return picked


SUBSET = _subset()


def test_the_generator_makes_hundreds_of_distinct_inputs_deterministically():
    assert len(ALL) >= 300
    assert [i.name for i in hostile_inputs.generate()] == [i.name for i in ALL]
    families = {i.family for i in ALL}
    assert {"trace", "request", "messages", "jsonl", "otel", "agentscope", "file", "huge", "special"} <= families
    assert 55 <= len(SUBSET) <= 75


@pytest.mark.parametrize("item", SUBSET, ids=[i.name for i in SUBSET])
def test_every_command_ends_in_one_plain_line_or_output(item, tmp_path, capsys):
    path = hostile_inputs.materialise(item, tmp_path)
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    for name, template in COMMANDS.items():
        argv = [a.format(path=path, out=tmp_path / "repaired.out") for a in template]
        code = main(argv)
        _out, err = capsys.readouterr()
        assert code in (0, 1, 2), (name, code, err)
        assert "Traceback" not in err and BUG_LINE not in err, (name, err)
        if code == 2:      # refused: exactly one line naming the file
            assert err.count("\n") == 1 and err.startswith(f"chain-studio: {path}"), (name, err)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before


def _cli(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("CHAIN_STUDIO_DEBUG", None)
    return subprocess.run([sys.executable, "-m", "agent_core.cli", *args], check=False, capture_output=True,
                          text=True, timeout=30, env=env, cwd=str(ROOT), **kwargs)


@pytest.mark.parametrize("special", ["fifo", "/dev/zero", "/dev/urandom", "dir"])
def test_what_is_not_a_regular_file_is_refused_at_once(special, tmp_path):
    item = next(i for i in ALL if i.special == special and (special in ("fifo", "dir") or i.link))
    path = hostile_inputs.materialise(item, tmp_path)
    result = _cli(["lint", str(path)])      # before the gate: a FIFO blocked forever, /dev/zero filled memory
    assert result.returncode == 2
    assert result.stderr.startswith(f"chain-studio: {path}: not a regular file (")
    assert result.stderr.count("\n") == 1


def test_a_closed_pipe_ends_quietly(tmp_path):
    """``chain-studio lint big | head -1``: the reader goes away after one line; no BrokenPipeError traceback."""
    sample = ROOT / "sample_traces" / "long_trimmed_fact.jsonl"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cli = subprocess.Popen([sys.executable, "-m", "agent_core.cli", "export", str(sample), "--as", "html"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ROOT))
    assert cli.stdout is not None
    cli.stdout.read(10)
    cli.stdout.close()              # what head does after its first lines
    err = cli.stderr.read().decode() if cli.stderr else ""
    assert cli.wait(timeout=30) in (0, 1)
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_lone_surrogates_are_written_as_json_escapes(tmp_path):
    item = next(i for i in ALL if i.name == "file/surrogate-everywhere")
    path = hostile_inputs.materialise(item, tmp_path)
    result = _cli(["export", str(path), "--as", "json"])
    assert result.returncode == 0, result.stderr
    assert '"content": "\\ud800"' in result.stdout or '"content":"\\ud800"' in result.stdout


def test_an_integer_over_the_int_string_limit_is_located():
    item = next(i for i in ALL if i.name == "file/bigint-trace-version")
    with pytest.raises(Exception) as caught:
        from agent_core.ingest.detect import parse_any
        parse_any(item.data or b"", "<t>")
    assert str(caught.value) == "<t>:1:58: a number of 5000 digits is too long to read"
