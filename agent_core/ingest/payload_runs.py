"""Imported calls' messages kept as runs over one shared array, the way calls read from a trace file are.

A full-history log of N calls re-sends every earlier message: a list of
messages (and one of ids) per call costs O(N²) slots, 13 MB each at 1,294
calls. Here each call gets a ``trace/payload.py : Payload``: runs over one
array of ``(message object, stream position)`` entries that only grows. A call
that re-sends the previous call's messages (the same objects: a streamed log
shares identical text, ``line_parse.py``) takes the previous call's list of
runs and grows it with its new messages (each payload reads the first
``length`` messages of it), so a call of a full history costs its ``Payload``
object beyond its new messages.

Only the objects are shared, never a look-alike: an entry is one object at one
stream position, so every call's payload is exactly the values parsed from
what it sent.
"""
from __future__ import annotations

from agent_core.apis.base import api_for_body
from agent_core.apis.chat_completions import CHAT_COMPLETIONS
from agent_core.trace.payload import Payload


class PayloadRuns:
    """Builds each call's ``Payload``; ``finish(ids)`` fills in the stream ids once the stream exists."""

    def __init__(self) -> None:
        self.added: list = []
        """The message objects the runs index, in order of first use (read-only once built)."""
        self.ids: list = []
        """The stream id of each entry of ``added`` (filled by ``finish``)."""
        self._positions: list[int] = []
        self._index: dict[tuple[int, int], int] = {}
        self._prev_parts: list = []
        self._prev_length = -1
        self._prev_skeleton: dict | None = None

    def call(self, request: dict, messages: list, positions: list[int], extends: int) -> tuple[dict, Payload | None]:
        """The request to store and the payload of ``messages`` (mapped to stream ``positions``), whose first
        ``extends`` messages are the previous call's, the same objects at the same positions.

        The request stored is a skeleton (``messages``, and ``tools`` when set, None: the payload holds them).
        Only a Chat Completions body gets a payload: the linter tells a call's wire API from its head when it has
        one, and an Anthropic body is told by its messages' content blocks. A body that is not one is kept whole
        (payload None), and the next call then extends nothing.
        """
        if extends != self._prev_length:
            extends = 0
        head = {**request, "messages": messages[extends:]}      # the new messages: the others were judged before
        if messages is not request.get("messages") or api_for_body(head) is not CHAT_COMPLETIONS:
            self.skip()
            return request, None
        parts = self._prev_parts if extends else []      # grown in place: each payload reads its own length
        index, added = self._index, self.added
        for slot in range(extends, len(messages)):
            m, pos = messages[slot], positions[slot]
            key = (id(m), pos)
            j = index.get(key)
            if j is None or added[j] is not m:
                j = len(added)
                added.append(m)      # held here, so its id is not reused while the index holds it
                self._positions.append(pos)
                index[key] = j
            if parts and type(parts[-1]) is tuple and sum(parts[-1]) == j:
                parts[-1] = (parts[-1][0], parts[-1][1] + 1)
            else:
                parts.append((j, 1))
        self._prev_parts, self._prev_length = parts, len(messages)
        tools = request.get("tools")
        skeleton = {**request, "messages": None}
        if tools is not None:
            skeleton["tools"] = None
        if self._prev_skeleton is not None and _same_skeleton(skeleton, self._prev_skeleton):
            skeleton = self._prev_skeleton
        self._prev_skeleton = skeleton
        return skeleton, Payload(parts, self.added, self.ids, tools)

    def skip(self) -> None:
        """A call without a payload came between: the next payload extends nothing."""
        self._prev_parts, self._prev_length = [], -1

    def finish(self, stream_ids: list) -> None:
        """Set the stream id of every entry, from the ids of the stream in order."""
        self.ids.extend(stream_ids[p] for p in self._positions)
        self._index, self._positions = {}, []


_SCALARS = (str, int, bool, type(None))
"""Values whose type and ``==`` fix their JSON text (a float's is its ``repr``: ``0.0 == -0.0``)."""


def _same_skeleton(a: dict, b: dict) -> bool:
    """Whether two request skeletons serialize byte for byte the same: the same keys in the same order, each
    value the same object or an equal scalar of the same type. Consecutive calls then keep one object (a
    skeleton is read-only): 0.2 MB at 1,294 calls."""
    if len(a) != len(b):
        return False
    for (ka, va), (kb, vb) in zip(a.items(), b.items()):
        if ka != kb:
            return False
        if va is vb:
            continue
        kind = type(va)
        if kind is not type(vb) or not (kind in _SCALARS and va == vb or kind is float and repr(va) == repr(vb)):
            return False
    return True
