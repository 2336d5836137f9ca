"""The stream of an imported file's request bodies: its distinct messages, in the order they were first sent.

Each payload message maps to the first stream message with the same
``message_key`` (its exact JSON text, key order kept) after the previous
match, else it joins the stream: an untrimmed log gives call k
``stream_index == len(messages_k)``; a trimmed one still maps what it kept.
"""
from __future__ import annotations

import bisect
import json
from operator import is_
from typing import Any

from agent_core.core.msg import Msg, message_key, utc_now


class StreamBuilder:
    """Ordered distinct messages as they were added, matched across payloads by ``message_key``.

    A payload message maps to the first stream message with the same key after
    the previous match, else it joins the stream: an untrimmed log gives call k
    ``stream_index == len(messages_k)``; a trimmed one still maps what it kept.
    """

    def __init__(self) -> None:
        self.msgs: list[Msg] = []
        self._by_key: dict[str, list[int]] = {}
        self._prev: list = []
        self._prev_positions: list[int] = []
        self.extends = 0
        """How many leading messages of the last ``match`` were the previous one's, the same objects."""
        self.now = utc_now()
        """Every added message's ``timestamp``: a file of bodies says when none was written, so each is stamped
        with the time it was read, one object for all (48 bytes a message otherwise)."""

    def add(self, message: Any, key: str | None = None) -> int:
        # the importer owns the freshly parsed JSON and never mutates it: no copy per message
        msg = Msg.from_openai(message, copy_values=False, timestamp=self.now) if isinstance(message, dict) else \
            Msg(role="?", content=message, timestamp=self.now)
        self.msgs.append(msg)
        self._by_key.setdefault(_key(message) if key is None else key, []).append(len(self.msgs) - 1)
        return len(self.msgs) - 1

    def match(self, messages: list) -> tuple[list[int], int]:
        positions: list[int] = []
        last = -1
        start = 0
        prev = self._prev
        try:
            # a full-history log re-sends the previous payload: map only the new tail. The same objects only
            # (a streamed log shares identical text): ``==`` also holds for look-alikes that serialize differently
            if prev and len(messages) >= len(prev) and messages[:len(prev)] == prev and all(map(is_, messages, prev)):
                positions = list(self._prev_positions)
                last = max(positions, default=-1)
                start = len(prev)
        except RecursionError:
            positions, last, start = [], -1, 0
        for m in messages[start:]:
            found = None
            key = _key(m)
            candidates = self._by_key.get(key)
            if candidates:
                at = bisect.bisect_right(candidates, last)
                if at < len(candidates):
                    found = candidates[at]
            if found is None:
                found = self.add(m, key)
            positions.append(found)
            last = max(last, found)
        self._prev, self._prev_positions, self.extends = messages, positions, start
        return positions, last + 1


def _key(message: Any) -> str:
    return message_key(message) if isinstance(message, dict) else json.dumps(message, ensure_ascii=False)
