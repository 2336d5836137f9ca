"""Every hostile input x every studio page, with Streamlit's AppTest, with figures (issue 17).

    python benchmarks/hostile_pages.py                      # every generated input (long: about an hour)
    python benchmarks/hostile_pages.py --stratified         # one input per generator category
    python benchmarks/hostile_pages.py --only file/,special/ --json

Inputs come from ``tests/fixtures/hostile_inputs.py`` (deterministic). For each one the studio is opened on it
as ``chain-studio open PATH`` does (``$CHAIN_STUDIO_OPEN``), then every page of ``studio/router.py`` runs in
turn in that session: Traces, Timeline (first call, then a middle call), Tokens, Lineage, Lint, Replay, Chat,
Compare, Learn. A page run fails when it leaves an uncaught exception (``at.exception``), when an error box
holds a traceback or more than one line, or when it does not finish within ``--timeout`` seconds. An input
the studio refuses must still give every page a one-line refusal, not a crash.

Figures: inputs, page runs, uncaught exceptions, multi-line or traceback errors, timeouts, the slowest run.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "fixtures"))
sys.path.insert(0, str(ROOT))

import hostile_inputs

APP = ROOT / "studio" / "app.py"
OPEN_ENV = "CHAIN_STUDIO_OPEN"      # studio/services.py OPEN_ENV
CALL_KEY = "selected_call"          # studio/components/state.py CALL_KEY
PAGES = ["screens/traces.py", "screens/timeline.py", "screens/tokens.py", "screens/lineage.py", "screens/lint.py",
         "screens/replay.py", "screens/chat.py", "screens/compare.py", "screens/learn.py"]
MIDDLE = "screens/timeline.py#middle"     # the Timeline again, on the trace's middle call
STRATA = {    # category -> the input run in the test suite (tests/studio/test_hostile_pages_all.py)
    "file": "file/surrogate-everywhere", "special": "special/loop", "huge": "huge/over-64mb",
    "request": "request/messages.2.tool_calls.0.function=int", "messages": "messages/3.tool_call_id=list",
    "jsonl": "jsonl/line2=deep_obj", "payload-log": "payload-log/response.choices.0.message.tool_calls=obj",
    "otel": "otel/resourceSpans.0.scopeSpans.0.spans.0.attributes.2.value.stringValue=surrogate",
    "agentscope": "agentscope/2.content.0.id=obj", "trace": "trace/line7.started_at=int",
}


def category(name: str) -> str:
    return name.split("/", 1)[0]


@dataclass
class PageRun:
    input: str
    page: str
    seconds: float
    exceptions: list[str]
    bad_errors: list[str]
    timed_out: bool
    refused: bool

    @property
    def ok(self) -> bool:
        return not self.exceptions and not self.bad_errors and not self.timed_out


def stratified(inputs: list) -> list:
    """One input per generator category (``STRATA``; the first of a category not listed there)."""
    by_name = {i.name: i for i in inputs}
    chosen: dict[str, object] = {}
    for item in inputs:
        cat = category(item.name)
        if cat not in chosen:
            chosen[cat] = by_name.get(STRATA.get(cat, ""), item)
    return list(chosen.values())


def _middle_call(path: Path) -> int:
    """The index of the trace's middle call (0 when it does not load)."""
    from agent_core.core.limits import read_input
    from agent_core.ingest.detect import parse_any
    try:
        return len(parse_any(read_input(path), str(path)).calls) // 2
    except Exception:  # noqa: BLE001 -- a refused input: the pages show the refusal, call 0 is enough
        return 0


def _where(exc) -> str:
    """An uncaught exception as one line: its last frame (``file.py:line in function``) and its text."""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)', "\n".join(exc.stack_trace or []))
    where = f"{Path(frames[-1][0]).name}:{frames[-1][1]} in {frames[-1][2]}" if frames else "?"
    return f"{where}: {exc.message}"[:300]


def _run(at, name: str, page: str, timeout: float, refused: bool) -> PageRun:
    from streamlit import config
    config.set_option("client.showErrorDetails", "full")    # (after .streamlit/config.toml's "none" is read)
    start = time.perf_counter()
    timed_out = False
    try:
        if page != "app":       # the first run: the router's default page
            at.switch_page("screens/timeline.py" if page == MIDDLE else page)
        at.run(timeout=timeout)
    except RuntimeError as err:     # AppTest: "script run timed out"
        if "timed out" not in str(err):
            raise
        timed_out = True
    seconds = time.perf_counter() - start
    exceptions = [_where(e) for e in at.exception]
    bad = [e.value[:300] for e in at.error if "\n" in e.value or "Traceback" in e.value]
    return PageRun(name, page, round(seconds, 3), exceptions, bad, timed_out, refused)


def run_input(item, directory: Path, timeout: float) -> list[PageRun]:
    """Open the studio on one hostile input and run every page in that session."""
    from streamlit.testing.v1 import AppTest

    path = hostile_inputs.materialise(item, directory)
    os.environ[OPEN_ENV] = str(path)
    middle = _middle_call(path) if item.special is None else 0
    at = AppTest.from_file(str(APP), default_timeout=timeout)
    runs = [_run(at, item.name, "app", timeout, False)]
    refused = bool(at.error) and not at.exception
    runs[0].refused = refused
    for page in PAGES:
        runs.append(_run(at, item.name, page, timeout, refused))
        if page == "screens/timeline.py" and middle:
            at.session_state[CALL_KEY] = middle
            runs.append(_run(at, item.name, MIDDLE, timeout, refused))
            at.session_state[CALL_KEY] = 0
    if item.family == "huge" and path.is_file():
        path.unlink()
    return runs


def summarise(runs: list[PageRun], inputs: int, wall: float) -> dict:
    slowest = max(runs, key=lambda r: r.seconds) if runs else None
    return {
        "inputs": inputs, "page_runs": len(runs),
        "runs_with_uncaught_exceptions": sum(bool(r.exceptions) for r in runs),
        "runs_with_multiline_or_traceback_errors": sum(bool(r.bad_errors) for r in runs),
        "timeouts": sum(r.timed_out for r in runs),
        "inputs_refused": len({r.input for r in runs if r.refused}),
        "failed_runs": sum(not r.ok for r in runs),
        "inputs_with_a_failure": len({r.input for r in runs if not r.ok}),
        "slowest_run": f"{slowest.seconds:.2f} s ({slowest.input} {slowest.page})" if slowest else "",
        "median_run_seconds": round(sorted(r.seconds for r in runs)[len(runs) // 2], 3) if runs else 0,
        "wall_seconds": round(wall, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--only", default="", help="inputs whose name starts with one of these (comma-separated)")
    parser.add_argument("--stratified", action="store_true", help="one input per generator category")
    parser.add_argument("--skip", default="", help="inputs whose name starts with one of these are left out")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per page run")
    parser.add_argument("--json", action="store_true", help="one JSON object on stdout")
    parser.add_argument("--log", default=None, help="append one JSON line per page run to this file")
    parser.add_argument("--failures", type=int, default=40, help="how many failing runs to list")
    args = parser.parse_args(argv)
    inputs = [i for i in hostile_inputs.generate() if i.name.startswith(tuple(args.only.split(",")))]
    if args.skip:
        inputs = [i for i in inputs if not i.name.startswith(tuple(args.skip.split(",")))]
    if args.stratified:
        inputs = stratified(inputs)
    runs: list[PageRun] = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="hostile-pages-") as tmp:
        for n, item in enumerate(inputs):
            done = run_input(item, Path(tmp), args.timeout)
            runs.extend(done)
            if args.log:
                with open(args.log, "a", encoding="utf-8") as log:
                    log.writelines(json.dumps(asdict(r)) + "\n" for r in done)
            if not args.json and (n + 1) % 25 == 0:
                print(f"  {n + 1}/{len(inputs)} inputs, {len(runs)} page runs, "
                      f"{sum(not r.ok for r in runs)} failed, {time.perf_counter() - started:.0f} s", file=sys.stderr)
    report = summarise(runs, len(inputs), time.perf_counter() - started)
    failed = [r for r in runs if not r.ok]
    if args.json:
        print(json.dumps({**report, "failed": [asdict(r) for r in failed]}, indent=1))
    else:
        width = max(len(k) for k in report)
        for key, value in report.items():
            print(f"  {key:<{width}}  {value}")
        if failed:
            print(f"\nfailing page runs (first {args.failures}):")
            for r in failed[:args.failures]:
                what = (r.exceptions or r.bad_errors or ["timed out"])[0].replace("\n", " | ")
                print(f"  {r.input} {r.page}: {what[:200]}")
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
