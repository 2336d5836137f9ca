"""Replay a trace under another trim policy: what would each call have sent?

The stream (every message in the order it was added) and each call's
position in it (``Call.stream_index``) are all a replay needs: it adds the
stream's messages one by one to a simulated memory, runs the policy after
every add exactly as ``ShortTermMemory`` does (including the user's
``/clear`` events), and snapshots the memory where each call was made.
Per call it reports the payload, its cookbook token count (tool definitions
included), what the policy dropped since the previous call and why, the
linter's findings, and the difference to what was really sent.

Speed: each message is converted and tokenized once, and keeps both on
itself (``msg.openai_dict``, ``MessageTokens``), so every policy replayed
on a trace shares them. The simulated memory (``_memory``) keeps each
message's dict, id and count in step with it, so a call's snapshot is two
list copies and a running total, and trims through the policy's incremental
trimmer (token-budget's is O(dropped) per add). Recorded payloads are counted once per trace. A
1,000-call token-budget replay takes a few tens of milliseconds.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

from agent_core.core.msg import message_key
from agent_core.trace.model import Call, Trace
from agent_core.trace.tokens import REPLY_PRIMING
from agent_core.trim.base import TrimPolicy, trimmer_for
from agent_core.trim.budget import TokenBudget
from agent_core.trim.registry import describe, make_policy, policy_params

from ._memory import (
    Counts,
    Memory,
    Recorded,
    recorded_ids_of,
    recorded_payloads,
)

DEFAULT_PRICES: dict[str, float] = {
    "gpt-4o": 2.50,
    "gpt-4o-mini": 0.15,
    "gpt-4.1": 2.00,
    "gpt-4.1-mini": 0.40,
    "gpt-4.1-nano": 0.10,
    "gpt-4-turbo": 10.00,
    "gpt-3.5-turbo": 0.50,
    "chain-studio-demo-model": 0.0,
}
"""US dollars per 1M input tokens (list prices; edit freely -- callers pass their own table)."""


def price_for(model: str | None, prices: dict[str, float] | None = None) -> float | None:
    """The per-1M-input-token price: exact name first, then the longest matching prefix
    (``gpt-4o-2024-08-06`` -> ``gpt-4o``); None when the model is not in the table."""
    table = DEFAULT_PRICES if prices is None else prices
    if not model:
        return None
    name = model.split("/", 1)[1] if model.startswith(("openai/", "azure/")) else model
    if name in table:
        return table[name]
    matches = [k for k in table if name.startswith(k)]
    return table[max(matches, key=len)] if matches else None


@dataclass
class Drop:
    """One message a policy (or the user's /clear) removed from memory."""

    msg_id: str
    """The removed message's stream id."""
    role: str
    """Its role, so a report can say "the user message" without a lookup."""
    after_add: int
    """How many stream messages had been added when it was removed."""
    policy: str
    """The policy's name, or ``clear``."""
    reason: str
    """The rule, in one sentence."""

    def export(self) -> dict:
        return {"id": self.msg_id, "role": self.role, "after_add": self.after_add, "policy": self.policy,
                "reason": self.reason}


@dataclass
class PayloadDiff:
    """Replayed payload vs the recorded one, by message id."""

    kept: list[str]
    """In both."""
    added: list[str]
    """Only in the replay (messages the recorded call did not carry, and summaries)."""
    dropped: list[str]
    """Only in the recorded payload (recorded messages without a stream id show as ``recorded[i]``)."""
    same: bool
    """True when the replayed messages equal the recorded ones exactly, order and keys included."""

    def export(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class ReplayedCall:
    """What one call would have sent under the replayed policy."""

    call: int
    """The call's index in the trace."""
    position: int
    """Stream messages added before the call."""
    messages: list[dict]
    """The replayed payload (OpenAI dicts; shared between calls, treat as read-only)."""
    ids: list[str]
    """Stream id (or summary id) of each payload message."""
    tools: list[dict] | None
    """The tool definitions the recorded call sent (replay keeps them)."""
    model: str | None
    """The recorded call's model: it picks the tokenizer and the price."""
    tokens: int
    """Cookbook count of messages + tool definitions + reply priming."""
    recorded_tokens: int
    """The same count for the payload that was really sent."""
    reported_prompt_tokens: int | None
    """``usage.prompt_tokens`` of the recorded response, if any."""
    dropped: list[Drop]
    """What left memory since the previous replayed call."""
    findings: list[dict]
    """Linter findings on the replayed payload."""
    same: bool
    """True when the replayed messages equal the recorded ones exactly, order and keys included."""
    cost_usd: float | None
    """Estimated input cost; None when the model has no price."""
    recorded_findings: list[dict] | None = None
    """Linter findings on the recorded payload; filled by ``attach_recorded_findings`` (recorded
    payloads do not depend on the policy, so they are linted once per trace, on demand)."""
    _call: Call | None = field(default=None, repr=False)
    """The recorded call: ``recorded_messages`` and ``recorded_ids`` are read from it when asked,
    so a result does not pin a materialized payload per call."""
    _recorded_ids: list[str | None] | None = field(default=None, repr=False)
    """Cache of ``recorded_ids`` (set at replay when bodies, not ids, showed the payloads equal)."""
    _diff: PayloadDiff | None = field(default=None, repr=False)
    """Cache of ``diff``."""

    @property
    def recorded_messages(self) -> list[dict]:
        """The payload that was really sent."""
        return self._call.messages if self._call is not None else []

    @property
    def recorded_ids(self) -> list[str | None]:
        """Stream id of each recorded payload message (None where the reader matched none)."""
        if self._recorded_ids is None:
            self._recorded_ids = recorded_ids_of(self._call) if self._call is not None else []
        return self._recorded_ids

    @property
    def diff(self) -> PayloadDiff:
        """Replayed vs recorded, by id (computed when first asked: most callers never need it)."""
        if self._diff is None:
            self._diff = _diff(self.ids, self.messages, self.recorded_ids, self.recorded_messages, self.same)
        return self._diff

    @property
    def rejected(self) -> bool:
        """Would the API refuse this payload (any error finding)?"""
        return any(is_error(f) for f in self.findings)

    @property
    def introduced(self) -> list[dict]:
        """Error findings of the replay that the recorded payload did not have: same rule on the
        same message (by id; by position where the recorded message has no id)."""
        def where(f: dict, ids: Sequence[str | None]) -> object:
            i = f.get("index")
            return ids[i] if isinstance(i, int) and 0 <= i < len(ids) and ids[i] else ("at", i)

        rec_ids = self.recorded_ids if self.same is False else self.ids
        before = {(_rule(f), where(f, rec_ids)) for f in self.recorded_findings or () if is_error(f)}
        return [f for f in self.findings if is_error(f) and (_rule(f), where(f, self.ids)) not in before]

    def export(self) -> dict:
        """The CLI's per-call JSON: exactly call, messages, tokens, dropped, findings."""
        return {"call": self.call, "messages": self.messages, "tokens": self.tokens,
                "dropped": [d.export() for d in self.dropped], "findings": self.findings}


@dataclass
class ReplayResult:
    """A whole trace replayed under one policy."""

    policy: str
    """The policy's registry name."""
    params: dict
    """Its parameters, as ``params()`` reports them."""
    label: str
    """``token-budget(max_tokens=2000, ...)``, for legends."""
    calls: list[ReplayedCall]
    """One per chat call of the trace, in call order."""
    drops: list[Drop]
    """Every removal, in stream order."""
    prices: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_PRICES))
    """The price table the costs were computed with (model -> $ per 1M input tokens)."""
    conversations: list[dict] = field(default_factory=list)
    """The trace's ``meta["conversations"]`` (several in one import), for per-conversation diagnosis."""

    @property
    def totals(self) -> dict:
        priced = [c for c in self.calls if c.cost_usd is not None]
        unpriced = sorted({c.model or "(unknown)" for c in self.calls if c.cost_usd is None})
        rec_cost = sum(c.recorded_tokens * (price_for(c.model, self.prices) or 0) / 1e6 for c in priced)
        return {
            "calls": len(self.calls),
            "tokens": sum(c.tokens for c in self.calls),
            "recorded_tokens": sum(c.recorded_tokens for c in self.calls),
            "cost_usd": round(sum(c.cost_usd for c in priced), 6),
            "recorded_cost_usd": round(rec_cost, 6),
            "unpriced_models": unpriced,
            "rejected": len([c for c in self.calls if c.rejected]),
            "rejected_calls": [c.call for c in self.calls if c.rejected],
            "error_findings": sum(1 for c in self.calls for f in c.findings if is_error(f)),
            "dropped_messages": len({d.msg_id for d in self.drops}),
            "same_as_recorded": sum(1 for c in self.calls if c.same),
        }

    def to_json(self, probes: dict | None = None) -> dict:
        """The ``chain-studio replay --format json`` document."""
        return {"policy": self.policy, "params": self.params, "calls": [c.export() for c in self.calls],
                "probes": probes or {}, "totals": self.totals}

    def call(self, index: int) -> ReplayedCall | None:
        return next((c for c in self.calls if c.call == index), None)


# --- findings -------------------------------------------------------------

def is_error(finding: dict) -> bool:
    """An exported finding (``Finding.export()``) of error severity."""
    return finding.get("severity") == "error"


def _rule(finding: dict) -> str:
    return str(finding.get("rule"))


def lint(messages: list[dict], tools: list[dict] | None, profile: str = "openai", call: int = 0) -> list[dict]:
    """Findings for one payload as plain dicts (``lint.lint_payload``)."""
    from agent_core.lint.scan import lint_payload

    return [f.export() for f in lint_payload(messages, tools, profile=profile, call=call)]


def lint_many(payloads: Sequence[tuple[int, list[dict], list[dict] | None]], profile: str = "openai",
              check_tools: bool = True) -> dict[int, list[dict]]:
    """Findings per call for many payloads (see ``lint_calls``)."""
    return lint_calls([Call(index=index, request={"messages": messages, **({"tools": tools} if tools else {})})
                       for index, messages, tools in payloads], profile, check_tools)


def lint_calls(calls: Sequence[Call], profile: str = "openai", check_tools: bool = True) -> dict[int, list[dict]]:
    """Findings per call, through ``lint.lint_trace`` so a payload that extends the previous one
    is linted for its new messages only (keep-all stays linear; calls read from a file compare runs)."""
    from agent_core.lint.scan import lint_trace

    out: dict[int, list[dict]] = {c.index: [] for c in calls}
    # lint_trace resumes only when the tools are the same as the previous call's; the classic flow
    # alternates calls with and without tools, so lint each tools variant as its own sequence.
    groups: dict[str, list[Call]] = {}
    keys: dict[int, tuple[Any, str]] = {}    # one tools list object is shared by a file's calls
    for c in calls:
        tools = c.tools
        known = keys.get(id(tools))
        if known is None or known[0] is not tools:
            known = keys[id(tools)] = (tools, message_key(tools) if tools else "")
        groups.setdefault(known[1], []).append(c)
    for group in groups.values():
        shim = Trace(source="<replay>", format="replay", calls=group, meta={"tools_recorded": check_tools})
        for f in lint_trace(shim, profile=profile):
            out.setdefault(f.call, []).append(f.export())
    return out


# --- replay ---------------------------------------------------------------

def chat_calls(trace: Trace) -> list[Call]:
    """The calls a policy shapes (summary or counterfactual calls are not replayed)."""
    return [c for c in trace.calls if c.purpose == "chat"]


def call_position(call: Call, stream_len: int) -> int:
    """Where the call was made: its stream_index, else after as many messages as it sent."""
    if call.stream_index is not None:
        return min(max(call.stream_index, 0), stream_len)
    return min(len(call.messages), stream_len)


def trace_model(trace: Trace) -> str | None:
    calls = chat_calls(trace)
    return next((c.model for c in calls if c.model), None) or trace.meta.get("model")


def policy_for_trace(name: str, params: dict | None, trace: Trace, client=None) -> TrimPolicy:  # noqa: ANN001
    """``make_policy`` with what the trace knows filled in: the model for token counting and,
    for token-budget, the largest tool definitions any call sent (so the budget covers them)."""
    values = dict(params or {})
    for p in policy_params(name):
        if p.from_trace and not values.get(p.name):
            values[p.name] = trace_model(trace)
    policy = make_policy(name, client=client, **values)
    if isinstance(policy, TokenBudget) and policy.tools is None:
        policy = policy.covering([c.tools for c in chat_calls(trace) if c.tools])
    return policy


def replay(trace: Trace, policy: TrimPolicy, *, prices: dict[str, float] | None = None, lint_calls: bool = True,
           profile: str = "openai") -> ReplayResult:
    """Rebuild every chat call's payload under ``policy``.

    Args:
        trace: a recorded or imported trace (needs ``stream``; calls without
            ``stream_index`` are placed after as many messages as they sent).
        policy: any ``TrimPolicy``; it is applied after every add.
        prices: model -> $ per 1M input tokens (default ``DEFAULT_PRICES``).
        lint_calls: run the linter on every replayed and recorded payload.
        profile: the linter's provider profile.
    """
    prices = dict(DEFAULT_PRICES if prices is None else prices)
    stream = trace.stream
    by_id = {m.id: m for m in stream}
    calls = sorted(chat_calls(trace), key=lambda c: (call_position(c, len(stream)), c.index))
    at: dict[int, list[Call]] = {}
    for c in calls:
        at.setdefault(call_position(c, len(stream)), []).append(c)
    clears: dict[int, int] = {}
    for e in trace.events:
        if e.event.type == "clear":
            clears[e.after_add] = clears.get(e.after_add, 0) + 1
    counts = Counts()
    snap = _Snapshots(counts, recorded_payloads(trace, calls, counts, by_id), prices)
    mt = counts.for_model(trace_model(trace))
    memory = Memory(mt, trimmer_for(policy))
    drops: list[Drop] = []
    pending: list[Drop] = []
    out: list[ReplayedCall] = []
    name = policy.name

    # Several conversations in one import: each starts with an empty memory.
    # A call at a boundary position may still belong to the previous conversation (it ended there).
    starts: dict[int, int] = {}
    for r in trace.meta.get("conversations") or ():
        try:
            if r["messages"][0] > 0:
                starts[int(r["messages"][0])] = int(r["calls"][0])
        except (KeyError, IndexError, TypeError, ValueError):
            continue

    for pos in range(len(stream) + 1):
        if pos in starts:
            for c in [c for c in at.get(pos, ()) if c.index < starts[pos]]:
                out.append(snap.take(c, pos, memory, pending))
                pending = []
            at[pos] = [c for c in at.get(pos, ()) if c.index >= starts[pos]]
            memory.reset([])
        if clears.get(pos):
            gone = [m for m in memory.msgs if m.role != "system"]
            memory.reset([m for m in memory.msgs if m.role == "system"])
            new = [Drop(m.id, m.role, pos, "clear", "the user cleared the conversation") for m in gone]
            drops += new
            pending += new
        for c in at.get(pos, ()):
            out.append(snap.take(c, pos, memory, pending))
            pending = []
        if pos < len(stream):
            trim = memory.add(stream[pos])
            if trim is not None:
                removed, reason = trim
                new = [Drop(m.id, m.role, pos + 1, name, reason) for m in removed]
                drops += new
                pending += new
    memory.done()
    out.sort(key=lambda r: r.call)
    if lint_calls:
        check_tools = trace.meta.get("tools_recorded", True) is not False
        found = lint_many([(r.call, r.messages, r.tools) for r in out], profile, check_tools)
        for r in out:
            r.findings = found.get(r.call, [])
    return ReplayResult(policy=policy.name, params=policy.params(), label=describe(policy), calls=out,
                        drops=drops, prices=prices, conversations=list(trace.meta.get("conversations") or []))


class _Snapshots:
    """Builds each call's ``ReplayedCall`` from the memory at its position."""

    def __init__(self, counts: Counts, recorded: dict[int, Recorded], prices: dict[str, float]) -> None:
        self._counts = counts
        self._recorded = recorded
        self._prices = prices
        self._price: dict[str | None, float | None] = {}
        self._last: tuple[Call, int, int, bool] | None = None
        """The call before: (call, memory version, payload length, same)."""

    def take(self, c: Call, pos: int, memory: Memory, pending: list[Drop]) -> ReplayedCall:
        rec = self._recorded[id(c)]
        model, tools = rec.model, rec.tools
        mt = self._counts.for_model(model)
        messages, ids = list(memory.dicts), list(memory.ids)
        tokens = memory.tokens_for(mt) + rec.tool_tokens + REPLY_PRIMING
        recorded_ids = None
        last = self._last
        if rec.length != len(ids):
            same = False
        elif (last is not None and rec.after is last[0] and last[3] and last[1] == memory.version
              and len(rec.tail) == len(ids) - last[2]):
            # The call before was the same and both payloads only grew since: compare what they added.
            # (Read from a file, a payload's bodies are its ids' own, so equal bodies is what equal ids
            # would say, and the body comparison below is the rule where they are not.) Keep-all of a
            # full-history log stays O(new messages) per call instead of building both id lists.
            k = last[2]
            same = all(map(_same_body, messages[k:], rec.tail))
            if same:
                recorded_ids = ids
        else:
            rec_ids = c.message_ids if rec.ids_given else [None] * rec.length
            if rec_ids == ids:
                # Ids were matched to stream messages by their exact body, so equal ids mean equal bodies.
                same = True
            else:
                # Bodies decide: a reader may map a repeated body ("thanks") to another message with that body.
                recorded = c.messages
                same = all(map(_same_body, messages, recorded))
                if same:
                    recorded_ids = ids
        self._last = (c, memory.version, len(ids), same)
        if model in self._price:
            price = self._price[model]
        else:
            price = self._price[model] = price_for(model, self._prices)
        return ReplayedCall(call=c.index, position=pos, messages=messages, ids=ids, tools=tools, model=model,
                            tokens=tokens, recorded_tokens=rec.tokens + rec.tool_tokens + REPLY_PRIMING,
                            reported_prompt_tokens=rec.reported_prompt_tokens, dropped=list(pending), findings=[],
                            same=same, cost_usd=None if price is None else tokens * price / 1e6,
                            _call=c, _recorded_ids=recorded_ids)


def _same_json(a: Any, b: Any) -> bool:
    """``message_key(a) == message_key(b)`` for JSON values, without serializing: same types, keys in
    the same order, equal leaves (floats by ``repr``, as JSON writes them). A False may still be equal
    JSON (a tuple beside a list, say): callers fall back to ``message_key``."""
    if a is b:
        return True
    t = type(a)
    if t is not type(b):
        return False
    if t is dict:
        return len(a) == len(b) and all(ka == kb and _same_json(va, vb)
                                        for (ka, va), (kb, vb) in zip(a.items(), b.items()))
    if t is list:
        return len(a) == len(b) and all(map(_same_json, a, b))
    if t is float:
        return repr(a) == repr(b)
    return t in (str, int, bool, type(None)) and a == b


def _same_body(a: dict, b: dict) -> bool:
    """Two payload messages are the same on the wire (``message_key``), the cheap way first."""
    return a is b or _same_json(a, b) or message_key(a) == message_key(b)


def _diff(ids: list[str], messages: list[dict], rec_ids: list[str | None], recorded: list[dict],
          same: bool) -> PayloadDiff:
    labels = [rid if rid else f"recorded[{i}]" for i, rid in enumerate(rec_ids)]
    rec_set = set(labels)
    mine = set(ids)
    added = [i for i, mid in enumerate(ids) if mid not in rec_set]
    dropped = [i for i, label in enumerate(labels) if label not in mine]
    if added and dropped:
        # A recorded message without (or with another) id but the same body is the same message.
        free: dict[str, list[int]] = {}
        for i in dropped:
            free.setdefault(message_key(recorded[i]), []).append(i)
        matched_added, matched_dropped = set(), set()
        for i in added:
            bucket = free.get(message_key(messages[i]))
            if bucket:
                matched_dropped.add(bucket.pop(0))
                matched_added.add(i)
        added = [i for i in added if i not in matched_added]
        dropped = [i for i in dropped if i not in matched_dropped]
    added_set = set(added)
    return PayloadDiff(kept=[mid for i, mid in enumerate(ids) if i not in added_set],
                       added=[ids[i] for i in added], dropped=[labels[i] for i in dropped], same=same)


def recorded_findings(trace: Trace, profile: str = "openai") -> dict[int, list[dict]]:
    """Linter findings of the recorded chat payloads, per call; computed once per trace and profile."""
    cache = trace.meta.get("_recorded_findings")
    if not isinstance(cache, dict) or cache.get("calls") is not trace.calls:
        # A copied meta (split_conversations) carries the cache of another trace's calls: start anew.
        cache = trace.meta["_recorded_findings"] = {"calls": trace.calls}
    if profile not in cache:
        check_tools = trace.meta.get("tools_recorded", True) is not False
        cache[profile] = lint_calls(chat_calls(trace), profile, check_tools)
    return cache[profile]


def attach_recorded_findings(result: "ReplayResult", trace: Trace, profile: str = "openai") -> "ReplayResult":
    """Fill each replayed call's ``recorded_findings`` (for ``introduced``: what the policy broke)."""
    found = recorded_findings(trace, profile)
    for r in result.calls:
        r.recorded_findings = r.findings if r.same else found.get(r.call, [])
    return result


def replay_many(trace: Trace, policies: Sequence[TrimPolicy], **kwargs: Any) -> list[ReplayResult]:
    """The same trace under several policies (the studio's side-by-side view)."""
    return [replay(trace, p, **kwargs) for p in policies]


# --- counterfactual -------------------------------------------------------

@dataclass
class Resend:
    """A replayed payload sent again, and what came back."""

    call: int | None
    """The replayed call it re-sent (None for a bare payload)."""
    reply: dict | None
    """The new assistant message."""
    response: dict | None
    """The whole response body."""
    error: str | None
    """One sentence when the endpoint refused or failed (a 400 for an orphan tool, say)."""
    endpoint: str
    """Host it went to (``127.0.0.1:port`` for the demo model)."""


def resend(payload: ReplayedCall | list[dict], endpoint=None, *, tools: list[dict] | None = None,  # noqa: ANN001
           recorder=None) -> Resend:  # noqa: ANN001
    """Send a replayed payload to ``endpoint`` (default: the configured one, else the demo model
    started for this one call). Recorded with ``purpose="counterfactual"`` if ``recorder`` is given."""
    from agent_core.chat.client import Endpoint, LLMClient, configured_endpoint
    from agent_core.core.errors import EndpointError
    from agent_core.serve.demo_model import MODEL_NAME

    call = payload.call if isinstance(payload, ReplayedCall) else None
    messages = payload.messages if isinstance(payload, ReplayedCall) else payload
    if tools is None and isinstance(payload, ReplayedCall):
        tools = payload.tools
    server = None
    endpoint = endpoint or configured_endpoint()
    if endpoint is None:
        from agent_core.serve.demo_server import DemoModelServer

        server = DemoModelServer().start()
        endpoint = Endpoint(base_url=server.base_url, model=MODEL_NAME, is_demo=True)
    client = LLMClient(endpoint, recorder=recorder, max_retries=0)
    try:
        response = client.complete(messages, tools, purpose="counterfactual")
        reply = (response.get("choices") or [{}])[0].get("message")
        return Resend(call, reply, response, None, endpoint.host)
    except EndpointError as err:
        return Resend(call, None, None, str(err), endpoint.host)
    finally:
        client.close()
        if server is not None:
            server.stop()
