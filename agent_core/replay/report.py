"""``chain-studio replay``: load a trace, replay it under a policy, diagnose the probes, report.

The CLI only parses arguments and prints; everything it prints is built here
(the studio's Replay page uses the same pieces).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from agent_core.core.errors import ChainStudioError
from agent_core.core.heap import keep, long_lived
from agent_core.core.models import Pricing, price_as
from agent_core.ingest.detect import load_any
from agent_core.lint.native import trace_profile
from agent_core.trace.model import Trace
from agent_core.trace.tokens import sampled_note, trace_sampled_texts
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.registry import parse_params

from . import report_writer
from .bullets import BulletFeed
from .calls import trace_model
from .counting import Counted, count_in_two, lend, watch_idle
from .engine import lint_replayed, policy_for_trace, replay
from .json_out import write_json
from .probes import (
    Probe,
    RetentionMatrix,
    probe_from_text,
    propose_probes,
    recorded_retention,
    replay_retention,
)
from .references import PayloadRuns, referenced_json
from .report_writer import HeadWriter, forkable
from .responses import is_responses_trace, responses_report
from .result import ReplayResult, is_error
from .stored import TraceFacts, retention_entry
from .warmer import Warmer


def _wants_llm(params: dict[str, Any]) -> bool:
    return any("summarizer" in str(k) and str(v) == "llm" or "summarizer=llm" in str(v) for k, v in params.items())


class SummaryClient:
    """An LLMClient for the llm summarizer: the configured endpoint, else the demo model started here."""

    def __init__(self) -> None:
        from agent_core.chat.client import LLMClient
        from agent_core.chat.connection import connect
        from agent_core.trace.recorder import MemoryRecorder

        self.connection = connect()
        self.recorder = MemoryRecorder()
        self.client = LLMClient(self.connection.endpoint, recorder=self.recorder, max_retries=0)

    def close(self) -> None:
        self.client.close()
        self.connection.close()


def parse_probes(texts: Sequence[str]) -> list[Probe]:
    try:
        return [probe_from_text(t) for t in texts]
    except Exception as err:  # re.error: one sentence, not a traceback
        raise ChainStudioError(f"a probe's regex does not compile: {err}") from None


def run_replay(trace: Trace, policy: str, params: dict[str, Any] | None = None,
               probes: Sequence[Probe] | None = None, pricing: Pricing | None = None,
               profile: str | None = None, facts: TraceFacts | None = None,
               walked: Callable[[ReplayResult, list[Probe]], Callable[[], RetentionMatrix | None]] | None = None,
               warmer: Warmer | None = None) -> tuple[ReplayResult, RetentionMatrix, RetentionMatrix]:
    """Replay plus the retention matrices (recorded, replayed) for ``probes`` (proposed when None);
    costs priced as ``pricing`` (default: each call's own model, unpriced ones listed); rejections judged by
    ``profile`` (default: the trace's own provider's, ``lint/native.py : trace_profile``). ``facts``: what an
    earlier replay of the same file stored (``stored.py``: the stream's token counts, the recorded matrix),
    used and completed here (the caller saves it). ``walked``: called with the result and the probes before its
    payloads are linted (``report_writer.py`` starts writing the report's messages then, and builds the replayed
    retention matrix beside the linter); it returns a function giving that matrix (None: it is computed here),
    called once the payloads are linted.
    ``warmer``: the child counting the file's texts into the token store since before the parse (``warmer.py``),
    stopped here before counting."""
    params = dict(params or {})
    probes = list(probes) if probes is not None else propose_probes(trace)
    helper = SummaryClient() if _wants_llm(params) else None
    mt = MessageTokens(trace_model(trace))
    known = facts.seed_counts(trace, mt) if facts is not None else None
    if warmer is not None:
        if known is None:
            warmer.share(trace.stream, mt)
        lend(warmer.stop())
    counted, feed = Counted(), None
    try:
        pol = policy_for_trace(policy, params, trace, client=helper.client if helper else None)
        # A big stream's first replay: what the warmer did not count, half on the other core, whose process then
        # builds the recorded retention matrix while this one walks (it depends on neither the policy nor the
        # counts), after counting summary-window's bullet lines ahead of the walk (``bullets.py``).
        then = partial(retention_entry, trace, probes) if facts is not None else None
        if then is not None and known is None and (feed := BulletFeed.for_policy(pol, trace.stream, mt)):
            then = feed.before(then)
        counted = count_in_two(trace.stream, mt, then) if known is None else Counted()
        profile = profile or trace_profile(trace)
        ahead = feed.pull if feed is not None and counted.child else None
        result = replay(trace, pol, pricing=pricing, profile=profile, known_tokens=known, lint_calls=walked is None,
                        ahead=ahead)
        computed = counted.after()
    finally:
        if feed is not None:
            feed.close()
        counted.close()
        if helper is not None:
            helper.close()
    if facts is None:
        recorded = recorded_retention(trace, probes)
    else:
        facts.keep_counts(trace, mt)
        recorded = facts.recorded_retention(trace, probes, computed)     # and the stream bodies' masks, which
        # the replayed matrix reads (in the writer's child too: it is forked after this)
    replayed = None
    if walked is not None:
        later = walked(result, probes)
        lint_replayed(result.calls, trace, profile)
        replayed = later()
    return result, recorded, replayed or replay_retention(result, probes)


def _not_replayed(result: ReplayResult, trace: Trace | None) -> list[str]:
    """The purposes of the trace's calls a replay does not rebuild (summaries, the proxy's other exchanges):
    the totals count every call of the trace, as lint, export and the studio do, and name these."""
    if trace is None or len(trace.calls) == len(result.calls):
        return []
    return sorted({str(c.purpose) for c in trace.calls if c.purpose != "chat"}) or ["unplaced"]


def report_json(result: ReplayResult, recorded: RetentionMatrix, replayed: RetentionMatrix,
                trace: Trace | None = None, full: bool = False, runs: PayloadRuns | None = None,
                built: dict | None = None) -> dict:
    """The JSON document, linear in the trace: {"format", "policy", "params", "messages" (each once), "drops"
    (each once), "calls" (payloads as runs over ``messages``), "probes", "totals"} (``references.py``); with
    ``full``, every call's whole payload: {"policy", "params", "calls", "probes", "totals"}. With ``trace``,
    ``totals.calls`` counts all its calls (plus ``replayed_calls`` when some were not replayed). ``built``:
    ``referenced_json(result, None, runs)``, made before (its probes are set here)."""
    probes = replayed.export()
    for label, row in recorded.export().items():
        probes[label]["recorded"] = {"first_gone": row["first_gone"], "why": row["why"]}
    if full:
        doc = result.to_json(probes)
    elif built is not None:
        doc = built
        doc["probes"] = probes
    else:
        doc = referenced_json(result, probes, runs)
    if trace is not None and _not_replayed(result, trace):
        doc["totals"] = {**doc["totals"], "calls": len(trace.calls), "replayed_calls": len(result.calls)}
    return doc


def report_text(result: ReplayResult, recorded: RetentionMatrix, replayed: RetentionMatrix,
                trace: Trace | None = None) -> str:
    lines = [f"replay under {result.label}"]
    for c in result.calls:
        rec = "same as recorded" if c.same else f"recorded {c.recorded_tokens}"
        line = f"  call {c.call}: {len(c.payload)} messages, {c.tokens} tokens ({rec})"
        if c.dropped:
            line += f"; dropped {len(c.dropped)} ({c.dropped[-1].policy})"
        errors = [f for f in c.findings if is_error(f)]
        if errors:
            line += "; REJECTED: " + ", ".join(f"{f.rule} at message {f.index}" for f in errors)
        lines.append(line)
    t = result.totals
    skipped = _not_replayed(result, trace)
    calls = (f"{len(trace.calls)} calls, {t['calls']} replayed (not replayed: {', '.join(skipped)} calls)"
             if trace is not None and skipped else f"{t['calls']} calls")
    lines.append(f"totals: {calls}, {t['tokens']} tokens (recorded {t['recorded_tokens']}), "
                 f"${t['cost_usd']:.4f} (recorded ${t['recorded_cost_usd']:.4f}"
                 + (f", {result.pricing.label}" if result.pricing is not None else "") + f"), {t['rejected']} rejected"
                 + (f" (calls {', '.join(map(str, t['rejected_calls']))})" if t['rejected'] else "")
                 + (f"; no price for {', '.join(t['unpriced_models'])}" if t["unpriced_models"] else ""))
    if trace is not None and (note := sampled_note(trace_sampled_texts(trace))):
        lines.append(f"note: {note}")
    if replayed.rows:
        lines.append("why did it forget?")
        for rec_row, row in zip(recorded.rows, replayed.rows):
            lines.append(f"  {row.probe.label}:")
            lines.append(f"    replayed: {row.why}")
            lines.append(f"    recorded: {rec_row.why}")
    return "\n".join(lines)


def replay_file(path: str, policy: str, param_items: Sequence[str] = (), probe_texts: Sequence[str] = (),
                fmt: str = "json", price_as_model: str | None = None, full: bool = False, out: Any = None,
                profile: str | None = None) -> str:
    """What ``chain-studio replay`` prints; costs priced as ``price_as_model``, else as the trace's own
    priced model, else as ``core.models.DEFAULT_PRICE_AS`` (named in the report: never a silent $0).

    With ``out`` (a text stream) the JSON report is written to it piece by piece and "" is returned: a trace
    whose payloads repeat a 30 MB message makes a report of several times that, never held as one string.

    The cyclic collector is paused meanwhile (``core/heap.py : long_lived``): a replay and its report are
    millions of acyclic objects (tests/agent_core/test_replay_heap.py), and re-walking them cost a third of a
    25,000-call replay's time."""
    with long_lived():
        return _replay_file(path, policy, param_items, probe_texts, fmt, price_as_model, full, out, profile)


def _replay_file(path: str, policy: str, param_items: Sequence[str], probe_texts: Sequence[str], fmt: str,
                 price_as_model: str | None, full: bool, out: Any, profile: str | None) -> str:
    params = parse_params(param_items)
    watch_idle()        # whether a core stays free while the file is parsed: counting.py may use it then
    warmer = Warmer.start(path)         # counts the file's texts meanwhile, on that core
    try:
        return _replay_trace(load_any(path), path, policy, params, probe_texts, fmt, price_as_model, full, out,
                             profile, warmer)
    finally:
        if warmer is not None:
            warmer.stop()       # run_replay did, unless something failed before


def _replay_trace(trace: Trace, path: str, policy: str, params: dict[str, Any], probe_texts: Sequence[str],
                  fmt: str, price_as_model: str | None, full: bool, out: Any, profile: str | None,
                  warmer: Warmer | None) -> str:
    import json

    if is_responses_trace(trace):       # no message stream: each call's effective input, by item groups
        return responses_report(trace, policy_for_trace(policy, params, trace), fmt)
    probes = parse_probes(probe_texts) if probe_texts else None
    pricing = price_as(trace.models, price_as_model)
    profile = profile or trace_profile(trace)
    facts = TraceFacts.open(path, trace)
    writer: list[HeadWriter] = []
    built: list[dict] = []
    parallel = fmt == "json" and not full and out is not None and forkable(out) and \
        len(trace.calls) >= report_writer.MIN_CALLS

    def walked(result: ReplayResult, probes: list[Probe]) -> Callable[[], RetentionMatrix | None]:
        head = HeadWriter(result, out, partial(replay_retention, result, probes))
        writer.append(head)

        def later() -> RetentionMatrix | None:
            # called once the payloads are linted: the calls and the drops are made while the child ends
            built.append(referenced_json(result, None, head.runs))
            return head.later()
        return later
    result, recorded, replayed = run_replay(trace, policy, params, probes, pricing, profile, facts,
                                            walked if parallel else None, warmer)
    facts.save()
    keep(trace, result, recorded, replayed)     # freed by the exit, when the command is the process's last work
    if fmt == "text":
        head, _, rest = report_text(result, recorded, replayed, trace).partition("\n")
        return f"{head}\n  rejections judged by the {profile} profile\n{rest}"
    if writer:
        writer[0].finish(report_json(result, recorded, replayed, trace, runs=writer[0].runs,
                                     built=built[0] if built else None))
        out.write("\n")
        return ""
    report = report_json(result, recorded, replayed, trace, full=full)      # each finding names its profile
    layout = {"indent": 1} if full else {"separators": (",", ":")}
    if out is not None:
        if full:
            json.dump(report, out, ensure_ascii=False, **layout)
        else:
            write_json(report, out)     # the same bytes as json.dump, with the C encoder
        out.write("\n")
        return ""
    return json.dumps(report, ensure_ascii=False, **layout)
