"""Writing a big replay report to a stream fast, byte for byte what ``json.dump`` writes.

``json.dump`` uses the pure-Python encoder and writes every token on its own
(3.2 million ``write`` calls for the 48 MB report of a 25,000-call replay:
12 s under a profiler). ``write_json`` encodes with the C encoder
(``json.dumps``) one element of each long list at a time and writes them in
batches of about a megabyte, so it never holds the whole document as one
string (a trace whose payloads repeat a 30 MB message still streams) and
the output is identical to ``json.dump(doc, out, ensure_ascii=False,
separators=(",", ":"))``.
"""
from __future__ import annotations

import json
from typing import Any, TextIO

BATCH_CHARS = 1 << 20
"""Characters buffered before one ``write``."""
LIST_BATCH = 64
"""Elements of an innermost opened list encoded by one ``json.dumps`` (at most that many messages in one string)."""


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


class _Buffer:
    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.parts: list[str] = []
        self.size = 0

    def add(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)
        if self.size >= BATCH_CHARS:
            self.flush()

    def flush(self) -> None:
        if self.parts:
            self.out.write("".join(self.parts))
            self.parts, self.size = [], 0


def _key(k: Any) -> str:
    """A non-string dict key as ``json.dumps`` writes it (``{1: 2}`` -> ``"1"``, ``True`` -> ``"true"``)."""
    return next(iter(json.loads(_dumps({k: 0}))))


def write_json(doc: Any, out: TextIO, *, depth: int = 2) -> None:
    """``json.dump(doc, out, ensure_ascii=False, separators=(",", ":"))``, the same bytes, quicker.

    ``depth``: how many levels of containers are opened before elements are encoded whole (the report's long
    lists are at depth 2: ``doc["messages"][i]``); deeper elements are one ``json.dumps`` each."""
    buf = _Buffer(out)
    _write_depth(doc, buf, depth)
    buf.flush()


def write_members(members: dict, out: TextIO, *, first: bool, last: bool, depth: int = 2) -> None:
    """Part of ``write_json`` of a dict: its members ``members`` (in order), opening it when ``first`` and
    closing it when ``last``; the parts of one dict written one after the other are ``write_json``'s bytes."""
    buf = _Buffer(out)
    if first:
        buf.add("{")
    for i, (k, v) in enumerate(members.items()):
        key = _dumps(k if isinstance(k, str) else _key(k))
        buf.add((key if first and not i else "," + key) + ":")
        _write_depth(v, buf, depth - 1)
    if last:
        buf.add("}")
    buf.flush()


def _write_depth(value: Any, buf: _Buffer, depth: int) -> None:
    if depth <= 0 or not isinstance(value, (dict, list)) or not value:
        buf.add(_dumps(value))
        return
    if depth == 1 and isinstance(value, list):
        # Elements encoded whole: a batch of them is one ``json.dumps`` of a slice, brackets cut off
        # ("[a,b]" -> "a,b": the same separators), not one call per element (139,000 at 25,000 calls).
        buf.add("[")
        for i in range(0, len(value), LIST_BATCH):
            buf.add(("," if i else "") + _dumps(value[i:i + LIST_BATCH])[1:-1])
        buf.add("]")
        return
    if isinstance(value, dict):
        buf.add("{")
        for i, (k, v) in enumerate(value.items()):
            key = _dumps(k if isinstance(k, str) else _key(k))
            buf.add((key if not i else "," + key) + ":")
            _write_depth(v, buf, depth - 1)
        buf.add("}")
    else:
        buf.add("[")
        for i, v in enumerate(value):
            if i:
                buf.add(",")
            _write_depth(v, buf, depth - 1)
        buf.add("]")
