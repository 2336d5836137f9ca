"""The Replay page's door into agent_core (the replay part of ``studio/services.py``).

Kept in its own module so the page's wrappers don't collide with edits to
services.py; same rules: pages call these, results are cached by the trace's
digest plus the parameters, and nothing here renders.
"""
from __future__ import annotations

import functools
import json
import threading
import weakref
from collections.abc import Callable
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any, Protocol

from agent_core.core import models as _models
from agent_core.core.errors import ChainStudioError
from agent_core.core.heap import long_lived
from agent_core.replay import counterfactual as _counterfactual
from agent_core.replay import engine as _replay
from agent_core.replay import findings as _findings
from agent_core.replay import probes as _probes
from agent_core.replay import result as _result
from agent_core.trace.model import Trace
from agent_core.trim import config as _config
from agent_core.trim import registry as _policies
from studio import residency as _residency
from studio import token_worker as _token_worker
from studio import view_store as _view_store
from studio.components.safe import function_of, tool_calls_of
from studio.replay_cache import ReplayCache
from studio.viewmodels import forgetting as _forgetting
from studio.viewmodels import replay_first as _replay_first


class Loaded(Protocol):
    """What this module reads of a ``services.Loaded`` (not imported: ``services`` imports the forked children
    of ``studio/count_child.py``, one of which runs this module's replays)."""

    digest: str
    trace: Trace


def _st_cached(kind: str, **options: Any) -> Callable[[Callable], Callable]:
    """``st.cache_data`` / ``st.cache_resource`` (``kind``) with ``options``, made at the first call: the replay
    worker (``studio/replay_worker.py``) imports this module without importing Streamlit (0.45 s of its CPU)."""
    def decorate(fn: Callable) -> Callable:
        made: list[Callable] = []
        lock = threading.Lock()

        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            if not made:
                with lock:
                    if not made:
                        import streamlit as st

                        made.append(getattr(st, kind)(**options)(fn))
            return made[0](*args, **kwargs)
        return call
    return decorate


POLICY_NAMES = list(_policies.POLICIES)
DEFAULT_POLICIES = ("max-messages", "token-budget", "summary-window", "naive-drop-oldest")
"""The policy each column of the page starts with (the first two are shown side by side)."""
DEFAULT_COLUMNS = 2
"""How many policies the page compares until the user picks another number."""


@_st_cached("cache_data", max_entries=32, show_spinner=False)
def _responses_rows(digest: str, _trace: Trace, context_window: int) -> list[dict]:
    from studio.viewmodels import responses as _responses

    return _responses.replay_rows(_trace, context_window)


def responses_replay(loaded: Loaded, context_window: int) -> list[dict] | None:
    """For a trace of Responses API calls: keep-all and openai-truncation-auto per call; None for other traces."""
    from studio.viewmodels import responses as _responses

    if not _responses.is_responses_trace(loaded.trace):
        return None
    return _responses_rows(loaded.digest, loaded.trace, context_window)


def responses_costs(rows: list[dict], price: _models.Pricing) -> dict[str, float]:
    """Each policy's estimated input cost over a Responses trace's replay rows (its effective-input tokens)."""
    totals: dict[str, int] = {}
    for r in rows:
        totals[r["policy"]] = totals.get(r["policy"], 0) + int(r["tokens"] or 0)
    return {policy: price.facts.cost(tokens) for policy, tokens in totals.items()}


def policy_form(name: str) -> tuple[_config.Param, ...]:
    """The fields the page asks for, per policy: its config's, minus those filled in from the trace."""
    return tuple(p for p in _policies.policy_params(name) if not p.from_trace)


@dataclass(frozen=True)
class PolicySpec:
    """One column of the page: a registry name and its parameters, hashable for the cache."""

    name: str
    """The registry name."""
    params: tuple[tuple[str, object], ...] = ()
    """Sorted (key, value) pairs; empty values mean the default."""

    @property
    def as_dict(self) -> dict:
        return dict(self.params)


def spec(name: str, params: dict) -> PolicySpec:
    return PolicySpec(name, tuple(sorted((k, v) for k, v in params.items() if v is not None and v != "")))


def form_default(p: _config.Param) -> object:
    """What the page's widget for ``p`` holds before anyone edits it (the config's default, as the widget
    returns it: a checkbox gives False for None, a text box "" for None)."""
    if p.choices is None and p.kind is bool:
        return bool(p.default)
    if p.choices is None and p.kind is not int:
        return p.default or ""
    return p.default


def default_spec(name: str) -> PolicySpec:
    """The spec a column of the page shows for policy ``name`` before any of its fields is edited."""
    return spec(name, {p.name: form_default(p) for p in policy_form(name)})


def default_specs() -> list[PolicySpec]:
    """The policies the page compares on its first visit."""
    return [default_spec(name) for name in DEFAULT_POLICIES[:DEFAULT_COLUMNS]]


class ReplayError(Exception):
    """One sentence for the page (a parameter that does not parse, an endpoint that failed)."""


RECORDED_FINDINGS = "recorded-findings"
"""The view store's kind for the recorded payloads' findings a replay compares with, stored by a big trace's
linting child (``studio/count_child.py : _replay``)."""


RECORDED_RETENTION = "recorded-retention"
"""The view store's kind for the recorded retention matrix of the proposed probes and the stream's probe masks
(``agent_core/replay/stored.py : retention_entry``), stored by the same child."""


def keep_recorded(loaded: Loaded, profile: str) -> None:
    """In a big trace's linting child (``studio/count_child.py : _replay``): what this server's first replay and first
    view read of the recorded payloads (their findings; the retention matrix of the proposed probes, with the
    stream's probe masks), stored for the server."""
    from agent_core.replay import stored

    _view_store.save(RECORDED_FINDINGS, loaded.digest, profile, _findings.recorded_findings_json(loaded.trace, profile))
    probes = page_probes(loaded)
    entry = stored.retention_entry(loaded.trace, probes, recorded_retention(loaded, probes))
    _view_store.save(RECORDED_RETENTION, loaded.digest, _probes_slot(probes), json.loads(entry))


def _probes_slot(probes: list[_probes.Probe]) -> str:
    """The view store's third key for a retention entry: its probes (``stored.probes_key``), hashed."""
    import hashlib

    from agent_core.replay import stored

    return hashlib.sha256(stored.probes_key(probes).encode()).hexdigest()


def take_recorded_findings(loaded: Loaded, profile: str) -> None:
    """Before this server's first replay of a big trace: the recorded payloads' findings its linting child stored,
    instead of linting 25,000 recorded payloads again (0.4-0.8 s of the first policy picked on the Replay page)."""
    if len(loaded.trace.calls) < PROGRESS_CALLS or _findings.has_recorded_findings(loaded.trace, profile):
        return
    doc = _view_store.load(RECORDED_FINDINGS, loaded.digest, profile)
    if doc is not None:
        _findings.take_recorded_findings(loaded.trace, profile, doc)


def _run(trace: Trace, s: PolicySpec, pricing: _models.Pricing, profile: str) -> _result.ReplayResult:
    params = s.as_dict
    helper = None
    try:
        if any(str(v) == "llm" or "summarizer=llm" in str(v) for v in params.values()):
            from agent_core.replay.report import SummaryClient

            helper = SummaryClient()
        policy = _replay.policy_for_trace(s.name, params, trace, client=helper.client if helper else None)
        result = _replay.replay(trace, policy, pricing=pricing, profile=profile)
    except ChainStudioError as err:
        raise ReplayError(str(err)) from None
    finally:
        if helper is not None:
            helper.close()
    return _findings.attach_recorded_findings(result, trace, profile)


COLUMNS = (2, 3, 4)
"""How many policies the page can show side by side."""
KEPT_CALLS = 20_000
"""Replayed calls the server keeps besides the Replay page's columns (``studio/replay_cache.py``): at 25,000 calls
the columns only (and the replay made last), at 1,000 calls 20 more replays."""
_KEPT: ReplayCache[_result.ReplayResult] = ReplayCache(KEPT_CALLS, max_entries=48, weight=lambda r: len(r.calls))
"""The server's replays. Not re-pickled on every rerun, as ``st.cache_data`` would; the page only reads them. Their
millions of objects are frozen out of the cyclic GC (core/heap.py), or every later rerun of any page would pay
full collections over them (a 5-15 s Lint page after a 25,000-call replay)."""


def show_columns(loaded: Loaded, specs: list[PolicySpec], price_as: str | None, profile: str) -> None:
    """The Replay page shows these columns: their replays are kept whatever they weigh (others may go)."""
    _KEPT.pin([(loaded.digest, s, price_as, profile) for s in specs])


_WARM: dict[tuple, Future] = {}
"""(digest, spec, price_as, profile) -> the replay started ahead of the page (``studio/warmup.py``),
until the page's cache takes it."""


def replay_ahead(loaded: Loaded, s: PolicySpec, profile: str, submit: Callable[..., Future]) -> Future | None:
    """Have ``submit`` (an executor's) replay the trace under ``s`` (own price) for the page to take later;
    None when the page replayed it already or it is under way."""
    key = (loaded.digest, s, None, profile)
    if key in _WARM or key in _KEPT:
        return None

    def job() -> _result.ReplayResult:
        take_recorded_findings(loaded, profile)
        with long_lived():
            return _run(loaded.trace, s, _models.price_as(loaded.trace.models, None), profile)
    future = _WARM[key] = submit(job)
    return future


def replay(loaded: Loaded, s: PolicySpec, price_as: str | None = None,
           profile: str = "openai") -> _result.ReplayResult:
    """The trace replayed under one policy, priced as ``pricing(loaded, price_as)`` says and linted for
    ``profile`` (raises ``ReplayError`` with one sentence); kept in ``_KEPT``."""
    key = (loaded.digest, s, price_as, profile)

    def compute() -> _result.ReplayResult:
        warm = _WARM.pop(key, None)
        if warm is not None:        # replayed ahead in the background (studio/warmup.py): wait for it
            try:
                return warm.result()
            except ReplayError:
                pass                # replayed again below, so the page shows the error as its own
        _token_worker.take_counts(loaded.digest)    # a big trace's counting child's per-text counts: not encoded again
        take_recorded_findings(loaded, profile)
        trace = loaded.trace
        with long_lived():
            return _run(trace, s, _models.price_as(trace.models, price_as), profile)
    return _KEPT.get(key, compute)


PROGRESS_CALLS = 2000
"""From this many calls the page shows a progress bar while it replays a policy for the first time."""


def replayed(loaded: Loaded, s: PolicySpec, price_as: str | None = None, profile: str = "openai") -> bool:
    """Whether this server holds the trace replayed under ``s``, replayed on the page or ahead of it (the page then
    draws no progress)."""
    key = (loaded.digest, s, price_as, profile)
    warm = _WARM.get(key)
    return key in _KEPT or (warm is not None and warm.done() and warm.exception() is None)


PRICE_CHOICES = _models.priced_models()
"""The models a trace can be priced as (the catalogue's priced rows, cheapest first)."""


def pricing(loaded: Loaded, price_as: str | None = None) -> _models.Pricing:
    """``price_as`` (a catalogue family) if given, else the trace's own model's list price, else the default."""
    return _models.price_as(trace_models(loaded), price_as)


def trace_models(loaded: Loaded) -> list[str]:
    """The trace's models in call order (``Trace.models`` walks every call: once per trace, not per rerun)."""
    return _derived((loaded.trace,), ("models",), lambda: loaded.trace.models)


def proposed_probes(loaded: Loaded) -> list[str]:
    """The probes proposed from the trace's early user turns, once per trace (0.2 s at 25,000 calls)."""
    return list(_derived((loaded.trace,), ("probes",),
                         lambda: tuple(p.pattern for p in _probes.propose_probes(loaded.trace))))


def page_probes(loaded: Loaded) -> list[_probes.Probe]:
    """The proposed probes as the Replay page parses its box before anyone edits it."""
    return parse_probes("\n".join(proposed_probes(loaded)).splitlines())


def parse_probes(lines: list[str]) -> list[_probes.Probe]:
    try:
        return [_probes.probe_from_text(line) for line in lines if line.strip()]
    except Exception as err:  # re.error
        raise ReplayError(f"A probe's regex does not compile: {err}") from None


_DERIVED: dict[tuple, tuple[tuple[weakref.ref, ...], Any]] = {}
_DERIVED_LOCK = threading.Lock()
_DERIVED_MAX = 64
_COMPUTING: dict[tuple, threading.Event] = {}


@_residency.on_evict
def _drop_replays() -> None:
    """The server's replays, those started ahead and what was derived from them (``studio/residency.py``)."""
    _KEPT.clear()
    _WARM.clear()
    with _DERIVED_LOCK:
        _DERIVED.clear()


def _derived(owners: tuple, key: tuple, compute: Callable[[], Any]) -> Any:
    """``compute()`` once per set of ``owners`` (cached replay results, matrices, the trace) and ``key``.

    The value lives as long as its owners do: a replay result evicted from ``_KEPT`` takes
    what was derived from it along (weak references; an id reused by a new object is no hit). A value being
    computed by another thread (the warm-up, another session) is waited for, not computed twice."""
    k = (tuple(id(o) for o in owners), key)
    while True:
        with _DERIVED_LOCK:
            hit = _DERIVED.get(k)
            if hit is not None and all(ref() is o for ref, o in zip(hit[0], owners)):
                return hit[1]
            busy = _COMPUTING.get(k)
            if busy is None:
                busy = _COMPUTING[k] = threading.Event()
                break
        busy.wait()
    try:
        with long_lived():
            value = compute()
        with _DERIVED_LOCK:
            for dead in [k2 for k2, (refs, _) in _DERIVED.items() if any(ref() is None for ref in refs)]:
                del _DERIVED[dead]
            while len(_DERIVED) >= _DERIVED_MAX:
                _DERIVED.pop(next(iter(_DERIVED)))
            _DERIVED[k] = (tuple(weakref.ref(o) for o in owners), value)
    finally:
        with _DERIVED_LOCK:
            _COMPUTING.pop(k, None)
        busy.set()
    return value


def retention(loaded: Loaded, results: list[_result.ReplayResult],
              probes: list[_probes.Probe]) -> list[_probes.RetentionMatrix]:
    """Recorded first, then one matrix per replayed policy (each computed once per cached replay and probes:
    25,000 calls take seconds per policy, not to be paid on every rerun of the page)."""
    return [recorded_retention(loaded, probes)] + [_derived((r,), ("retention", tuple(probes)), lambda r=r: _probes.replay_retention(r, probes))
                         for r in results]


def recorded_retention(loaded: Loaded, probes: list[_probes.Probe]) -> _probes.RetentionMatrix:
    """The recorded payloads' retention matrix (once per trace and probes), the linting child's when it stored it
    (``keep_recorded``: 0.5 s of a big trace's first pick, and the stream's probe masks for the replayed ones)."""
    def compute() -> _probes.RetentionMatrix:
        from agent_core.replay import stored

        entry = _view_store.load(RECORDED_RETENTION, loaded.digest, _probes_slot(probes)) \
            if len(loaded.trace.calls) >= PROGRESS_CALLS else None
        matrix = stored.retention_of_entry(loaded.trace, probes, entry) if entry is not None else None
        return matrix if matrix is not None else _probes.recorded_retention(loaded.trace, list(probes))
    return _derived((loaded.trace,), ("recorded_retention", tuple(probes)), compute)


def totals(result: _result.ReplayResult) -> dict:
    """``result.totals`` (sums over every replayed call), once per cached replay."""
    return _derived((result,), ("totals",), lambda: result.totals)


def heatmap_rows(matrices: list[_probes.RetentionMatrix]) -> tuple[list[str], list[int], list[list[int]]]:
    """(row labels, call indexes, z) for one heatmap: a row per source x probe, 1 = present.

    Labels are HTML-escaped: plotly renders a few tags (<b>, <a href>) in axis text, and a probe
    proposed from a user turn is trace data."""
    import html

    labels, z = [], []
    calls = matrices[0].calls if matrices else []
    for m in matrices:
        for row in m.rows:
            labels.append(html.escape(f"{m.source} · {row.probe.label}"))
            z.append([1 if p else 0 for p in row.present])
    return labels, calls, z


def forget_stories(loaded: Loaded, results: list[_result.ReplayResult], matrices: list[_probes.RetentionMatrix],
                   lang: str = "en") -> list[_forgetting.FactStory]:
    """"Why did it forget?" per fact, readable: quoted messages instead of ids, sources that agree on one line
    (once per trace, replays, matrices and language)."""
    return _derived((loaded.trace, *results, *matrices), ("stories", lang),
                    lambda: _forget_stories(loaded, results, matrices, lang))


def _forget_stories(loaded: Loaded, results: list[_result.ReplayResult], matrices: list[_probes.RetentionMatrix],
                    lang: str) -> list[_forgetting.FactStory]:
    texts, extra = _story_sources(loaded, results)
    return _forgetting.stories(matrices, texts, lang, extra)


def recorded_story_sources(loaded: Loaded) -> tuple[dict, _forgetting.SourceDrops]:
    """(stream id -> (role, text), the recorded drops and call positions) for the stories: the trace's own part,
    once per trace (0.2 s at 25,000 calls; the linting child builds it while the count goes on)."""
    def build() -> tuple[dict, _forgetting.SourceDrops]:
        from agent_core.replay.calls import call_position

        texts = {m.id: (m.role, m.text) for m in loaded.trace.stream}
        texts.update({k: (m.role, m.text) for k, m in loaded.trace.policy_messages.items()})
        n = len(loaded.trace.stream)
        return texts, _forgetting.SourceDrops({d.msg_id: d for d in _probes.recorded_drops(loaded.trace)},
                                              {c.index: call_position(c, n) for c in loaded.trace.calls})
    return _derived((loaded.trace,), ("recorded_story_sources",), build)


def _story_sources(loaded: Loaded, results: list[_result.ReplayResult]) -> tuple[dict, dict]:
    """(stream id -> (role, text), source label -> its drops and call positions) for the stories."""
    texts, recorded = recorded_story_sources(loaded)
    extra = {"recorded": recorded}
    for r in results:
        extra[r.label] = _forgetting.SourceDrops({d.msg_id: d for d in r.drops}, {c.call: c.position for c in r.calls})
    return texts, extra


HEATMAP_COLUMNS = 600
"""Beyond this many calls the retention heatmap shows bins of consecutive calls (about a screen's width)."""


@dataclass(frozen=True)
class Heatmap:
    """The retention heatmap at screen resolution: each column a call, or a bin of consecutive calls."""

    labels: list[str]
    """One per row (source x probe), HTML-escaped."""
    x: list[float]
    """Each column's position on the call axis (a call, or the middle of a bin)."""
    z: list[list[float]]
    """Share of the column's calls that carried the probe (0..1; exactly 0 or 1 for a single call)."""
    hover: list[list[list[int]]]
    """Per row and column: [first call, last call, calls that carried it, first call without it or -1]."""
    binned: bool
    """True when a column stands for more than one call."""


def heatmap(matrices: list[_probes.RetentionMatrix], columns: int = HEATMAP_COLUMNS) -> Heatmap:
    """``heatmap_rows`` aggregated to at most ``columns`` columns: a probe lost for a single call still shows
    (its bin is below 1) and the hover names the exact first call without it (once per set of matrices)."""
    return _derived(tuple(matrices), ("heatmap", columns), lambda: _heatmap(matrices, columns))


def _heatmap(matrices: list[_probes.RetentionMatrix], columns: int) -> Heatmap:
    labels, calls, z1 = heatmap_rows(matrices)
    n = len(calls)
    size = max(1, -(-n // max(1, columns)))
    x, z, hover = [], [], []
    bounds = [(a, min(n, a + size)) for a in range(0, n, size)]
    x = [(calls[a] + calls[b - 1]) / 2 if size > 1 else calls[a] for a, b in bounds]
    for row in z1:
        zr, hr = [], []
        for a, b in bounds:
            part = row[a:b]
            k = sum(part)
            gone = next((calls[a + i] for i, v in enumerate(part) if not v), -1)
            zr.append(k / len(part))
            hr.append([calls[a], calls[b - 1], k, gone])
        z.append(zr)
        hover.append(hr)
    return Heatmap(labels=labels, x=x, z=z, hover=hover, binned=size > 1)


def binned_line(x: list[int], y: list[float], points: int = HEATMAP_COLUMNS) -> dict[str, list]:
    """A line of many calls as at most ``points`` (middle call, mean) pairs, as plotly's ``x`` and ``y``
    (numpy arrays: plotly takes them whole, not value by value); unchanged when it fits."""
    import numpy as np

    xs, ys = _replay_first.binned(x, y, points)
    return {"x": np.asarray(xs), "y": np.asarray(ys)}


def message_by_id(loaded: Loaded) -> dict:
    """Stream id -> message (built once per trace, not per rerun: 50,000 ids at 25,000 calls)."""
    return _derived((loaded.trace,), ("message_by_id",), loaded.trace.message_by_id)


def recorded_reply(loaded: Loaded, call: int) -> dict | None:
    return loaded.trace.calls[call].reply if 0 <= call < len(loaded.trace.calls) else None


def resend(result: _result.ReplayResult, call: int) -> _counterfactual.Resend:
    """Send the replayed payload of ``call`` to the configured endpoint, else the bundled demo model."""
    rc = result.call(call)
    if rc is None:
        raise ReplayError(f"Call {call} was not replayed.")
    return _counterfactual.resend(rc)


def short(message: dict, limit: int = 160) -> str:
    """A one-line preview of a message for lists (shown with st.text, never as markdown)."""
    from agent_core.core.msg import content_text

    text = content_text(message.get("content")) if isinstance(message, dict) else json.dumps(message)
    if tool_calls_of(message):
        names = [str(function_of(c).get("name")) for c in tool_calls_of(message)]
        text = (text + " " if text else "") + "→ " + ", ".join(names)
    text = " ".join(text.split())
    return text[:limit] + ("…" if len(text) > limit else "")


# --- the page's view of its replays (studio/viewmodels/replay_first.py) ----------------------------------------

def replay_now(loaded: Loaded, s: PolicySpec, profile: str) -> _result.ReplayResult:
    """The trace replayed under ``s`` at its own price, here and now, uncached (the replay worker's)."""
    with long_lived():
        return _run(loaded.trace, s, _models.price_as(loaded.trace.models, None), profile)


def first_view(loaded: Loaded, results: list[_result.ReplayResult], probes: list[_probes.Probe],
               langs: tuple[str, ...], call: int | None) -> dict | None:
    """What the page shows of ``results`` with ``probes`` as JSON values: stories in each of ``langs``, ``call``
    (None: the last) in detail; None when there is no chat call to show."""
    if not results or not results[0].calls:
        return None
    matrices = retention(loaded, results, probes)
    hm = heatmap(matrices) if probes else None
    if not probes:
        stories = None
    elif len(langs) == 1:
        stories = {langs[0]: forget_stories(loaded, results, matrices, langs[0])}
    else:       # the worker's: every language from one set of sources
        texts, extra = _story_sources(loaded, results)
        stories = {lang: _forgetting.stories(matrices, texts, lang, extra) for lang in langs}
    call = results[0].calls[-1].call if call is None else call
    return _replay_first.view(results, [totals(r) for r in results], HEATMAP_COLUMNS, hm, stories, call,
                              message_by_id(loaded), short)


def page_view(loaded: Loaded, results: list[_result.ReplayResult], probes: list[_probes.Probe],
              lang: str) -> _replay_first.FirstView | None:
    """The page's view of its own replays (once per replays, probes and language), None without chat calls."""
    def build():
        view = first_view(loaded, results, probes, (lang,), None)
        return _replay_first.FirstView(**view) if view is not None else None
    return _derived((loaded.trace, *results), ("first_view", tuple(probes), lang), build)


def call_details(loaded: Loaded, results: list[_result.ReplayResult], call: int) -> list[dict]:
    """``call`` of each replay as the page's columns show it (``replay_first.call_detail``)."""
    by_id = message_by_id(loaded)
    return _derived((loaded.trace, *results), ("call_details", call),
                    lambda: [_replay_first.call_detail(r.call(call), by_id, short) for r in results])
