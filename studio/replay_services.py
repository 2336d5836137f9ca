"""The Replay page's door into agent_core (the replay part of ``studio/services.py``).

Kept in its own module so the page's wrappers don't collide with edits to
services.py; same rules: pages call these, results are cached by the trace's
digest plus the parameters, and nothing here renders.
"""
from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st

from agent_core.core import models as _models
from agent_core.core.errors import ChainStudioError
from agent_core.replay import counterfactual as _counterfactual
from agent_core.replay import engine as _replay
from agent_core.replay import findings as _findings
from agent_core.replay import probes as _probes
from agent_core.replay import result as _result
from agent_core.trace.model import Trace
from agent_core.trim import config as _config
from agent_core.trim import registry as _policies
from studio.services import Loaded
from studio.components.safe import function_of, tool_calls_of

POLICY_NAMES = list(_policies.POLICIES)


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


class ReplayError(Exception):
    """One sentence for the page (a parameter that does not parse, an endpoint that failed)."""


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


@st.cache_resource(max_entries=48, show_spinner=False)
def _replay_cached(digest: str, _trace: Trace, s: PolicySpec, price_as: str | None,
                   profile: str) -> _result.ReplayResult:
    # cache_resource: a 1,000-call replay is not re-pickled on every rerun; the page only reads it.
    return _run(_trace, s, _models.price_as(_trace.models, price_as), profile)


def replay(loaded: Loaded, s: PolicySpec, price_as: str | None = None,
           profile: str = "openai") -> _result.ReplayResult:
    """The trace replayed under one policy, priced as ``pricing(loaded, price_as)`` says and linted for
    ``profile`` (raises ``ReplayError`` with one sentence)."""
    return _replay_cached(loaded.digest, loaded.trace, s, price_as, profile)


PRICE_CHOICES = _models.priced_models()
"""The models a trace can be priced as (the catalogue's priced rows, cheapest first)."""


def pricing(loaded: Loaded, price_as: str | None = None) -> _models.Pricing:
    """``price_as`` (a catalogue family) if given, else the trace's own model's list price, else the default."""
    return _models.price_as(loaded.trace.models, price_as)


def proposed_probes(loaded: Loaded) -> list[str]:
    return [p.pattern for p in _probes.propose_probes(loaded.trace)]


def parse_probes(lines: list[str]) -> list[_probes.Probe]:
    try:
        return [_probes.probe_from_text(line) for line in lines if line.strip()]
    except Exception as err:  # re.error
        raise ReplayError(f"A probe's regex does not compile: {err}") from None


@st.cache_resource(max_entries=64, show_spinner=False)
def _recorded_matrix(digest: str, _trace: Trace, probes: tuple) -> _probes.RetentionMatrix:
    return _probes.recorded_retention(_trace, list(probes))


def retention(loaded: Loaded, results: list[_result.ReplayResult],
              probes: list[_probes.Probe]) -> list[_probes.RetentionMatrix]:
    """Recorded first, then one matrix per replayed policy."""
    recorded = _recorded_matrix(loaded.digest, loaded.trace, tuple(probes))
    return [recorded] + [_probes.replay_retention(r, probes) for r in results]


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


def message_by_id(loaded: Loaded) -> dict:
    return loaded.trace.message_by_id()


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
