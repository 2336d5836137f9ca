"""Token-budget replay vs langchain_core ``trim_messages`` over long histories.

    pip install -e ".[bench]"      # langchain-core is a benchmark-only dependency
    python benchmarks/replay_vs_langchain.py [--calls 100 300 1000] [--max-tokens 4000]

For each synthetic full-history trace (``agent_core.trace.synthetic``), both sides
produce the payload of every call under the same token budget with the same
tiktoken counter (cookbook formula, o200k_base, per-message cache):

- Chain Studio: ``replay(trace, TokenBudget(max_tokens, 0), lint_calls=False)``:
  the policy runs after every add on the trimmed memory, counting the
  candidate incrementally; it also builds every call's payload list, token
  count, recorded-payload count and drop log (what a user of replay gets).
- LangChain: before each call, ``trim_messages(history, strategy="last",
  max_tokens=..., token_counter=...)`` on the whole history so far (how an app
  trims before calling), which binary-searches prefixes and re-counts them.

Both start from the same warm state: each message's OpenAI dict built once
(``openai_dict``, the very dict replay uses and keeps on the message; the
langchain counter looks the same dicts up by id), the langchain messages
converted, and the counter's cache filled with those dicts. ``cold`` is our
replay of a fresh copy of the trace, with no dict built and no message
counted by identity yet (conversion inside the timing).

Prints the times, the ratio (warm vs warm), and how many payloads each
produced that break tool-call pairing (langchain has no group handling).
Timings are wall-clock on this machine; nothing is asserted.
"""
from __future__ import annotations

import argparse
import gc
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_core.core.msg import openai_dict  # noqa: E402
from agent_core.replay.engine import replay  # noqa: E402
from agent_core.trace.synthetic import synthetic_trace  # noqa: E402
from agent_core.trace.tokens import REPLY_PRIMING, counter_for  # noqa: E402
from agent_core.trim.budget import TokenBudget  # noqa: E402


def _pairing_broken(messages: list[dict]) -> bool:
    open_ids: set[str] = set()
    prev_call = False
    for m in messages:
        if m.get("role") == "tool":
            if not prev_call or m.get("tool_call_id") not in open_ids:
                return True
            open_ids.discard(m.get("tool_call_id"))
            continue
        if open_ids:
            return True
        prev_call = bool(m.get("role") == "assistant" and m.get("tool_calls"))
        open_ids = {c["id"] for c in m.get("tool_calls") or []}
    return bool(open_ids)


def bench(calls: int, max_tokens: int) -> dict:
    from langchain_core.messages import convert_to_messages, trim_messages

    trace = synthetic_trace(calls, model="gpt-4o")
    counter = counter_for("gpt-4o")
    dicts = {m.id: openai_dict(m) for m in trace.stream}
    lc_stream = convert_to_messages([{**dicts[m.id], "id": m.id} for m in trace.stream])

    def lc_counter(msgs) -> int:   # the same counter: cookbook count of the list, cached per message
        return sum(counter.count_message(dicts[m.id]) for m in msgs) + REPLY_PRIMING

    for m in trace.stream:          # warm both caches equally
        counter.count_message(dicts[m.id])

    # Collect before each timing: a full collection of the objects the setup just made would
    # otherwise fall into whichever side runs first (timeit avoids it by disabling gc altogether).
    gc.collect()
    t0 = time.perf_counter()
    ours = replay(trace, TokenBudget(max_tokens, 0, model="gpt-4o"), lint_calls=False)
    t_ours = time.perf_counter() - t0

    fresh = synthetic_trace(calls, model="gpt-4o")    # the same trace, nothing converted or cached
    gc.collect()
    t0 = time.perf_counter()
    replay(fresh, TokenBudget(max_tokens, 0, model="gpt-4o"), lint_calls=False)
    t_cold = time.perf_counter() - t0

    del fresh
    gc.collect()
    t0 = time.perf_counter()
    lc_payloads = [trim_messages(lc_stream[:c.stream_index], max_tokens=max_tokens, token_counter=lc_counter,
                                 strategy="last") for c in trace.calls]
    t_lc = time.perf_counter() - t0

    lc_dicts = [[dicts[m.id] for m in p] for p in lc_payloads]
    return {
        "calls": calls, "messages": len(trace.stream), "ours_s": t_ours, "ours_cold_s": t_cold, "langchain_s": t_lc,
        "ratio": t_lc / t_ours if t_ours else float("inf"),
        "ours_broken": sum(_pairing_broken(c.messages) for c in ours.calls),
        "langchain_broken": sum(_pairing_broken(p) for p in lc_dicts),
        "ours_max": max(c.tokens - counter.count_tools(c.tools) for c in ours.calls),
        "langchain_max": max(counter.count_payload(p) for p in lc_dicts),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--max-tokens", type=int, default=4000)
    args = parser.parse_args(argv)
    try:
        import langchain_core
    except ImportError:
        print("langchain-core is not installed: pip install -e '.[bench]'", file=sys.stderr)
        return 2
    print(f"token budget {args.max_tokens} (messages + priming), tiktoken o200k_base, langchain-core "
          f"{langchain_core.__version__}")
    print(f"{'calls':>6} {'msgs':>6} {'chain-studio':>13} {'(cold)':>8} {'langchain':>11} {'ratio':>8}  "
          f"{'broken pairs (ours/lc)':>22}  {'max tokens (ours/lc)':>20}")
    bench(20, args.max_tokens)   # warm-up: imports, pydantic models, tiktoken
    for n in args.calls:
        r = bench(n, args.max_tokens)
        print(f"{r['calls']:>6} {r['messages']:>6} {r['ours_s']:>12.3f}s {r['ours_cold_s']:>7.3f}s "
              f"{r['langchain_s']:>10.3f}s "
              f"{r['ratio']:>7.1f}x  {r['ours_broken']:>10}/{r['langchain_broken']:<11}  "
              f"{r['ours_max']:>9}/{r['langchain_max']:<10}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
