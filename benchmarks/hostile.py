"""Every hostile input x the five file commands, as child processes, with figures (issue 17).

    python benchmarks/hostile.py                 # all inputs, forked children (fast)
    python benchmarks/hostile.py --exec          # each run a fresh `python -m agent_core.cli` (slow, exact)
    python benchmarks/hostile.py --only huge/ --json

Inputs come from ``tests/fixtures/hostile_inputs.py`` (deterministic). Each run
is a child process with stdout/stderr to files, killed after ``--timeout``
seconds; its own peak RSS comes from ``os.wait4``. A run passes when: no
"Traceback" in stderr (nor the CLI's last-resort "this is a Chain Studio bug" line, which counts as one), exit code in {0, 1, 2}, time under the timeout, the
input file's sha256 unchanged, and its peak RSS (address space capped at 4 GB, so a runaway read
fails with a traceback instead of starving the machine) above the same command's
baseline (a small valid trace) is under 10x the input size (floor: 64 MB, so
kilobyte inputs are not judged by interpreter noise).

In the default fork mode the parent imports the CLI once and forks a child per
run (a subprocess without the interpreter start-up); ``--exec`` starts a new
interpreter per run, as a user would.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import signal
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT))

import hostile_inputs

COMMANDS, BUG_LINE = hostile_inputs.COMMANDS, hostile_inputs.BUG_LINE
MEMORY_FACTOR = 10
MEMORY_FLOOR = 64 * 1024 * 1024
MEMORY_CAP = 4 * 1024 ** 3     # address-space cap per run: a runaway read fails fast instead of starving the machine


def _cap_memory() -> None:
    import resource
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


@dataclass
class Run:
    input: str
    command: str
    size: int
    exit: int | None
    seconds: float
    peak_rss: int
    traceback: bool
    modified: bool
    timed_out: bool
    stderr: str

    def excess(self, baseline: int) -> int:
        return max(0, self.peak_rss - baseline)

    def ok(self, baseline: int, timeout: float) -> bool:
        return (not self.traceback and self.exit in (0, 1, 2) and not self.timed_out and self.seconds < timeout
                and not self.modified and self.excess(baseline) <= max(MEMORY_FACTOR * self.size, MEMORY_FLOOR))


def _digest(path: Path) -> str | None:
    try:
        if not path.is_file():
            return None
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()
    except OSError:
        return None


def _fork_child(argv: list[str], stdout: Path, stderr: Path) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    try:
        _cap_memory()
        out = os.open(stdout, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        err = os.open(stderr, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(err, 2)
        from agent_core.cli.main import main
        code = main(argv)
    except SystemExit as exit_:
        code = exit_.code if isinstance(exit_.code, int) else 1
    except BaseException:  # noqa: BLE001 -- what an uncaught exception would print, for the check to find
        import traceback
        traceback.print_exc()
        code = 1
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    finally:
        os._exit(code)


def _exec_child(argv: list[str], stdout: Path, stderr: Path) -> int:
    import subprocess
    with open(stdout, "wb") as out, open(stderr, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "agent_core.cli", *argv], stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, cwd=str(ROOT), preexec_fn=_cap_memory)  # noqa: PLW1509
    proc.returncode = None
    return proc.pid


def run_one(argv: list[str], scratch: Path, timeout: float, exec_mode: bool) -> tuple[int | None, float, int, bool, str]:
    """Exit code (None when killed), seconds, peak RSS in bytes, timed out, stderr text."""
    stdout, stderr = scratch / "stdout", scratch / "stderr"
    start = time.perf_counter()
    pid = (_exec_child if exec_mode else _fork_child)(argv, stdout, stderr)
    timed_out = False
    while True:
        done, status, usage = os.wait4(pid, os.WNOHANG)
        if done:
            break
        if time.perf_counter() - start > timeout:
            os.kill(pid, signal.SIGKILL)
            done, status, usage = os.wait4(pid, 0)
            timed_out = True
            break
        time.sleep(0.005)
    seconds = time.perf_counter() - start
    code = os.waitstatus_to_exitcode(status)
    text = stderr.read_text(encoding="utf-8", errors="replace")
    return (None if timed_out else code), seconds, usage.ru_maxrss * 1024, timed_out, text


def baseline(command: str, scratch: Path, timeout: float, exec_mode: bool) -> int:
    """Peak RSS of ``command`` on a small valid trace: what any run costs before its input does."""
    path = hostile_inputs.BASE_TRACE
    argv = [a.format(path=path, out=scratch / "repaired.out") for a in COMMANDS[command]]
    return max(run_one(argv, scratch, timeout, exec_mode)[2] for _ in range(2))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="run inputs whose name starts with one of these (comma-separated)")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated: " + ", ".join(COMMANDS))
    parser.add_argument("--timeout", type=float, default=20.0)
    parser.add_argument("--exec", action="store_true", help="a fresh interpreter per run")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--failures", type=int, default=30, help="how many failing runs to list")
    parser.add_argument("--log", default=None, help="append one JSON line per run to this file as it finishes")
    args = parser.parse_args(argv)
    if not args.exec:      # the parent pays the imports once; each forked child starts from here
        import agent_core.cli.main
        import agent_core.export.formats
        import agent_core.lint.repair
        import agent_core.replay.engine  # noqa: F401
        from agent_core.trace.tokens import counter_for
        for model in ("gpt-4o", "gpt-4", None):      # the vocabularies the replays and reports load
            counter_for(model).encode_len("warm")
    commands = args.commands.split(",")
    inputs = [i for i in hostile_inputs.generate() if i.name.startswith(tuple(args.only.split(",")))]
    runs: list[Run] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        scratch, files = Path(tmp) / "scratch", Path(tmp) / "inputs"
        scratch.mkdir()
        bases = {c: baseline(c, scratch, args.timeout, args.exec) for c in commands}
        for n, item in enumerate(inputs):
            path = hostile_inputs.materialise(item, files)
            size = path.stat().st_size if path.is_file() else 0
            before = _digest(path)
            for command in commands:
                argv_ = [a.format(path=path, out=scratch / "repaired.out") for a in COMMANDS[command]]
                code, seconds, rss, timed_out, err = run_one(argv_, scratch, args.timeout, args.exec)
                runs.append(Run(item.name, command, size, code, round(seconds, 3), rss,
                                "Traceback" in err or BUG_LINE in err, _digest(path) != before, timed_out,
                                err.strip()[-300:]))
                if args.log:
                    with open(args.log, "a", encoding="utf-8") as log:
                        log.write(json.dumps({**asdict(runs[-1]), "baseline": bases[command]}) + "\n")

            if item.family == "huge" and path.is_file():
                path.unlink()          # tens of MB each: do not keep them all
            if not args.json and (n + 1) % 50 == 0:
                print(f"  {n + 1}/{len(inputs)} inputs, {len(runs)} runs, {time.perf_counter() - started:.0f} s",
                      file=sys.stderr)
    report = summarise(runs, bases, args.timeout)
    report["mode"] = "exec" if args.exec else "fork"
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    if args.json:
        report["failed_runs"] = [asdict(r) for r in runs if not r.ok(bases[r.command], args.timeout)]
        print(json.dumps(report, indent=1))
    else:
        print_report(report, runs, bases, args)
    return 0 if report["failed"] == 0 else 1


def summarise(runs: list[Run], bases: dict[str, int], timeout: float) -> dict:
    big = [r for r in runs if r.size >= 1024 * 1024]
    return {
        "inputs": len({r.input for r in runs}), "runs": len(runs),
        "failed": sum(not r.ok(bases[r.command], timeout) for r in runs),
        "tracebacks_or_bug_lines": sum(r.traceback for r in runs),
        "exit_codes": {str(k): sum(r.exit == k for r in runs) for k in sorted({r.exit for r in runs}, key=str)},
        "timeouts": sum(r.timed_out for r in runs),
        "max_seconds": max(r.seconds for r in runs),
        "slowest": max(runs, key=lambda r: r.seconds).input + " " + max(runs, key=lambda r: r.seconds).command,
        "max_memory_ratio_inputs_over_1mb": round(max((r.excess(bases[r.command]) / r.size for r in big),
                                                      default=0.0), 2),
        "max_excess_rss_mb": round(max(r.excess(bases[r.command]) for r in runs) / 2**20, 1),
        "baseline_rss_mb": {c: round(b / 2**20, 1) for c, b in bases.items()},
        "modified_inputs": len({r.input for r in runs if r.modified}),
    }


def print_report(report: dict, runs: list[Run], bases: dict[str, int], args: argparse.Namespace) -> None:
    print(f"hostile inputs: {report['inputs']}  runs: {report['runs']}  mode: {report['mode']}  "
          f"wall: {report['wall_seconds']} s")
    rows = [("tracebacks (incl. last-resort bug lines)", report["tracebacks_or_bug_lines"]), ("exit codes", report["exit_codes"]),
            ("runs over the timeout", report["timeouts"]),
            ("max time", f"{report['max_seconds']:.2f} s ({report['slowest']})"),
            ("max memory ratio (excess RSS / size, inputs >= 1 MB)", report["max_memory_ratio_inputs_over_1mb"]),
            ("max excess RSS over baseline", f"{report['max_excess_rss_mb']} MB"),
            ("baseline RSS per command", report["baseline_rss_mb"]),
            ("modified inputs", report["modified_inputs"]), ("failed runs", report["failed"])]
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"  {key:<{width}}  {value}")
    print("\nhuge inputs:")
    for r in runs:
        if r.size >= 1024 * 1024:
            print(f"  {r.input:<28} {r.command:<7} {r.size / 2**20:6.1f} MB  exit {r.exit}  {r.seconds:6.2f} s  "
                  f"excess RSS {r.excess(bases[r.command]) / 2**20:7.1f} MB "
                  f"({r.excess(bases[r.command]) / r.size:.1f}x)")
    failed = [r for r in runs if not r.ok(bases[r.command], args.timeout)]
    if failed:
        print(f"\nfailing runs (first {args.failures}):")
        for r in failed[:args.failures]:
            last = r.stderr.splitlines()[-1] if r.stderr else ""
            print(f"  {r.input} {r.command}: exit {r.exit} {r.seconds:.1f} s rss+{r.excess(bases[r.command]) >> 20} MB"
                  f"{' CRASH' if r.traceback else ''}{' MODIFIED' if r.modified else ''}: {last[:160]}")


if __name__ == "__main__":
    sys.exit(main())
