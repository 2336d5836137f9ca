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
  decides when given. Otherwise a request continues the conversation that
  shares the most non-system messages with it (or holds its pending reply);
  ties go to the most recently active one; no shared message starts a new one.
- **Retries.** A body identical to the previous call of its conversation, when
  that call failed (or the caller says it is a retry), is another attempt of it.

Nothing here raises on odd input: bodies that are not objects, ``messages``
that is not a list, entries that are not objects all become warnings.
"""
from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Iterable, Sequence

from agent_core.core.msg import Msg, content_text, parse_timestamp, utc_now
from agent_core.core.parents import LineageTracker
from agent_core.trace.events import CallAttempt, MemoryEvent
from agent_core.trace.model import Call, StreamEvent, Trace

DROP_POLICY = "inferred"
EDIT_POLICY = "inferred-edit"
_SIMILAR = 0.6
_SIMILARITY_CHARS = 4000


# --- keys -----------------------------------------------------------------

# One encoder, called directly: the same text as ``msg.message_key`` without json.dumps' per-call setup.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _safe_dumps(value: Any) -> str:
    try:
        return _ENCODER.encode(value)
    except (TypeError, ValueError, RecursionError):
        return f"<unserializable:{id(value)}>"


def _exact_key(message: Any) -> str:
    """``msg.message_key`` (the same text), never raising."""
    return _safe_dumps(message)


_MAX_DEPTH = 64


def _too_deep(value: Any, limit: int = _MAX_DEPTH) -> bool:
    """Nested deeper than any real message (checked without recursion, so it cannot overflow)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item if isinstance(v, (dict, list)))
    return False


def _norm_text(text: str) -> str:
    return " ".join(text.split())


def _canonical_args(args: Any) -> Any:
    if isinstance(args, str):
        try:
            return _normalize(json.loads(args))
        except (ValueError, RecursionError):
            return _norm_text(args)
    return _normalize(args)


def _normalize(value: Any, depth: int = 0) -> Any:
    """Whitespace, key order and None-vs-missing no longer matter."""
    if depth > 200:
        return _safe_dumps(value)
    if isinstance(value, str):
        return _norm_text(value)
    if isinstance(value, list):
        return [_normalize(v, depth + 1) for v in value]
    if isinstance(value, dict):
        out = {}
        for k in sorted(value, key=str):
            v = value[k]
            if v is None or (k in ("tool_calls", "annotations") and v == []):
                continue
            if k == "arguments":
                out[str(k)] = _canonical_args(v)
            else:
                out[str(k)] = _normalize(v, depth + 1)
        return out
    return value


def _norm_message(message: Any) -> Any:
    if not isinstance(message, dict):
        return _normalize(message)
    m = dict(message)
    content = m.get("content")
    if content == "":
        m["content"] = None
    elif isinstance(content, list) and len(content) == 1 and isinstance(content[0], dict) \
            and content[0].get("type") == "text" and isinstance(content[0].get("text"), str):
        m["content"] = content[0]["text"]
    return _normalize(m)


def _norm_key(message: Any) -> str:
    return _safe_dumps(_norm_message(message))


def _loose_key(message: Any) -> str:
    """Role, text and tool calls only: a response's message vs the copy an app sends back."""
    if not isinstance(message, dict):
        return _norm_key(message)
    core: dict[str, Any] = {"role": message.get("role"), "content": _norm_text(content_text(message.get("content")))}
    calls = message.get("tool_calls")
    if isinstance(calls, list) and calls:
        core["tool_calls"] = [
            [c.get("id"), (c.get("function") or {}).get("name"), _canonical_args((c.get("function") or {}).get("arguments"))]
            if isinstance(c, dict) and isinstance(c.get("function") or {}, dict) else _normalize(c) for c in calls]
    fc = message.get("function_call")
    if isinstance(fc, dict):
        core["function_call"] = [fc.get("name"), _canonical_args(fc.get("arguments"))]
    return _safe_dumps(core)


def _tool_ids(message: dict) -> tuple:
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        return tuple(c.get("id") for c in calls if isinstance(c, dict))
    return ()


# --- results --------------------------------------------------------------

@dataclass
class Edit:
    """A payload message that is an earlier message, changed."""

    call: int
    """Index of the call (in the input sequence) whose payload holds the changed message."""
    position: int
    """Its position in that payload's ``messages``."""
    original: str
    """Stream id of the message it changes."""
    version: str
    """Id of the new version (kept in ``Trace.policy_messages``)."""
    kind: str
    """``reformatted`` (equal after normalization), ``rewritten`` (content changed) or ``restored``."""


@dataclass
class CallLineage:
    """What one request did to the conversation it belongs to."""

    call: int
    """Index in the input sequence."""
    conversation: int
    """Index into ``PayloadLineage.conversations``."""
    message_ids: list[str | None] = field(default_factory=list)
    """Id of each payload message (stream or version id; None for entries that are not objects)."""
    matches: list[str] = field(default_factory=list)
    """Per payload message: exact | moved | reply | new | reformatted | rewritten | restored | invalid."""
    new: list[str] = field(default_factory=list)
    """Stream ids first seen in this payload (including the reply the app sent back)."""
    dropped: list[str] = field(default_factory=list)
    """Ids in the conversation's previous payload (or its unreturned reply) that this payload lacks."""
    edits: list[Edit] = field(default_factory=list)
    stream_index: int = 0
    """Stream messages added before this call (across all conversations)."""
    retry_of: int | None = None
    """For a retry: the input index of the first attempt (lineage fields then copy that call's)."""


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


# --- the incremental builder ------------------------------------------------

@dataclass
class _Conv:
    index: int
    label: str | None
    calls: list[int] = field(default_factory=list)
    live: list[str] = field(default_factory=list)
    bodies: dict[str, Msg] = field(default_factory=dict)
    exact: dict[str, list[str]] = field(default_factory=dict)
    norm: dict[str, list[str]] = field(default_factory=dict)
    exact_of: dict[str, str] = field(default_factory=dict)
    norm_of: dict[str, str] = field(default_factory=dict)
    pending: Msg | None = None
    pending_loose: str | None = None
    last_body: Any = None
    last_failed: bool = False
    last_seq: int = 0
    tracker: LineageTracker = field(default_factory=LineageTracker)


class _Norms:
    """Normalized keys of a payload's messages, computed only for the ones that need them."""

    def __init__(self, messages: list) -> None:
        self._messages = messages
        self._keys: dict[int, str] = {}

    def __getitem__(self, j: int) -> str:
        key = self._keys.get(j)
        if key is None:
            key = self._keys[j] = _norm_key(self._messages[j])
        return key


class LineageBuilder:
    """Feeds requests one at a time (the proxy) or all at once (``infer_lineage``).

    Cost is linear in the payload bytes: each message is serialized once per
    payload; a payload that extends the previous one is aligned without diffing.
    """

    def __init__(self) -> None:
        self.result = PayloadLineage()
        self._convs: list[_Conv] = []
        self._exact_index: dict[str, set[int]] = {}     # body key -> conversations holding it
        self._norm_index: dict[str, set[int]] = {}
        self._by_label: dict[str, _Conv] = {}
        self._seq = 0
        self._logical = 0       # calls so far, retries not counted (a trace's Call.index)

    # conversation choice ------------------------------------------------
    def _choose(self, session: str | None, messages: list, eks: list[str], norms: _Norms) -> _Conv:
        if session is not None:
            conv = self._by_label.get(session)
            if conv is None:
                conv = self._new_conv(session)
                self._by_label[session] = conv
            return conv
        scores: dict[int, int] = {}
        for j, (m, ek) in enumerate(zip(messages, eks)):
            if isinstance(m, dict) and m.get("role") == "system":
                continue
            holders = self._exact_index.get(ek)
            if holders is None:
                holders = self._norm_index.get(norms[j], ())
            for c in holders:
                scores[c] = scores.get(c, 0) + 1
        loose = None
        for conv in self._convs:
            if conv.label is None and conv.pending_loose is not None:
                if loose is None:   # a reply sent back is not in any stream yet: only unknown bodies qualify
                    loose = {_loose_key(m) for m, ek in zip(messages, eks) if ek not in self._exact_index
                             and isinstance(m, dict) and m.get("role") == "assistant"}
                if conv.pending_loose in loose:
                    scores[conv.index] = scores.get(conv.index, 0) + 1
        best, best_score = None, 0
        for c, score in scores.items():
            conv = self._convs[c]
            if conv.label is not None:
                continue
            if score > best_score or (score == best_score and conv.last_seq > best.last_seq):
                best, best_score = conv, score
        return best if best is not None else self._new_conv(None)

    def _new_conv(self, label: str | None) -> _Conv:
        conv = _Conv(index=len(self._convs), label=label)
        self._convs.append(conv)
        self.result.conversations.append(conv.calls)
        self.result.labels.append(label)
        return conv

    # helpers --------------------------------------------------------------
    def _register(self, conv: _Conv, msg: Msg, body: dict) -> None:
        conv.bodies[msg.id] = msg
        ek, nk = _exact_key(body), _norm_key(body)
        conv.exact_of[msg.id], conv.norm_of[msg.id] = ek, nk
        conv.exact.setdefault(ek, []).append(msg.id)
        conv.norm.setdefault(nk, []).append(msg.id)
        self._exact_index.setdefault(ek, set()).add(conv.index)
        self._norm_index.setdefault(nk, set()).add(conv.index)

    def _add_stream(self, conv: _Conv, body: dict, ts: datetime, ops: list) -> Msg:
        msg = conv.tracker.link(Msg.from_openai(body, timestamp=ts))
        self.result.stream.append(msg)
        self._register(conv, msg, body)
        ops.append(("add", msg))
        return msg

    def _add_version(self, conv: _Conv, body: dict, original: Msg, ts: datetime) -> Msg:
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
        messages = body.get("messages") if isinstance(body, dict) else None
        if not isinstance(body, dict):
            warn(f"request {index}: the body is {type(body).__name__}, not a JSON object; no messages taken from it")
        elif "messages" in body and not isinstance(messages, list):
            warn(f"request {index}: \"messages\" is {type(messages).__name__}, not a list; no messages taken from it")
        elif messages is None:
            warn(f"request {index}: the body has no \"messages\"")
        if not isinstance(messages, list):
            messages = []
        eks = [_exact_key(m) for m in messages]
        norms = _Norms(messages)
        deep: set[int] = set()
        for pos, (m, ek) in enumerate(zip(messages, eks)):
            if not isinstance(m, dict):
                warn(f"request {index}: messages[{pos}] is {type(m).__name__}, not an object; it has no id")
            elif not m:
                warn(f"request {index}: messages[{pos}] is an empty object; it has no id")
            elif ek not in self._exact_index and _too_deep(m):
                deep.add(pos)
                warn(f"request {index}: messages[{pos}] is nested more than {_MAX_DEPTH} levels deep; it has no id")
        if deep:
            messages = [None if j in deep else m for j, m in enumerate(messages)]
            eks = [f"<too deep:{index}:{j}>" if j in deep else ek for j, ek in enumerate(eks)]
            norms = _Norms(messages)
        conv = self._choose(session, messages, eks, norms)
        conv.last_seq = self._seq
        failed = bool(error) or (status is not None and status >= 400) or \
            (isinstance(response, dict) and "error" in response)
        body_key = (tuple(eks), _safe_dumps({k: v for k, v in body.items() if k != "messages"})
                    if isinstance(body, dict) else _safe_dumps(body))
        if conv.calls and body_key == conv.last_body and (conv.last_failed or retry):
            first = conv.calls[-1]
            prior = self.result.calls[first]
            while prior.retry_of is not None:
                prior = self.result.calls[prior.retry_of]
            lin = replace(prior, call=index, retry_of=prior.call, new=[], dropped=[], edits=[],
                          message_ids=list(prior.message_ids), matches=list(prior.matches))
            self.result.calls.append(lin)
            conv.calls.append(index)
            conv.last_failed = failed
            self._set_pending(conv, response)
            return LineageStep(lin)
        ts = _timestamp(started_at)
        ops: list[tuple] = []
        lin = self._align(index, conv, messages, eks, norms, ts, ops)
        lin.stream_index = len(self.result.stream)
        self._logical += 1
        self.result.calls.append(lin)
        conv.calls.append(index)
        conv.last_body = body_key
        conv.last_failed = failed
        self._set_pending(conv, response)
        return LineageStep(lin, ops)

    def _set_pending(self, conv: _Conv, response: Any) -> None:
        reply = None
        try:
            reply = response["choices"][0]["message"]
        except (TypeError, KeyError, IndexError):
            pass
        if isinstance(reply, dict) and _too_deep(reply):
            self.result.warnings.append("a reply nested more than "
                                        f"{_MAX_DEPTH} levels deep was left out of the stream")
            reply = None
        if isinstance(reply, dict):
            conv.pending, conv.pending_loose = reply, _loose_key(reply)
        elif response is not None:
            conv.pending, conv.pending_loose = None, None

    def _align(self, index: int, conv: _Conv, messages: list, eks: list[str], norms: _Norms, ts: datetime,
               ops: list) -> CallLineage:
        prev = conv.live
        prev_exact = [conv.exact_of[i] for i in prev]
        n = len(messages)
        ids: list[str | None] = [None] * n
        kinds: list[str] = ["invalid" if not isinstance(m, dict) or not m else "" for m in messages]
        prev_of: list[int | None] = [None] * n      # which prev slot each payload message took
        used_prev: set[int] = set()
        if n >= len(prev) and eks[:len(prev)] == prev_exact:
            blocks = [(0, 0, len(prev))]            # the usual case: the previous payload plus a tail
        else:
            blocks = difflib.SequenceMatcher(None, prev_exact, eks, autojunk=False).get_matching_blocks()
        for block in blocks:
            block = difflib.Match(*block)
            for k in range(block.size):
                i, j = block.a + k, block.b + k
                if kinds[j] == "":
                    ids[j], kinds[j], prev_of[j] = prev[i], "exact", i
                    used_prev.add(i)
        # moved: the same body elsewhere in the previous payload
        for j, (m, ek) in enumerate(zip(messages, eks)):
            if kinds[j] == "":
                i = next((i for i, k in enumerate(prev_exact) if k == ek and i not in used_prev), None)
                if i is not None:
                    ids[j], kinds[j], prev_of[j] = prev[i], "moved", i
                    used_prev.add(i)
        edits: list[Edit] = []
        versions: list[tuple[Msg, Msg | None, str]] = []     # (version, original if live, kind)

        def take_as_version(j: int, i: int, kind: str) -> None:
            """Payload message j is a new version of the previous payload's slot i."""
            original = conv.bodies[prev[i]]
            version = self._add_version(conv, messages[j], original, ts)
            ids[j], kinds[j], prev_of[j] = version.id, kind, i
            used_prev.add(i)
            versions.append((version, original, kind))
            edits.append(Edit(index, j, original.id, version.id, kind))

        # reformatted: equal after normalization
        for j in range(n):
            if kinds[j] == "":
                nk = norms[j]
                i = next((i for i, p in enumerate(prev) if i not in used_prev and conv.norm_of[p] == nk), None)
                if i is not None:
                    take_as_version(j, i, "reformatted")
        # the reply the app sent back
        pending_slot = None
        if conv.pending is not None:
            pending_slot = next((j for j, m in enumerate(messages) if kinds[j] == "" and
                                 m.get("role") == "assistant" and _loose_key(m) == conv.pending_loose), None)
            if pending_slot is not None:
                kinds[pending_slot] = "reply"
        anchors = [j for j in range(n) if prev_of[j] is not None]
        last_anchor = anchors[-1] if anchors else -1
        # restored: a body this conversation had before, not live now, back before the tail
        payload_ids = {i for i in ids if i}
        live_ids = set(prev)
        for j, (m, ek) in enumerate(zip(messages, eks)):
            if kinds[j] == "" and j < last_anchor:
                cands = [i for i in conv.exact.get(ek, []) + conv.norm.get(norms[j], [])
                         if i not in payload_ids and i not in live_ids and i not in self.result.versions]
                if cands:
                    original = conv.bodies[cands[0]]
                    version = self._add_version(conv, m, original, ts)
                    ids[j], kinds[j] = version.id, "restored"
                    payload_ids.add(version.id)
                    versions.append((version, None, "restored"))
                    edits.append(Edit(index, j, original.id, version.id, "restored"))
        # rewritten: same slot between the same aligned neighbours
        for j, m in enumerate(messages):
            if kinds[j] != "":
                continue
            before = max((a for a in anchors if a < j), default=None)
            after = min((a for a in anchors if a > j), default=None)
            lo = prev_of[before] if before is not None else -1
            hi = prev_of[after] if after is not None else len(prev)
            gap = [i for i in range(lo + 1, hi) if i not in used_prev] if lo < hi else []
            i = _pair(m, [(i, conv.bodies[prev[i]].to_openai()) for i in gap], interior=after is not None)
            if i is not None:
                take_as_version(j, i, "rewritten")
        # what is left is new; the unreturned reply comes first (it was the last thing said)
        # Trace order: the unreturned reply, the drop event, then the payload's new messages and
        # versions in payload order (each run of versions with its edit event), so a payload lists
        # its messages in the order they were added wherever possible.
        new: list[str] = []
        dropped_reply: list[str] = []
        if conv.pending is not None and pending_slot is None:
            reply_msg = self._add_stream(conv, conv.pending, ts, ops)
            dropped_reply.append(reply_msg.id)
        conv.pending, conv.pending_loose = None, None
        edits.sort(key=lambda e: e.position)
        replaced = {o.id for _, o, _ in versions if o is not None}
        dropped = [prev[i] for i in range(len(prev)) if i not in used_prev] + dropped_reply
        dropped = [d for d in dropped if d not in replaced]
        if dropped:
            event = MemoryEvent(type="trim", policy=DROP_POLICY, removed=dropped, params={},
                                reason=f"not in the payload of request {index}: the app dropped "
                                       f"{len(dropped)} message(s) (inferred from payloads)")
            self._event(event, ops)
        by_version = {v.id: (v, o, k) for v, o, k in versions}
        version_at = {e.position: by_version[e.version] for e in edits}
        group: list[tuple[Msg, Msg | None, str]] = []
        for j, m in enumerate(messages):
            if kinds[j] in ("", "reply"):
                self._flush_edits(index, group, ops)
                msg = self._add_stream(conv, m, ts, ops)
                ids[j] = msg.id
                kinds[j] = kinds[j] or "new"
                new.append(msg.id)
            elif j in version_at:
                group.append(version_at[j])
        self._flush_edits(index, group, ops)
        conv.live = [i for i in ids if i is not None]
        return CallLineage(call=index, conversation=conv.index, message_ids=ids, matches=kinds, new=new,
                           dropped=dropped, edits=edits)

    def _event(self, event: MemoryEvent, ops: list) -> None:
        ops.append(("event", event))
        self.result.events.append(StreamEvent(after_add=len(self.result.stream), event=event,
                                              calls_before=self._logical))

    def _flush_edits(self, index: int, group: list[tuple[Msg, Msg | None, str]], ops: list) -> None:
        if not group:
            return
        for version, _, _ in group:
            ops.append(("version", version, EDIT_POLICY))
        kinds_seen = sorted({k for _, _, k in group})
        self._event(MemoryEvent(type="trim", policy=EDIT_POLICY, removed=[o.id for _, o, _ in group if o],
                                added=[v.id for v, _, _ in group], params={},
                                reason=f"request {index} sent {len(group)} earlier message(s) changed "
                                       f"({', '.join(kinds_seen)}; inferred from payloads)"), ops)
        group.clear()

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


def _pair(message: Any, gap: list[tuple[int, dict]], interior: bool) -> int | None:
    """The previous-payload slot this unmatched message rewrites, if any."""
    if not isinstance(message, dict) or not gap:
        return None
    role = message.get("role")
    same_role = [(i, old) for i, old in gap if old.get("role") == role]
    if not same_role:
        return None
    if role == "tool" and message.get("tool_call_id"):
        return next((i for i, old in same_role if old.get("tool_call_id") == message.get("tool_call_id")), None)
    if _tool_ids(message):
        return next((i for i, old in same_role if _tool_ids(old) == _tool_ids(message)), None)
    text = content_text(message.get("content"))[:_SIMILARITY_CHARS]
    for i, old in same_role:
        old_text = content_text(old.get("content"))[:_SIMILARITY_CHARS]
        if _tool_ids(old):
            continue
        shorter, longer = sorted((text, old_text), key=len)
        if len(shorter) >= 8 and shorter in longer:
            return i
        if difflib.SequenceMatcher(None, text, old_text, autojunk=False).ratio() >= _SIMILAR:
            return i
    if interior and len(same_role) == 1 and len(gap) == 1:
        return same_role[0][0]
    return None


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
    bodies = list(bodies)
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
    bodies = list(bodies)
    n = len(bodies)
    responses_, statuses_ = _aligned(responses, n), _aligned(statuses, n)
    out = []
    for number, conv in enumerate(split_conversations(bodies)):
        trace = trace_from_requests([bodies[i] for i in conv], [responses_[i] for i in conv],
                                    statuses=[statuses_[i] for i in conv], sessions=["c"] * len(conv),
                                    source=f"{source}#conversation-{number + 1}", format=format)
        trace.meta["requests"] = conv
        out.append(trace)
    return out


def _error_text(response: dict | None) -> str:
    if isinstance(response, dict):
        err = response.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if err is not None:
            return _safe_dumps(err)
    return "the call failed"
