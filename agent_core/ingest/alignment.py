"""How one payload's messages map onto its conversation's previous payload.

``LineageBuilder.observe`` (payload_log.py) hands each new payload to an
``Alignment``; its passes run in order, each giving an id to the payload
messages the passes before it left open (``kinds[j] == ""``), and the last
one turns what is left into new stream messages and inferred events.
"""
from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from agent_core.core.msg import Msg
from agent_core.core.parents import LineageTracker
from agent_core.trace.events import MemoryEvent

from .message_keys import REPLY_ROLES, Norms, loose_key, rewritten_slot

DROP_POLICY = "inferred"
"""The policy name of an inferred drop (a message the app stopped sending)."""
EDIT_POLICY = "inferred-edit"
"""The policy name of an inferred edit (a message the app sent changed)."""


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
    reason: str = ""
    """Why the request went to its conversation: ``session header``, ``extends conversation 3's last payload
    (12 of 12 messages kept)``, ``new: ...``, ``retry of ...`` or ``ambiguous: ...`` (then also a warning)."""


@dataclass
class Conversation:
    """One conversation being inferred: its live payload, every body it has held, its pending reply."""

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


class LineageSink(Protocol):
    """What an alignment adds to (``payload_log.LineageBuilder``)."""

    result: Any
    """The ``PayloadLineage`` being built (its ``versions`` are read)."""

    def _add_stream(self, conv: Conversation, body: dict, ts: datetime, ops: list) -> Msg: ...
    def _add_version(self, conv: Conversation, body: dict, original: Msg, ts: datetime) -> Msg: ...
    def _event(self, event: MemoryEvent, ops: list) -> None: ...


class Alignment:
    """One payload being aligned: per payload message its id, how it matched, and which old slot it took."""

    def __init__(self, builder: LineageSink, index: int, conv: Conversation, messages: list, eks: list[str],
                 norms: Norms, ts: datetime, ops: list) -> None:
        self.builder, self.index, self.conv, self.ts, self.ops = builder, index, conv, ts, ops
        self.messages, self.eks, self.norms = messages, eks, norms
        self.prev = conv.live
        self.prev_exact = [conv.exact_of[i] for i in self.prev]
        n = len(messages)
        self.ids: list[str | None] = [None] * n
        self.kinds: list[str] = ["invalid" if not isinstance(m, dict) or not m else "" for m in messages]
        self.prev_of: list[int | None] = [None] * n      # which previous slot each payload message took
        self.used_prev: set[int] = set()
        self.edits: list = []
        self.versions: list[tuple[Msg, Msg | None, str]] = []     # (version, original if live, kind)
        self.pending_slot: int | None = None

    def run(self) -> CallLineage:
        """All passes, in order; the call's lineage."""
        self.match_exact()
        self.match_moved()
        self.match_reformatted()
        self.find_returned_reply()
        self.match_restored()
        self.match_rewritten()
        return self.add_the_rest()

    def _open(self) -> list[int]:
        return [j for j in range(len(self.messages)) if self.kinds[j] == ""]

    def _take(self, j: int, i: int, kind: str) -> None:
        self.ids[j], self.kinds[j], self.prev_of[j] = self.prev[i], kind, i
        self.used_prev.add(i)

    def _take_as_version(self, j: int, i: int, kind: str) -> None:
        """Payload message j is a new version of the previous payload's slot i."""
        original = self.conv.bodies[self.prev[i]]
        version = self.builder._add_version(self.conv, self.messages[j], original, self.ts)
        self.ids[j], self.kinds[j], self.prev_of[j] = version.id, kind, i
        self.used_prev.add(i)
        self.versions.append((version, original, kind))
        self.edits.append(Edit(self.index, j, original.id, version.id, kind))

    def match_exact(self) -> None:
        """Identical bodies in the same order as in the previous payload keep their ids.

        The usual case, the previous payload plus a tail, is taken without diffing.
        """
        prev, eks = self.prev, self.eks
        if len(eks) >= len(prev) and eks[:len(prev)] == self.prev_exact:
            blocks = [(0, 0, len(prev))]
        else:
            blocks = difflib.SequenceMatcher(None, self.prev_exact, eks, autojunk=False).get_matching_blocks()
        for block in blocks:
            block = difflib.Match(*block)
            for k in range(block.size):
                i, j = block.a + k, block.b + k
                if self.kinds[j] == "":
                    self._take(j, i, "exact")

    def match_moved(self) -> None:
        """An identical body elsewhere in the previous payload is the same message, moved."""
        for j in self._open():
            i = next((i for i, k in enumerate(self.prev_exact) if k == self.eks[j] and i not in self.used_prev), None)
            if i is not None:
                self._take(j, i, "moved")

    def match_reformatted(self) -> None:
        """A body equal after normalization to a free previous slot is a new version of it (reformatted)."""
        conv = self.conv
        for j in self._open():
            nk = self.norms[j]
            i = next((i for i, p in enumerate(self.prev) if i not in self.used_prev and conv.norm_of[p] == nk), None)
            if i is not None:
                self._take_as_version(j, i, "reformatted")

    def find_returned_reply(self) -> None:
        """The assistant message that loosely equals the last response's message is that reply, sent back."""
        conv = self.conv
        if conv.pending is None:
            return
        self.pending_slot = next((j for j in self._open() if self.messages[j].get("role") in REPLY_ROLES
                                  and loose_key(self.messages[j]) == conv.pending_loose), None)
        if self.pending_slot is not None:
            self.kinds[self.pending_slot] = "reply"

    def _anchors(self) -> list[int]:
        return [j for j in range(len(self.messages)) if self.prev_of[j] is not None]

    def match_restored(self) -> None:
        """A body this conversation had before, not live now, back before the tail, is restored."""
        conv, builder = self.conv, self.builder
        anchors = self._anchors()
        last_anchor = anchors[-1] if anchors else -1
        payload_ids = {i for i in self.ids if i}
        live_ids = set(self.prev)
        for j in self._open():
            if j >= last_anchor:
                continue
            cands = [i for i in conv.exact.get(self.eks[j], []) + conv.norm.get(self.norms[j], [])
                     if i not in payload_ids and i not in live_ids and i not in builder.result.versions]
            if cands:
                original = conv.bodies[cands[0]]
                version = builder._add_version(conv, self.messages[j], original, self.ts)
                self.ids[j], self.kinds[j] = version.id, "restored"
                payload_ids.add(version.id)
                self.versions.append((version, None, "restored"))
                self.edits.append(Edit(self.index, j, original.id, version.id, "restored"))

    def match_rewritten(self) -> None:
        """An unmatched message in the same slot between the same aligned neighbours rewrites that slot
        (same role, and the same tool-call ids or similar text; see ``message_keys.rewritten_slot``)."""
        anchors = self._anchors()
        for j in self._open():
            before = max((a for a in anchors if a < j), default=None)
            after = min((a for a in anchors if a > j), default=None)
            lo = self.prev_of[before] if before is not None else -1
            hi = self.prev_of[after] if after is not None else len(self.prev)
            gap = [i for i in range(lo + 1, hi) if i not in self.used_prev] if lo < hi else []
            i = rewritten_slot(self.messages[j], [(i, self.conv.bodies[self.prev[i]].to_openai()) for i in gap],
                               interior=after is not None)
            if i is not None:
                self._take_as_version(j, i, "rewritten")

    def add_the_rest(self) -> CallLineage:
        """What is left is new; what the previous payload had and this one lacks was dropped.

        Trace order: the unreturned reply, the drop event, then the payload's new
        messages and versions in payload order (each run of versions with its edit
        event), so a payload lists its messages in the order they were added
        wherever possible.
        """
        conv, builder, ops, prev = self.conv, self.builder, self.ops, self.prev
        new: list[str] = []
        dropped_reply: list[str] = []
        if conv.pending is not None and self.pending_slot is None:
            reply_msg = builder._add_stream(conv, conv.pending, self.ts, ops)
            dropped_reply.append(reply_msg.id)
        conv.pending, conv.pending_loose = None, None
        self.edits.sort(key=lambda e: e.position)
        replaced = {o.id for _, o, _ in self.versions if o is not None}
        dropped = [prev[i] for i in range(len(prev)) if i not in self.used_prev] + dropped_reply
        dropped = [d for d in dropped if d not in replaced]
        if dropped:
            event = MemoryEvent(type="trim", policy=DROP_POLICY, removed=dropped, params={},
                                reason=f"not in the payload of request {self.index}: the app dropped "
                                       f"{len(dropped)} message(s) (inferred from payloads)")
            builder._event(event, ops)
        by_version = {v.id: (v, o, k) for v, o, k in self.versions}
        version_at = {e.position: by_version[e.version] for e in self.edits}
        group: list[tuple[Msg, Msg | None, str]] = []
        for j, m in enumerate(self.messages):
            if self.kinds[j] in ("", "reply"):
                self._flush_edits(group)
                msg = builder._add_stream(conv, m, self.ts, ops)
                self.ids[j] = msg.id
                self.kinds[j] = self.kinds[j] or "new"
                new.append(msg.id)
            elif j in version_at:
                group.append(version_at[j])
        self._flush_edits(group)
        conv.live = [i for i in self.ids if i is not None]
        return CallLineage(call=self.index, conversation=conv.index, message_ids=self.ids, matches=self.kinds,
                           new=new, dropped=dropped, edits=self.edits)

    def _flush_edits(self, group: list[tuple[Msg, Msg | None, str]]) -> None:
        """One edit event for a run of consecutive versions, after their version messages."""
        if not group:
            return
        for version, _, _ in group:
            self.ops.append(("version", version, EDIT_POLICY))
        kinds_seen = sorted({k for _, _, k in group})
        self.builder._event(MemoryEvent(type="trim", policy=EDIT_POLICY, removed=[o.id for _, o, _ in group if o],
                                        added=[v.id for v, _, _ in group], params={},
                                        reason=f"request {self.index} sent {len(group)} earlier message(s) changed "
                                               f"({', '.join(kinds_seen)}; inferred from payloads)"), self.ops)
        group.clear()

