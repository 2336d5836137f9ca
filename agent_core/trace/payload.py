"""A call's messages kept as runs over a trace's shared message arrays.

In a full-history trace call k re-sends the k messages before it, so a list
per payload costs O(N²) memory and load time: 25 million list slots at 5,000
calls. A trace file already describes each payload as runs of added messages
(``messages_ref``); a ``Payload`` keeps those runs and builds the list only
when asked. Code that walks every call (lint, token series) compares runs to
find what a payload adds to the one before, without building either list.
"""
from __future__ import annotations

from typing import Any


class Payload:
    """The messages (and tools) of one request, as runs over shared arrays.

    ``parts`` holds ``(start, count)`` tuples, runs over ``bodies`` / ``ids``,
    and one-element lists ``[body]`` for a message that matches no added
    message (its id is None). The arrays only ever grow, so a run stays valid.
    The list of runs given may grow too, after this payload is made, as long
    as its first ``length`` messages stay the same (a run lengthened or one
    appended): an importer hands the calls of a full history one list, so a
    call costs this object alone (``ingest/payload_runs.py``).
    """

    __slots__ = ("_parts", "tools", "length", "base", "_bodies", "_ids")

    def __init__(self, parts: list, bodies: list, ids: list, tools: Any = None, base: "Payload | None" = None):
        self._parts = parts
        self.tools = tools
        self.base = base     # a payload this one is known to start with (a left-out messages_ref says so)
        self._bodies = bodies
        self._ids = ids
        self.length = sum(p[1] if type(p) is tuple else 1 for p in parts)

    @property
    def parts(self) -> list:
        """The runs of this payload's ``length`` messages: the list given, or its beginning when it has grown."""
        parts, left = self._parts, self.length
        for k, part in enumerate(parts):
            if not left:
                return parts[:k]
            count = part[1] if type(part) is tuple else 1
            if count > left:        # a run lengthened since: cut to what this payload holds
                return [*parts[:k], (part[0], left)]
            left -= count
        return parts

    def __len__(self) -> int:
        return self.length

    @property
    def added(self) -> list:
        """The shared array of added message bodies the runs index (read-only)."""
        return self._bodies

    def messages(self, start: int = 0) -> list:
        """The message dicts from position ``start`` on (the same objects every time)."""
        return self._collect(self._bodies, start, lambda part: part[0])

    def ids(self, start: int = 0) -> list:
        """The stream id of each message from position ``start`` on (None for one never added)."""
        return self._collect(self._ids, start, lambda part: None)

    def _collect(self, array: list, start: int, extra) -> list:  # noqa: ANN001
        out: list = []
        skip = start
        for part in self.parts:
            if type(part) is tuple:
                first, count = part
                if skip >= count:
                    skip -= count
                    continue
                out.extend(array[first + skip:first + count])
            elif skip:
                skip -= 1
                continue
            else:
                out.append(extra(part))
            skip = 0
        return out

    def holds(self, msg_id: Any, positions: dict[int, list[int]]) -> bool:
        """Whether the message of stream id ``msg_id`` is among these (``msg_id in self.ids()``) without building
        the id list: its runs are tested against where it was added. ``positions`` keeps those places per shared
        array: one dict for all the payloads of a trace, and a full history's 25,000 calls are tested in
        O(calls x runs), not O(calls x messages)."""
        at = positions.get(id(self._ids))
        if at is None:
            at = positions[id(self._ids)] = [k for k, i in enumerate(self._ids) if i == msg_id]
        for part in self.parts:
            if type(part) is tuple:
                if any(part[0] <= k < part[0] + part[1] for k in at):
                    return True
            elif msg_id is None:        # a message that matches no added one has no id
                return True
        return False

    def starts_with(self, other: "Payload") -> bool:
        """Whether ``other``'s messages are the first ``len(other)`` of this payload's (same objects)."""
        if other is self.base:
            return True
        if other._bodies is not self._bodies or other.length > self.length:
            return False
        if other._parts is self._parts:
            return True     # one list of runs (grown since): both are its beginnings
        mine, theirs = self.parts, other.parts
        if not theirs:
            return True
        if len(theirs) > len(mine):
            return False
        for a, b in zip(mine, theirs[:-1]):
            if type(a) is not type(b) or (a != b if type(a) is tuple else a[0] is not b[0]):
                return False
        a, b = mine[len(theirs) - 1], theirs[-1]
        if type(b) is tuple:
            return type(a) is tuple and a[0] == b[0] and a[1] >= b[1]
        return type(a) is list and a[0] is b[0]

    def request(self, skeleton: dict) -> dict:
        """The whole request body: ``skeleton`` with these messages (and tools) in their places."""
        return request_body(skeleton, self.messages(), self.tools)


def request_body(skeleton: dict, messages: list, tools: list | None) -> dict:
    """``skeleton`` (a request with ``messages``, and ``tools`` if any, left None) with them in their places."""
    body = dict(skeleton)
    body["messages"] = messages
    if tools is not None:
        body["tools"] = tools
    return body


_NO_DEFAULT = object()


class FromPayload:
    """A dataclass field whose value comes from ``self.payload`` when one is set.

    Objects read from a trace file set ``payload`` (runs over the trace's shared
    arrays) and keep only the request's skeleton under the field; everything
    else assigns plain values and ``payload`` stays None. Used in the class body
    (``request: dict = FromPayload(Payload.request, resets=True)``), so the field
    is declared once, with its docstring, where it is read.

    Args:
        build: ``build(payload, stored)`` gives the value while a payload is set.
        resets: assigning the field drops the payload (for the request body, so
            ``dataclasses.replace`` and redaction see exactly what they set).
        default: the field's default (a fresh list when ``list``); none if left out.
    """

    def __init__(self, build, *, resets: bool = False, default: Any = _NO_DEFAULT):  # noqa: ANN001
        self._build = build
        self._resets = resets
        self._default = default

    def __set_name__(self, owner: type, name: str) -> None:
        self._name = name
        self._slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:     # dataclasses ask the class for the field's default
            if self._default is _NO_DEFAULT:
                raise AttributeError(self._name)
            return None if self._default is list else self._default
        payload = getattr(obj, "payload", None)     # attributes, not obj.__dict__: reading that makes the
        stored = getattr(obj, self._slot, None)     # instance a dict of its own (64 bytes a call)
        if payload is not None:
            return self._build(payload, stored)
        if stored is None and self._default is list:
            stored = []
            object.__setattr__(obj, self._slot, stored)
        return stored

    def __set__(self, obj: Any, value: Any) -> None:
        object.__setattr__(obj, self._slot, value)
        if self._resets:
            object.__setattr__(obj, "payload", None)

    @staticmethod
    def stored(obj: Any, name: str) -> Any:
        """The value assigned to field ``name`` (the request skeleton for a call read from a file)."""
        return getattr(obj, "_" + name, None)
