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
message's dict, id and count in step with it, so a call's snapshot is a
``Payload`` over its lists (shared, copied on write: keep-all's N payloads are one list) and a running total, and trims through the policy's incremental
trimmer (token-budget's is O(dropped) per add). Recorded payloads are counted once per trace. A
1,000-call token-budget replay takes a few tens of milliseconds.
"""
from __future__ import annotations

from typing import Any, Callable, Sequence

from agent_core.core.models import ModelFacts, Pricing, lookup
from agent_core.core.msg import Msg, message_key
from agent_core.trace.model import Call, Trace
from agent_core.trace.tokens import REPLY_PRIMING
from agent_core.trim.base import TrimPolicy, trimmer_for
from agent_core.trim.budget import TokenBudget
from agent_core.trim.registry import describe, make_policy, policy_params

from ._memory import Counts, Memory, Recorded, recorded_payloads
from .calls import call_position, chat_calls, trace_model
from .edited import EditedPayload
from .findings import lint_payloads
from .result import Drop, ReplayedCall, ReplayResult


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


def replay_order(trace: Trace) -> list[Call]:
    """The chat calls in the order replay snapshots them: by stream position, then index."""
    n = len(trace.stream)
    return sorted(chat_calls(trace), key=lambda c: (call_position(c, n), c.index))


def replay(trace: Trace, policy: TrimPolicy, *, pricing: Pricing | None = None, lint_calls: bool = True,
           profile: str = "openai", known_tokens: Sequence[int] | None = None,
           ahead: Callable[[], dict | None] | None = None) -> ReplayResult:
    """Rebuild every chat call's payload under ``policy``.

    Args:
        trace: a recorded or imported trace (needs ``stream``; calls without
            ``stream_index`` are placed after as many messages as they sent).
        policy: any ``TrimPolicy``; it is applied after every add.
        pricing: the model every call is priced as (``core.models.price_as``); default: each
            call's own model from the catalogue (the unpriced demo model at $0).
        lint_calls: run the linter on every replayed and recorded payload.
        profile: the linter's provider profile.
        known_tokens: each recorded call's count (``replay_order``), as an earlier replay found it
            (``stored.py``); default: counted.
        ahead: running-summary line counts another process makes meanwhile (``MessageTokens.ahead``,
            ``bullets.py``).
    """
    stream = trace.stream
    calls = replay_order(trace)
    counts = Counts()
    snap = _Snapshots(counts, recorded_payloads(trace, calls, counts, {m.id: m for m in stream}, known_tokens),
                      pricing)
    mt = counts.for_model(trace_model(trace))
    mt.ahead = ahead
    run = _Run(Memory(mt, trimmer_for(policy)), snap, policy.name)
    run.walk(stream, _by_position(calls, len(stream)), _clear_positions(trace), _conversation_starts(trace))
    out = sorted(run.out, key=lambda r: r.call)
    if lint_calls:
        lint_replayed(out, trace, profile)
    return ReplayResult(policy=policy.name, params=policy.params(), label=describe(policy), calls=out,
                        drops=run.drops, pricing=pricing, conversations=list(trace.meta.get("conversations") or []))


# --- the passes -------------------------------------------------------------

def _by_position(calls: Sequence[Call], stream_len: int) -> dict[int, list[Call]]:
    """Each chat call under the stream position where it was made, in call order there.

    Keeps: a call is snapshot after exactly the messages added before it, and
    calls made at one position keep their recorded order.
    """
    at: dict[int, list[Call]] = {}
    for c in calls:
        at.setdefault(call_position(c, stream_len), []).append(c)
    return at


def _clear_positions(trace: Trace) -> set[int]:
    """Where the user cleared the conversation: how many stream messages had been added by then."""
    return {e.after_add for e in trace.events if e.event.type == "clear"}


def _conversation_starts(trace: Trace) -> dict[int, int]:
    """Stream position -> index of the first call, for each conversation of an import after the first.

    Keeps: each conversation starts with an empty memory; a malformed range is
    ignored rather than guessed at.
    """
    starts: dict[int, int] = {}
    for r in trace.meta.get("conversations") or ():
        try:
            if r["messages"][0] > 0:
                starts[int(r["messages"][0])] = int(r["calls"][0])
        except (KeyError, IndexError, TypeError, ValueError):
            continue
    return starts


class _Run:
    """One replay in progress: the memory, the snapshots taken, every drop, and the drops not yet shown."""

    def __init__(self, memory: Memory, snap: _Snapshots, policy_name: str) -> None:
        self.memory = memory
        self.snap = snap
        self.policy_name = policy_name
        self.out: list[ReplayedCall] = []
        self.drops: list[Drop] = []
        self._pending: list[Drop] = []

    def walk(self, stream: Sequence[Msg], at: dict[int, list[Call]], clears: set[int],
             starts: dict[int, int]) -> None:
        """Add the stream's messages in order, with each conversation start and clear where it
        happened, and snapshot every call at its position; then hand the policy its state back."""
        for pos in range(len(stream) + 1):
            here = at.get(pos, [])
            if pos in starts:
                here = self.end_conversation(pos, here, starts[pos])
            if pos in clears:
                self.clear(pos)
            self.snapshot(pos, here)
            if pos < len(stream):
                self.add(pos, stream[pos])
        self.memory.done()

    def end_conversation(self, pos: int, here: list[Call], first_call: int) -> list[Call]:
        """Start the next conversation at ``pos`` with an empty memory; the calls still to snapshot there.

        Keeps: a call never sees another conversation's messages. A call at the
        boundary that belongs to the conversation ending here (its index comes
        before ``first_call``) is snapshot before the memory is emptied.
        """
        self.snapshot(pos, [c for c in here if c.index < first_call])
        self.memory.reset([])
        return [c for c in here if c.index >= first_call]

    def clear(self, pos: int) -> None:
        """The user's /clear: only the system messages stay.

        Keeps: every message it removed is a ``Drop`` of policy ``clear``, shown
        with the next call, as the live memory records it.
        """
        gone = [m for m in self.memory.msgs if m.role != "system"]
        self.memory.reset([m for m in self.memory.msgs if m.role == "system"])
        self._dropped([Drop(m.id, m.role, pos, "clear", "the user cleared the conversation") for m in gone])

    def snapshot(self, pos: int, calls: Sequence[Call]) -> None:
        """Each of ``calls`` sends what the memory holds after ``pos`` adds.

        Keeps: a call's ``dropped`` are exactly the drops since the call before it.
        """
        for c in calls:
            self.out.append(self.snap.take(c, pos, self.memory, self._pending))
            self._pending = []

    def add(self, pos: int, m: Msg) -> None:
        """Add the stream's message at ``pos`` and let the policy trim, as ``ShortTermMemory.add`` does.

        Keeps: the memory is what the policy keeps after every add; each removal
        is a ``Drop`` after ``pos + 1`` adds, with the policy's reason.
        """
        trim = self.memory.add(m)
        if trim is not None:
            removed, reason = trim
            self._dropped([Drop(r.id, r.role, pos + 1, self.policy_name, reason) for r in removed])

    def _dropped(self, new: list[Drop]) -> None:
        self.drops += new
        self._pending += new


def lint_replayed(out: Sequence[ReplayedCall], trace: Trace, profile: str) -> None:
    """Give every replayed call the linter's findings on its own payload (for ``profile``).

    Keeps: a trace recorded without tool definitions is not blamed for missing ones.
    """
    check_tools = trace.meta.get("tools_recorded", True) is not False
    found = lint_payloads([(r.call, r.payload) for r in out], profile, check_tools, trace)
    for r in out:
        r.findings = found.get(r.call, [])


class _Snapshots:
    """Builds each call's ``ReplayedCall`` from the memory at its position."""

    def __init__(self, counts: Counts, recorded: dict[int, Recorded], pricing: Pricing | None) -> None:
        self._counts = counts
        self._recorded = recorded
        self._pricing = pricing
        self._facts: dict[str | None, ModelFacts | None] = {}
        self._last: tuple[Call, int, int, bool] | None = None
        """The call before: (call, memory version, payload length, same)."""
        self._seq = 0

    def take(self, c: Call, pos: int, memory: Memory, pending: list[Drop]) -> ReplayedCall:
        rec = self._recorded[id(c)]
        model, tools = rec.model, rec.tools
        mt = self._counts.for_model(model)
        messages, ids = memory.dicts, memory.ids     # read here, then shared through ``payload``: never changed
        payload = memory.payload(tools)
        tokens = memory.tokens_for(mt) + rec.tool_tokens + REPLY_PRIMING
        recorded_ids = None
        last = self._last
        if rec.length != len(payload):
            same = False
        elif isinstance(payload, EditedPayload) and payload.last_edit is not None:
            same, recorded_ids = _same_edited(payload, c)
        elif (last is not None and rec.after is last[0] and last[3] and last[1] == memory.version
              and len(rec.tail) == len(ids) - last[2]):
            # The call before was the same and both payloads only grew since: compare what they added.
            # (Read from a file, a payload's bodies are its ids' own, so equal bodies is what equal ids
            # would say, and the body comparison below is the rule where they are not.) Keep-all of a
            # full-history log stays O(new messages) per call instead of building both id lists.
            k = last[2]
            same = all(map(_same_body, messages[k:], rec.tail))
            if same:
                recorded_ids = payload
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
                    recorded_ids = payload
        self._last = (c, memory.version, len(ids), same)
        seq = self._seq = self._seq + 1
        facts = self._priced_as(model)
        recorded_tokens = rec.tokens + rec.tool_tokens + REPLY_PRIMING
        return ReplayedCall(call=c.index, position=pos, payload=payload, tools=tools, model=model,
                            tokens=tokens, recorded_tokens=recorded_tokens,
                            reported_prompt_tokens=rec.reported_prompt_tokens, dropped=list(pending), findings=[],
                            same=same, cost_usd=None if facts is None else facts.cost(tokens),
                            recorded_cost_usd=None if facts is None else facts.cost(recorded_tokens),
                            _call=c, _recorded_ids=recorded_ids, _seq=seq, _changes=memory.changes())

    def _priced_as(self, model: str | None) -> ModelFacts | None:
        """The catalogue row a call of ``model`` is priced at: the chosen pricing's, else its own (None: no price)."""
        if self._pricing is not None:
            return self._pricing.facts
        if model not in self._facts:
            found = lookup(model)
            self._facts[model] = found if found is not None and found.priced else None   # never a silent $0
        return self._facts[model]


def _same_edited(payload: EditedPayload, c: Call) -> tuple[bool, EditedPayload | None]:
    """``same`` for a payload with edited messages (of the recorded call's length): the newest edited message
    is compared first (a placeholder is not what was sent: O(messages after it)), the whole payload only when
    that one is equal."""
    at, mine = payload.last_edit
    recorded_tail = c.payload.messages(at) if c.payload is not None else c.messages[at:]
    if not recorded_tail or not _same_body(mine, recorded_tail[0]):
        return False, None
    same = all(map(_same_body, payload.messages(), c.messages))
    return same, payload if same else None


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


