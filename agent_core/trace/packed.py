"""A response body kept as its compact JSON text, deflated, and parsed again on each read.

A payload log of N calls holds N response bodies. As Python objects each
costs about 1 KB beyond its reply message (a dict of seven keys, the choice
and usage dicts, the choices list, the id and the numbers), four times its
JSON text; nothing in them repeats from one response to the next (ids,
times and token counts all change), so sharing equal values saves nothing.
``PackedJson`` keeps the body as the ASCII text ``json.dumps`` gives for it,
with the reply message left out and held as the object it is when the next
request re-sends that very object (``ingest/line_parse.py``), so it stays one.
The text is deflated (``zlib``) against the first body's text of the same
file (``Packer``), which holds its keys and most of its values: about 70
bytes a response. The 1,294 responses of a 1 GB log take 0.18 MB instead of 1.4 MB.

Every read inflates and parses the text again (about 10 microseconds): the
value is equal to the body, with the same key order and types (``0`` /
``0.0`` / ``false`` / ``-0.0``: JSON text keeps them apart, and ``json``
writes a float as its ``repr``), a fresh object each time except the reply
message. Only values of JSON's own types are packed.
"""
from __future__ import annotations

import json
import json.scanner
import zlib
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 32
"""A body nested deeper than this (beyond the reply) is kept as it is: parsing it again deep in a caller's stack
must not reach the recursion limit."""
_SCAN = json.scanner.make_scanner(json.JSONDecoder())
"""``json.loads`` without its checks for whitespace around the value (the text is ``json.dumps``'s, compact)."""
_WBITS = -15
"""Raw deflate: no header or checksum (the bytes never leave the process but in a snapshot, itself hashed)."""


@dataclass(frozen=True, slots=True)
class PackedJson:
    """A JSON object as its deflated compact ASCII text, and the reply message taken out of it (see the module)."""

    data: bytes
    """``json.dumps(body)`` (compact, ASCII), with ``null`` in place of ``choices[0].message`` when ``reply`` is
    set, deflated with ``zdict`` as its dictionary."""
    reply: dict | None
    """The first choice's message object, put back in its place on each read; None: the text is the whole body."""
    zdict: bytes
    """The deflate dictionary: one ``bytes`` object shared by the bodies of a file."""

    def text(self) -> str:
        """The compact JSON text (``null`` for the reply)."""
        inflate = zlib.decompressobj(_WBITS, zdict=self.zdict)
        return (inflate.decompress(self.data) + inflate.flush()).decode("ascii")

    def value(self) -> Any:
        """The body: a fresh parse of the text, with ``reply`` back in its place."""
        body = _SCAN(self.text(), 0)[0]
        if self.reply is not None:
            body["choices"][0]["message"] = self.reply
        return body


class Packer:
    """Packs the bodies of one file, each deflated against the first one's text (``PackedJson.zdict``)."""

    def __init__(self) -> None:
        self._zdict: bytes | None = None

    def __call__(self, body: Any, keep_reply: bool = True) -> Any:
        """``body`` as a ``PackedJson`` when it is a JSON object that packs back exactly, else ``body`` itself;
        its reply message kept as the object it is when ``keep_reply``, else packed with the rest."""
        if type(body) is not dict:
            return body
        reply = _reply(body) if keep_reply else None
        stub = body
        if reply is not None:
            choices = body["choices"]
            stub = {**body, "choices": [{**choices[0], "message": None}, *choices[1:]]}
        if not _plain(stub):
            return body
        try:
            text = json.dumps(stub, separators=(",", ":")).encode("ascii")
        except (TypeError, ValueError, RecursionError):     # not JSON (a caller's own objects): kept as they are
            return body
        if self._zdict is None:
            self._zdict = text
        deflate = zlib.compressobj(zlib.Z_BEST_COMPRESSION, zlib.DEFLATED, _WBITS, zdict=self._zdict)
        return PackedJson(deflate.compress(text) + deflate.flush(), reply, self._zdict)


def pack(body: Any, keep_reply: bool = True) -> Any:
    """``Packer()(body, keep_reply)``: one body on its own."""
    return Packer()(body, keep_reply)


def _reply(body: dict) -> dict | None:
    """``body["choices"][0]["message"]`` when that is an object in a list of objects, else None."""
    choices = body.get("choices")
    if type(choices) is not list or not choices or type(choices[0]) is not dict:
        return None
    message = choices[0].get("message")
    return message if type(message) is dict else None


_LEAVES = (str, int, float, bool, type(None))


def _plain(value: Any) -> bool:
    """Whether ``value`` is made of JSON's types only (``dict`` with ``str`` keys, ``list``, the scalars; a
    subclass or a tuple would come back as something else) and nested at most ``MAX_DEPTH`` deep."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        kind = type(item)
        if kind is dict:
            if depth > MAX_DEPTH or any(type(k) is not str for k in item):
                return False
            stack.extend((v, depth + 1) for v in item.values())
        elif kind is list:
            if depth > MAX_DEPTH:
                return False
            stack.extend((v, depth + 1) for v in item)
        elif kind not in _LEAVES:
            return False
    return True


class Unpacked:
    """A dataclass field that may hold a ``PackedJson``: reading it gives the value (None by default).

    Used in the class body (``response: dict | None = Unpacked()``); anything
    assigned is kept as it is, so only the importer that packs stores text.
    """

    def __set_name__(self, owner: type, name: str) -> None:
        self._slot = "_" + name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:     # dataclasses ask the class for the field's default
            return None
        value = getattr(obj, self._slot, None)      # not obj.__dict__ (see FromPayload)
        return value.value() if type(value) is PackedJson else value

    def __set__(self, obj: Any, value: Any) -> None:
        object.__setattr__(obj, self._slot, value)

    @staticmethod
    def stored(obj: Any, name: str) -> Any:
        """What field ``name`` holds: a ``PackedJson`` or the value itself."""
        return getattr(obj, "_" + name, None)
