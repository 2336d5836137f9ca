"""Chain Studio benchmark: long traces against the floor of the tokenizer.

    python benchmarks/bench.py [--json] [--sizes 100 1000 5000]

For each N it generates a deterministic synthetic trace (benchmarks/synthetic.py:
one full-history conversation of N calls with tool rounds, Chinese and English
content, a few 50 KB tool results) and measures, in a fresh subprocess so peak
memory is its own:

- file_bytes, distinct_bytes (every distinct message once, sent in a payload or
  received as a reply), distinct_sent_bytes (payload messages only) and
  naive_bytes (a log holding every payload whole);
- floor_s: json-parsing the file plus tiktoken-encoding each distinct message once;
- load_s, lint_s, count_s (prompt tokens of every call, by role, from an empty cache);
  these four are the best of 3 runs;
- replay_s per policy;
- page_s: script time of the Timeline, Tokens and Replay pages in AppTest, first visit;
- peak_mb: peak resident memory of the subprocess.

It also runs the token-budget replay against langchain_core.trim_messages with the
same tiktoken counter (benchmarks/replay_vs_langchain.py). A benchmark prints figures;
it asserts nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

POLICY_PARAMS = {
    "keep-all": {}, "max-messages": {"max_messages": 40}, "naive-drop-oldest": {"max_messages": 40},
    "sliding-window": {"turns": 10}, "token-budget": {"max_tokens": 16000},
    "summary-window": {"keep_turns": 5}, "langchain-trim-last": {"max_tokens": 16000},
}
PAGES = {"Timeline": "screens/timeline.py", "Tokens": "screens/tokens.py", "Replay": "screens/replay.py"}


def _timed(fn):
    t0 = time.perf_counter()
    value = fn()
    return time.perf_counter() - t0, value


def _best(fn, repeat: int = 3):
    """The fastest of ``repeat`` runs (as timeit does: slower runs measure the machine's other load)."""
    runs = [_timed(fn) for _ in range(repeat)]
    return min(t for t, _ in runs), runs[-1][1]


def _field_strings(message: dict):
    from agent_core.trace.tokens import _field_values
    return _field_values(message)


def measure(n: int, workdir: Path) -> dict:
    """All figures for one size (runs inside its own subprocess)."""
    import tiktoken

    from agent_core.core.msg import message_key
    from agent_core.lint.scan import lint_trace
    from agent_core.replay.engine import replay
    from agent_core.trace.reader import read_trace
    from agent_core.trace.tokens import TokenCounter, get_encoding
    from agent_core.trim.registry import make_policy
    from benchmarks.synthetic import MODEL, generate

    path = generate(workdir / f"synthetic-{n}.jsonl", n)
    get_encoding("o200k_base")   # vocabulary loading is start-up, not per-trace work

    # the floor: parse every line, encode every distinct message once, with a fresh encoder
    def floor():
        enc = tiktoken.get_encoding("o200k_base")
        bodies = []
        with open(path, encoding="utf-8") as f:
            for line in f:
                event = json.loads(line)
                if "value" in event:        # body and add events define each distinct body once
                    bodies.append(event["value"])
        return sum(len(enc.encode(s, disallowed_special=())) for b in bodies if isinstance(b, dict)
                   for s in _field_strings(b))

    floor_s, _ = _best(floor)
    load_s, trace = _best(lambda: read_trace(path))
    lint_s, _ = _best(lambda: lint_trace(trace))
    count_s, series = _best(lambda: TokenCounter(MODEL).count_calls_by_role(trace.calls))   # a fresh, empty cache

    distinct: dict[int, dict] = {}       # every distinct message, sent or received (the reader interns them)
    for call in trace.calls:
        for m in call.messages:
            distinct.setdefault(id(m), m)
    sizes = {k: len(message_key(m).encode()) for k, m in distinct.items()}
    sent_bytes = sum(sizes.values())
    for call in trace.calls:
        for choice in (call.response or {}).get("choices") or []:
            if isinstance(choice.get("message"), dict):
                distinct.setdefault(id(choice["message"]), choice["message"])
    distinct_bytes = sum(len(message_key(m).encode()) for m in distinct.values())
    naive_bytes = 0
    for call in trace.calls:
        skeleton = {k: v for k, v in call.request.items() if k != "messages"}
        naive_bytes += len(json.dumps(skeleton, ensure_ascii=False, separators=(",", ":")).encode()) + 14
        naive_bytes += sum(sizes[id(m)] for m in call.messages) + max(len(call.messages) - 1, 0)

    replay_s = {}
    for name, params in POLICY_PARAMS.items():
        policy = make_policy(name, **params)
        replay_s[name], _ = _timed(lambda: replay(trace, policy))

    page_s = _page_times(path)
    return {"n": n, "calls": len(trace.calls), "messages": len(trace.stream),
            "file_bytes": path.stat().st_size, "distinct_bytes": distinct_bytes, "distinct_sent_bytes": sent_bytes,
            "naive_bytes": naive_bytes,
            "floor_s": floor_s, "load_s": load_s, "lint_s": lint_s, "count_s": count_s,
            "replay_s": replay_s, "page_s": page_s,
            "last_prompt_tokens": sum(series[-1].values()) if series else 0,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def _page_times(path: Path) -> dict:
    from streamlit.testing.v1 import AppTest

    os.environ["CHAIN_STUDIO_OPEN"] = str(path)
    at = AppTest.from_file(str(ROOT / "studio" / "app.py"), default_timeout=600)
    at.run()                      # home page: the trace is loaded and summarised here
    times = {}
    for name, page in PAGES.items():
        if not (ROOT / "studio" / page).exists():
            continue
        t0 = time.perf_counter()
        at.switch_page(page).run()
        times[name] = time.perf_counter() - t0
        if at.exception:
            times[name + " (exception)"] = at.exception[0].message[:200]
    return times


def _langchain() -> dict:
    try:
        from benchmarks.replay_vs_langchain import bench
    except ImportError as err:
        return {"skipped": f"langchain-core not installed ({err}); pip install -e '.[bench]'"}
    bench(20, 4000)
    r = bench(1000, 4000)
    return {"calls": r["calls"], "ours_s": r["ours_s"], "langchain_s": r["langchain_s"], "ratio": r["ratio"]}


def _print_text(result: dict) -> None:
    for r in result["runs"]:
        f = r["floor_s"]
        core = r["load_s"] + r["lint_s"] + r["count_s"]
        print(f"\nN = {r['n']} calls ({r['messages']} messages, last prompt {r['last_prompt_tokens']} tokens)")
        print(f"  file {r['file_bytes'] / 1e6:8.2f} MB   distinct {r['distinct_bytes'] / 1e6:8.2f} MB   "
              f"naive {r['naive_bytes'] / 1e6:10.2f} MB   file/distinct {r['file_bytes'] / r['distinct_bytes']:.2f}x "
              f"(/payload messages only {r['file_bytes'] / r['distinct_sent_bytes']:.2f}x)")
        print(f"  floor {f:7.3f} s")
        for key in ("load_s", "lint_s", "count_s"):
            print(f"  {key[:-2]:<6}{r[key]:7.3f} s  ({r[key] / f:5.2f}x floor)")
        print(f"  load+lint+count {core:7.3f} s  ({core / f:5.2f}x floor)")
        for name, s in r["replay_s"].items():
            print(f"  replay {name:<22}{s:7.3f} s")
        for name, s in r["page_s"].items():
            print(f"  page   {name:<22}{s:7.3f} s" if isinstance(s, float) else f"  page   {name}: {s}")
        print(f"  peak memory {r['peak_mb']:8.1f} MB")
    lc = result["langchain"]
    if "skipped" in lc:
        print(f"\nlangchain comparison skipped: {lc['skipped']}")
    else:
        print(f"\ntoken-budget replay of {lc['calls']} calls: chain-studio {lc['ours_s']:.3f} s, "
              f"langchain trim_messages {lc['langchain_s']:.3f} s, {lc['ratio']:.1f}x faster")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)   # internal: measure one size, print JSON
    args = parser.parse_args(argv)
    if args.one:
        with tempfile.TemporaryDirectory() as tmp:
            print(json.dumps(measure(args.one, Path(tmp))))
        return 0
    runs = []
    for n in args.sizes:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, cwd=ROOT)
        if out.returncode != 0:
            print(out.stderr, file=sys.stderr)
            return 1
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
        if not args.json:
            print(f"measured N={n}", file=sys.stderr, flush=True)
    result = {"runs": runs, "langchain": _langchain()}
    if args.json:
        print(json.dumps(result))
    else:
        _print_text(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
