"""Lineage from plain payload logs: message identity, drops, edits and conversations
inferred from nothing but the request bodies an app sent (and, optionally, the replies).

A recorded Chain Studio trace knows every memory add and trim. A payload log
(a JSONL of request bodies, or the recording proxy) only knows what went over
the wire, so this module infers the rest:

- **Identity.** A payload message is the *same message* as one seen before when
  its body is identical (``msg.message_key``), else when it is equal after
  normalization (key order, whitespace, ``None`` vs missing, ``""`` vs ``None``
  content, a single text part vs a string, tool-call arguments as canonical
  JSON). The previous payload of the conversation is aligned with the new one
  first (order-preserving), so repeated bodies ("ok", "ok") keep their own ids.
- **The stream** is every distinct message in order of first appearance. The
  model's reply to a call (when responses are given) joins the stream at the
  next call of its conversation: as the body the app sent back when the next
  payload carries it (matched loosely: role, text, tool calls), else as the
  response's message, marked dropped. The last reply joins at the end.
- **Drops.** A message in the previous payload of the conversation (or an
  unreturned reply) that is absent from this payload was dropped; it becomes a
  ``trim`` event of policy ``inferred`` before the call.
- **Edits.** A payload message that is an earlier message *changed* gets a new
  version (stored like a policy-made message) and a ``trim`` event of policy
  ``inferred-edit`` that removes the original and adds the version. Kinds:
  ``reformatted`` (normalized-equal, bytes differ), ``rewritten`` (same slot
  between the same aligned neighbours, same role, and the same tool-call ids, or
  for text: similar text (ratio >= 0.6 or one contains the other), or the only
  same-role message of an interior gap), ``restored`` (a dropped message that
  came back before the tail). So every call's ``message_ids`` resolve to a
  message whose body is exactly the payload message, in memory and after a
  write/read round trip of the trace file.
- **Conversations.** A label (the proxy's ``X-Chain-Studio-Session`` header)
  decides when given. Otherwise a request continues a conversation only if it
  extends that conversation's last payload: it holds the last message (or sends
  back the pending reply) and adds more, after any drops and one-for-one edits
  (``_Candidate``). A payload equal to a conversation's opening messages starts
  a new one. Among several it extends, the one it keeps most messages of wins
  (system prompts count); a tie between conversations whose histories differ is
  filed under the first and becomes an ``ambiguous: ...`` warning naming them
  (recency decides only between identical histories). Each call's ``reason``
  says why it went where it went.
- **Retries.** A body identical to the previous call of its conversation, when
  that call failed (or the caller says it is a retry), is another attempt of it.

The identity keys live in ``message_keys.py``; the passes that align one
payload with its conversation's previous payload (exact, moved, reformatted,
the returned reply, restored, rewritten, then drops and new messages) in
``alignment.py``; the conversation choice and retries here.

Nothing here raises on odd input: bodies that are not objects, ``messages``
that is not a list, entries that are not objects all become warnings.
"""
from __future__ import annotations

import bisect
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Iterable, Sequence

from agent_core.apis.base import api_for_body
from agent_core.core.limits import check_body
from agent_core.core.msg import Msg, parse_timestamp, utc_now
from agent_core.trace.events import CallAttempt, MemoryEvent
from agent_core.trace.model import Call, StreamEvent, Trace

from .alignment import Alignment, CallLineage, Conversation
from .message_keys import (
    MAX_DEPTH,
    REPLY_ROLES,
    Norms,
    exact_key,
    loose_key,
    norm_key,
    rewritten_slot,
    safe_dumps,
    too_deep,
)

# --- results --------------------------------------------------------------

@dataclass
class PayloadLineage:
    """Everything inferred from a sequence of request bodies."""

    stream: list[Msg] = field(default_factory=list)
    """Every distinct message in order of first appearance (all conversations, interleaved)."""
    versions: dict[str, Msg] = field(default_factory=dict)
    """Edited / restored versions by id."""
    events: list[StreamEvent] = field(default_factory=list)
    """The inferred drops and edits, placed in the stream."""
    calls: list[CallLineage] = field(default_factory=list)
    """One per input body, in input order."""
    conversations: list[list[int]] = field(default_factory=list)
    """Input indices per conversation, conversations in order of their first request."""
    labels: list[str | None] = field(default_factory=list)
    """The session label of each conversation (None when detected by continuity)."""
    warnings: list[str] = field(default_factory=list)


@dataclass
class LineageStep:
    """One observed request: the lineage, and the trace operations it implies, in order."""

    lineage: CallLineage
    ops: list[tuple] = field(default_factory=list)
    """``("add", msg)``, ``("version", msg, policy)``, ``("event", MemoryEvent)``, in writing order."""


# --- conversation identity ------------------------------------------------------

@dataclass
class _Candidate:
    """How a request relates to one conversation's last payload (``LineageBuilder._choose``).

    A request *extends* a conversation (tier 1) when it holds the last payload's
    last message, no later than that message stood (so nothing was inserted
    before it; messages may have been dropped or replaced one for one, the trims
    and edits the alignment then infers) and followed by more, or when it sends
    back the conversation's pending reply where that reply would follow. It
    extends it with its last message edited (tier 2) when it is longer than the
    last payload, the message in the last one's slot rewrites it (same role, the
    same tool-call id or similar text) and at least one other message is kept.
    A payload equal to a conversation's opening messages extends nothing.
    """

    conv: Conversation
    """The conversation."""
    tier: int
    """1: extends the last payload; 2: extends it with its last message edited."""
    kept: int
    """Messages of the last payload this request holds, in order (exact or normalized), system prompts included."""
    replied: bool
    """It sends back the conversation's pending reply."""

    @property
    def score(self) -> int:
        return self.kept + self.replied

    def reason(self) -> str:
        what = "last payload" if self.tier == 1 else "last payload, its last message edited"
        reply = ", its reply sent back" if self.replied else ""
        return (f"extends conversation {self.conv.index + 1}'s {what} "
                f"({self.kept} of {len(self.conv.live)} messages kept{reply})")

    @classmethod
    def of(cls, conv: Conversation, messages: list, eks: list[str], norms: Norms) -> _Candidate | None:
        """The candidate, or None when the request does not extend this conversation."""
        live, n = conv.live, len(messages)
        m = len(live)
        exact_at: dict[str, list[int]] = {}
        for j, ek in enumerate(eks):
            exact_at.setdefault(ek, []).append(j)
        norm_at: dict[str, list[int]] | None = None

        def positions(i: str) -> list[int]:
            nonlocal norm_at
            found = exact_at.get(conv.exact_of[i])
            if found:
                return found
            if norm_at is None:     # only when some message changed: normalizing costs a serialization
                norm_at = {}
                for jj, msg in enumerate(messages):
                    if isinstance(msg, dict):
                        norm_at.setdefault(norms[jj], []).append(jj)
            return norm_at.get(conv.norm_of[i], [])

        # The tail anchor is found on its own: what follows it may repeat earlier messages (a question asked
        # again), which must not hide the anchor from an in-order match.
        tail = max((j for j in positions(live[-1]) if j <= m - 1), default=None) if live else None
        pos, kept = -1, 0
        for i in live[:-1] if tail is not None else live:
            j = _first_after(positions(i), pos)
            if j is not None and (tail is None or j < tail):
                pos, kept = j, kept + 1
        if tail is not None:
            kept += 1
        replied = False
        if conv.pending_loose is not None:
            start = tail + 1 if tail is not None else 0
            replied = any(isinstance(messages[j], dict) and messages[j].get("role") in REPLY_ROLES
                          and loose_key(messages[j]) == conv.pending_loose for j in range(start, min(n, m + 1)))
        if (tail is not None and tail <= m - 1 and tail < n - 1) or replied:
            return cls(conv, 1, kept, replied)
        if tail is None and n > m >= 1 and (kept >= 1 or m == 1) and isinstance(messages[m - 1], dict) and \
                rewritten_slot(messages[m - 1], [(0, conv.bodies[live[-1]].to_openai())], interior=False) == 0:
            return cls(conv, 2, kept, False)
        return None


def _first_after(positions: list[int] | None, pos: int) -> int | None:
    if not positions:
        return None
    k = bisect.bisect_right(positions, pos)
    return positions[k] if k < len(positions) else None


# --- the incremental builder ------------------------------------------------

class LineageBuilder:
    """Feeds requests one at a time (the proxy) or all at once (``infer_lineage``).

    Cost is linear in the payload bytes: each message is serialized once per
    payload; a payload that extends the previous one is aligned without diffing.
    """

    def __init__(self) -> None:
        self.result = PayloadLineage()
        self._convs: list[Conversation] = []
        self._exact_index: dict[str, set[int]] = {}     # body key -> conversations holding it
        self._norm_index: dict[str, set[int]] = {}
        self._by_label: dict[str, Conversation] = {}
        # "e"/"n" + exact/normalized key of a conversation's last live message, "r" + loose key of its pending
        # reply -> those conversations: the only ones a request can extend without an edited tail
        self._tails: dict[str, set[int]] = {}
        self._tail_keys: dict[int, tuple[str, ...]] = {}
        self._seq = 0
        self._logical = 0       # calls so far, retries not counted (a trace's Call.index)

    # conversation choice ------------------------------------------------
    def _choose(self, session: str | None, messages: list, eks: list[str], norms: Norms,
                body_key: Any, retry: bool) -> tuple[Conversation, str]:
        """The conversation this request belongs to, and why (see ``_Candidate`` for the rules)."""
        if session is not None:
            conv = self._by_label.get(session)
            if conv is None:
                conv = self._new_conv(session)
                self._by_label[session] = conv
            return conv, "session header"
        open_convs = [c for c in self._convs if c.label is None]
        if eks:
            again = [c for c in open_convs if (c.last_failed or retry) and c.calls and c.last_body == body_key]
            if again:   # identical payloads: recency may decide between them
                conv = max(again, key=lambda c: c.last_seq)
                return conv, f"retry of conversation {conv.index + 1}'s last call (identical body)"
        cands = self._candidates(self._at_tail(messages, eks, norms), messages, eks, norms)
        if not cands:       # an edited last message: a shorter conversation holding one of these messages
            shorter = {i for i in self._related(messages, eks, norms) if 0 < len(self._convs[i].live) < len(eks)}
            cands = self._candidates(shorter, messages, eks, norms)
        if not cands:
            why = self._why_new(open_convs, eks)
            return self._new_conv(None), why
        tier = min(c.tier for c in cands)
        top = [c for c in cands if c.tier == tier]
        score = max(c.score for c in top)
        top = [c for c in top if c.score == score]
        distinct = {tuple(c.conv.exact_of[i] for i in c.conv.live) for c in top}
        if len(distinct) == 1:      # identical histories: the content is right in any of them, take the latest
            best = max(top, key=lambda c: c.conv.last_seq)
            if len(top) > 1:        # but which run it continues is a guess: say so
                names = " and ".join(f"conversation {c.conv.index + 1}" for c in sorted(top, key=lambda c: c.conv.index))
                self.result.warnings.append(f"ambiguous: request {len(self.result.calls)} extends {names}, whose "
                                            f"histories are identical; filed under the latest, conversation "
                                            f"{best.conv.index + 1}")
            return best.conv, best.reason()
        top.sort(key=lambda c: c.conv.index)
        best = top[0]
        names = " and ".join(f"conversation {c.conv.index + 1}" for c in top)
        note = (f"ambiguous: request {len(self.result.calls)} extends {names} equally "
                f"({best.kept} of {len(best.conv.live)} messages kept); filed under conversation {best.conv.index + 1}")
        self.result.warnings.append(note)
        return best.conv, note

    def _candidates(self, convs: set[int], messages: list, eks: list[str], norms: Norms) -> list[_Candidate]:
        found = (_Candidate.of(self._convs[i], messages, eks, norms) for i in sorted(convs)
                 if self._convs[i].label is None)
        return [c for c in found if c is not None]

    def _at_tail(self, messages: list, eks: list[str], norms: Norms) -> set[int]:
        """Conversations whose last message this payload holds no later than it stood, followed by more,
        or whose pending reply it holds where the reply would follow (``_Candidate``'s tier 1, cheaply)."""
        found: set[int] = set()
        last = len(messages) - 1
        for j, (m, ek) in enumerate(zip(messages, eks)):
            held = set(self._tails.get("e" + ek, ()))
            if isinstance(m, dict):
                if ek not in self._exact_index:     # normalized only when the exact body is new
                    held |= self._tails.get("n" + norms[j], set())
                if j < last:
                    found |= {c for c in held if len(self._convs[c].live) > j}
                if m.get("role") in REPLY_ROLES:
                    found |= {c for c in self._tails.get("r" + loose_key(m), ()) if len(self._convs[c].live) >= j}
        return found

    def _related(self, messages: list, eks: list[str], norms: Norms) -> set[int]:
        """Conversations holding one of these messages."""
        found: set[int] = set()
        for j, (m, ek) in enumerate(zip(messages, eks)):
            holders = self._exact_index.get(ek)
            if holders is None and isinstance(m, dict):
                holders = self._norm_index.get(norms[j])
            found |= holders or set()
        return found

    def _retail(self, conv: Conversation) -> None:
        """Re-index the conversation's last message and pending reply after they changed."""
        for key in self._tail_keys.get(conv.index, ()):
            self._tails[key].discard(conv.index)
        keys = []
        if conv.live:
            last = conv.live[-1]
            keys += ["e" + conv.exact_of[last], "n" + conv.norm_of[last]]
        if conv.pending_loose is not None:
            keys.append("r" + conv.pending_loose)
        for key in keys:
            self._tails.setdefault(key, set()).add(conv.index)
        self._tail_keys[conv.index] = tuple(keys)

    def _why_new(self, open_convs: list[Conversation], eks: list[str]) -> str:
        if not eks:
            return "new: no messages to match"
        for conv in open_convs:
            prefix = [conv.exact_of[i] for i in conv.live[:len(eks)]]
            if prefix == eks:
                return (f"new: opening matches conversation {conv.index + 1} but lacks its later messages "
                        f"({len(eks)} of {len(conv.live)})")
        if open_convs:
            return "new: extends no conversation's last payload"
        return "new: no conversation without a session label yet" if self._convs else "new: first request"

    def _new_conv(self, label: str | None) -> Conversation:
        conv = Conversation(index=len(self._convs), label=label)
        self._convs.append(conv)
        self.result.conversations.append(conv.calls)
        self.result.labels.append(label)
        return conv

    # helpers --------------------------------------------------------------
    def _register(self, conv: Conversation, msg: Msg, body: dict) -> None:
        conv.bodies[msg.id] = msg
        ek, nk = exact_key(body), norm_key(body)
        conv.exact_of[msg.id], conv.norm_of[msg.id] = ek, nk
        conv.exact.setdefault(ek, []).append(msg.id)
        conv.norm.setdefault(nk, []).append(msg.id)
        self._exact_index.setdefault(ek, set()).add(conv.index)
        self._norm_index.setdefault(nk, set()).add(conv.index)

    def _add_stream(self, conv: Conversation, body: dict, ts: datetime, ops: list) -> Msg:
        msg = conv.tracker.link(Msg.from_openai(body, timestamp=ts))
        self.result.stream.append(msg)
        self._register(conv, msg, body)
        ops.append(("add", msg))
        return msg

    def _add_version(self, conv: Conversation, body: dict, original: Msg, ts: datetime) -> Msg:
        msg = Msg.from_openai(body, timestamp=ts, parent_id=original.parent_id)
        self.result.versions[msg.id] = msg
        self._register(conv, msg, body)
        return msg

    # the main step ----------------------------------------------------------
    def observe(self, body: Any, response: Any = None, *, status: int | None = None, error: str | None = None,
                session: str | None = None, retry: bool = False, started_at: str | None = None) -> LineageStep:
        """Place one request (and its outcome) in its conversation.

        Args:
            body: the request body as parsed JSON (anything; odd shapes become warnings).
            response: the response body, if known; its first choice's message is the pending reply.
            status / error: the outcome, used to tell retries from new calls.
            session: a conversation label; None detects the conversation by continuity.
            retry: the caller knows this is a retry (the SDK's retry-count header).
            started_at: ISO time of the request, used as the timestamp of new messages.
        """
        index = len(self.result.calls)
        self._seq += 1
        warn = self.result.warnings.append
        api = api_for_body(body)
        key = api.turns_key or "messages"     # the wire API's turns: messages, Gemini's contents
        messages = body.get(key) if isinstance(body, dict) else None
        if not isinstance(body, dict):
            warn(f"request {index}: the body is {type(body).__name__}, not a JSON object; no messages taken from it")
        elif key in body and not isinstance(messages, list):
            warn(f"request {index}: \"{key}\" is {type(messages).__name__}, not a list; no messages taken from it")
        elif messages is None:
            warn(f"request {index}: the body has no \"messages\"")
        if not isinstance(messages, list):
            messages = []
        eks = [exact_key(m) for m in messages]
        norms = Norms(messages)
        deep: set[int] = set()
        for pos, (m, ek) in enumerate(zip(messages, eks)):
            if not isinstance(m, dict):
                warn(f"request {index}: messages[{pos}] is {type(m).__name__}, not an object; it has no id")
            elif not m:
                warn(f"request {index}: messages[{pos}] is an empty object; it has no id")
            elif ek not in self._exact_index and too_deep(m):
                deep.add(pos)
                warn(f"request {index}: messages[{pos}] is nested more than {MAX_DEPTH} levels deep; it has no id")
        if deep:
            messages = [None if j in deep else m for j, m in enumerate(messages)]
            eks = [f"<too deep:{index}:{j}>" if j in deep else ek for j, ek in enumerate(eks)]
            norms = Norms(messages)
        body_key = (tuple(eks), safe_dumps({k: v for k, v in body.items() if k != key})
                    if isinstance(body, dict) else safe_dumps(body))
        conv, reason = self._choose(session, messages, eks, norms, body_key, retry)
        conv.last_seq = self._seq
        failed = bool(error) or (status is not None and status >= 400) or \
            (isinstance(response, dict) and "error" in response)
        if conv.calls and body_key == conv.last_body and (conv.last_failed or retry):
            first = conv.calls[-1]
            prior = self.result.calls[first]
            while prior.retry_of is not None:
                prior = self.result.calls[prior.retry_of]
            lin = replace(prior, call=index, retry_of=prior.call, new=[], dropped=[], edits=[],
                          message_ids=list(prior.message_ids), matches=list(prior.matches), reason=reason)
            self.result.calls.append(lin)
            conv.calls.append(index)
            conv.last_failed = failed
            self._set_pending(conv, response, api)
            self._retail(conv)
            return LineageStep(lin)
        ts = _timestamp(started_at)
        ops: list[tuple] = []
        lin = Alignment(self, index, conv, messages, eks, norms, ts, ops).run()
        lin.reason = reason
        lin.stream_index = len(self.result.stream)
        self._logical += 1
        self.result.calls.append(lin)
        conv.calls.append(index)
        conv.last_body = body_key
        conv.last_failed = failed
        self._set_pending(conv, response, api)
        self._retail(conv)
        return LineageStep(lin, ops)

    def _set_pending(self, conv: Conversation, response: Any, api: Any) -> None:
        reply = api.reply(response) if response is not None else None     # the wire API's reply turn
        if isinstance(reply, dict) and too_deep(reply):
            self.result.warnings.append("a reply nested more than "
                                        f"{MAX_DEPTH} levels deep was left out of the stream")
            reply = None
        if isinstance(reply, dict):
            conv.pending, conv.pending_loose = reply, loose_key(reply)
        elif response is not None:
            conv.pending, conv.pending_loose = None, None

    def _event(self, event: MemoryEvent, ops: list) -> None:
        ops.append(("event", event))
        self.result.events.append(StreamEvent(after_add=len(self.result.stream), event=event,
                                              calls_before=self._logical))

    def finish(self) -> list[tuple[int, tuple]]:
        """Add each conversation's last reply to the stream; returns ``(conversation, op)`` pairs."""
        out = []
        for conv in self._convs:
            if conv.pending is not None:
                ops: list[tuple] = []
                self._add_stream(conv, conv.pending, utc_now(), ops)
                conv.live.append(ops[0][1].id)
                conv.pending, conv.pending_loose = None, None
                out.extend((conv.index, op) for op in ops)
        return out


def _timestamp(started_at: str | None) -> datetime:
    if isinstance(started_at, str):
        try:
            return parse_timestamp(started_at)
        except ValueError:
            pass
    return utc_now()


# --- whole-sequence API -------------------------------------------------------

def _aligned(values: Sequence[Any] | None, n: int) -> list[Any]:
    values = list(values) if values is not None else []
    return values[:n] + [None] * (n - len(values[:n]))


def infer_lineage(bodies: Iterable[Any], responses: Sequence[Any] | None = None, *,
                  statuses: Sequence[int | None] | None = None, sessions: Sequence[str | None] | None = None,
                  started_at: Sequence[str | None] | None = None) -> PayloadLineage:
    """Run the builder over a whole sequence (see the module docstring for the rules).

    Args:
        bodies: request bodies (any JSON values).
        responses: response bodies aligned with ``bodies`` (None where unknown).
        statuses: HTTP statuses, used to tell retries from new calls.
        sessions: conversation labels; None entries are grouped by continuity.
        started_at: ISO times of the requests (timestamps of the messages they introduce).
    """
    bodies = list(bodies)
    n = len(bodies)
    responses_, statuses_, sessions_ = _aligned(responses, n), _aligned(statuses, n), _aligned(sessions, n)
    times = _aligned(started_at, n)
    builder = LineageBuilder()
    for body, response, status, session, ts in zip(bodies, responses_, statuses_, sessions_, times):
        builder.observe(body, response, status=status, session=session, started_at=ts)
    builder.finish()
    return builder.result


def split_conversations(bodies: Iterable[Any]) -> list[list[int]]:
    """Input indices of each conversation found by continuity, in order of first request."""
    return infer_lineage(bodies).conversations


def trace_from_requests(bodies: Iterable[Any], responses: Sequence[Any] | None = None, *,
                        statuses: Sequence[int | None] | None = None,
                        sessions: Sequence[str | None] | None = None,
                        started_at: Sequence[str | None] | None = None,
                        latency_ms: Sequence[float | None] | None = None,
                        source: str = "<payloads>", format: str = "request-jsonl") -> Trace:
    """A ``Trace`` from request bodies: the stream, inferred drops/edits, ids on every call.

    Retries (an identical body after a failed call) become attempts of one call.
    ``started_at`` / ``latency_ms`` (aligned with ``bodies``, from a log or spans)
    are kept on the calls.
    Several conversations share one trace (their streams interleaved); the call
    indices of each are in ``meta["conversation_calls"]`` (they may interleave, so
    this is not the importers' contiguous ``meta["conversations"]`` ranges) and a
    warning says so. Use ``traces_from_requests`` for one trace per conversation.
    """
    bodies = _checked_bodies(bodies, source)
    n = len(bodies)
    responses_, statuses_ = _aligned(responses, n), _aligned(statuses, n)
    times, latencies = _aligned(started_at, n), _aligned(latency_ms, n)
    lineage = infer_lineage(bodies, responses_, statuses=statuses_, sessions=sessions, started_at=times)
    trace = Trace(source=source, format=format, stream=list(lineage.stream), events=list(lineage.events),
                  warnings=list(lineage.warnings), policy_messages=dict(lineage.versions))
    by_input: dict[int, Call] = {}
    for lin, body, response, status, ts, ms in zip(lineage.calls, bodies, responses_, statuses_, times, latencies):
        response = response if isinstance(response, dict) else None
        error = _error_text(response) if (status or 0) >= 400 or (response and "error" in response) else None
        request = body if isinstance(body, dict) else {}
        if lin.retry_of is not None and lin.retry_of in by_input:
            call = by_input[lin.retry_of]
            attempt = len(call.attempts) + 1
        else:
            call = Call(index=len(trace.calls), request=request, stream_index=lin.stream_index,
                        message_ids=list(lin.message_ids), stream=bool(request.get("stream")))
            trace.calls.append(call)
            attempt = 1
        by_input[lin.call] = call
        call.request, call.response, call.status, call.error = request, response, status, error
        call.started_at = ts if isinstance(ts, str) else None
        call.latency_ms = ms if isinstance(ms, (int, float)) else None
        call.attempts.append(CallAttempt(call=call.index, attempt=attempt, method="POST", url="",
                                         request_body=body, status=status, response_body=response, error=error,
                                         stream=call.stream, message_ids=list(lin.message_ids),
                                         started_at=call.started_at, latency_ms=call.latency_ms))
    trace.meta["conversation_calls"] = [sorted({by_input[i].index for i in conv}) for conv in lineage.conversations]
    trace.meta["lineage"] = {
        "messages": len(lineage.stream), "conversations": len(lineage.conversations),
        "dropped": sum(len(c.dropped) for c in lineage.calls), "edited": sum(len(c.edits) for c in lineage.calls),
        "retries": sum(1 for c in lineage.calls if c.retry_of is not None),
    }
    if len(lineage.conversations) > 1:
        trace.warnings.append(f"the requests form {len(lineage.conversations)} conversations (by continuity); "
                              "their messages share one stream here")
    return trace


def traces_from_requests(bodies: Iterable[Any], responses: Sequence[Any] | None = None, *,
                         statuses: Sequence[int | None] | None = None, source: str = "<payloads>",
                         format: str = "request-jsonl") -> list[Trace]:
    """One ``Trace`` per conversation (continuity), each with its own stream."""
    bodies = _checked_bodies(bodies, source)
    n = len(bodies)
    responses_, statuses_ = _aligned(responses, n), _aligned(statuses, n)
    out = []
    split = infer_lineage(bodies)
    for number, conv in enumerate(split.conversations):
        trace = trace_from_requests([bodies[i] for i in conv], [responses_[i] for i in conv],
                                    statuses=[statuses_[i] for i in conv], sessions=["c"] * len(conv),
                                    source=f"{source}#conversation-{number + 1}", format=format)
        trace.meta["requests"] = conv
        # an ambiguous choice of conversation stays with the trace it filed the request under
        trace.warnings += [w for w in split.warnings if w.startswith("ambiguous: request ")
                           and int(w.split()[2]) in conv]
        out.append(trace)
    return out


def _checked_bodies(bodies: Iterable[Any], source: str) -> list[Any]:
    """The bodies as a list, refusing one with more turns (messages, contents, input items) than any provider
    accepts before anything is built from it."""
    bodies = list(bodies)
    for i, body in enumerate(bodies):
        check_body(body, source, f"request {i}")
    return bodies


def _error_text(response: dict | None) -> str:
    if isinstance(response, dict):
        err = response.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if err is not None:
            return safe_dumps(err)
    return "the call failed"
