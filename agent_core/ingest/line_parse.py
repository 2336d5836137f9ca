"""One line of a payload log parsed against the line before it, sharing what is byte for byte the same.

A full-history log re-sends every earlier message on each line. Parsing each
line whole (``json.loads``) builds every message again, and making equal ones
one object afterwards with ``==`` is wrong: ``==`` holds for ``{"a":1,"b":2}``
and ``{"b":2,"a":1}``, or for ``1``, ``1.0`` and ``true``, which serialize
differently, so a call could be shown with bytes it did not send.

Here a line's request is walked with the ``json`` module's own scanner, and
each message (and each other request parameter: ``tools`` ...) whose JSON text
is exactly the text of one of the previous line's is that line's object,
reused without parsing it again. Only the text decides, so a message is shared
only when it is the same JSON text, and a full-history line costs one
comparison of the previous line's messages plus parsing what it adds. Whatever
this walk does not expect (another shape, bad JSON) is left to ``json.loads``,
whose value or error is then the answer: the value is always what
``json.loads`` gives, key order and types included.
"""
from __future__ import annotations

import json
import json.decoder
import json.scanner
from typing import Any

_WS = " \t\n\r"
SHORT = 32
"""Strings up to this length are kept once per file (``LineParser._share``)."""


class _Text:
    """A line's messages: their values, the JSON text of each (one ``str`` shared by the lines that repeat it), and
    the text of them all as it stands in the line, from the first message's start to the last one's end (``whole``;
    the line itself is not kept)."""

    __slots__ = ("texts", "values", "whole")

    def __init__(self) -> None:
        self.whole = ""
        self.texts: list[str] = []
        self.values: list = []


class _Fallback(Exception):
    """The walk met something it does not handle: parse the line with ``json.loads``."""


class LineParser:
    """Parses the lines of one file in order; see the module docstring.

    ``parse(raw)`` returns exactly what ``json.loads(raw)`` returns (and raises
    what it raises), with values shared with the previous line where their
    JSON text is identical.
    """

    def __init__(self) -> None:
        self._scan = json.scanner.make_scanner(json.JSONDecoder())
        self._messages: _Text | None = None                 # the previous line's messages
        self._params: dict[str, tuple[str, Any]] = {}       # the previous line's other arrays and objects
        self._new_params: dict[str, tuple[str, Any]] = {}
        self._strings: dict[str, str] = {}       # one object per key and per short string value
        self._reply: dict | None = None             # the previous line's response message
        self.shared = 0
        """Messages taken from the line before (a count, for tests and benchmarks)."""

    def parse(self, raw: bytes) -> Any:
        """``json.loads(raw)``, sharing values with the line before (see the class docstring)."""
        if raw[:3] == b"\xef\xbb\xbf" or json.detect_encoding(raw) != "utf-8":
            return self._whole(raw)
        try:
            text = raw.decode("utf-8", "surrogatepass")     # what json.loads does with bytes
        except UnicodeDecodeError:
            return self._whole(raw)
        try:
            return self._line(text)
        except (_Fallback, StopIteration, ValueError, RecursionError, IndexError):
            return self._whole(raw)

    def _whole(self, raw: bytes) -> Any:
        self._messages, self._params, self._reply = None, {}, None
        return json.loads(raw)

    def _share(self, value: Any) -> Any:
        """``value`` with each key, and each string of up to ``SHORT`` characters, one object across the file
        (roles, types, finish reasons ...); called on newly parsed values only."""
        kind = type(value)
        if kind is dict:
            strings, share = self._strings, self._share
            return {strings.setdefault(k, k): share(v) for k, v in value.items()}
        if kind is list:
            return [self._share(v) for v in value]
        if kind is str and len(value) <= SHORT:
            return self._strings.setdefault(value, value)
        return value

    # the walk ------------------------------------------------------------------------------------------
    def _line(self, s: str) -> Any:
        i = _skip(s, 0)
        if s[i] != "{":
            raise _Fallback
        self._new_params = {}
        top, end = self._object(s, i, "")
        if end != len(s) and s[end:].strip(_WS):
            raise _Fallback
        self._params = self._new_params
        self._reply = _reply_of(top.get("response"))
        return top

    def _object(self, s: str, i: int, level: str) -> tuple[dict, int]:
        """The object at ``s[i] == "{"``. At the top (``level`` "") a ``request`` object is walked as the
        request ("r"); at either level ``messages`` (an array) is walked message by message, and any other
        array or object value is the previous line's when its text is the same."""
        out: dict = {}
        i = _skip(s, i + 1)
        if s[i] == "}":
            return out, i + 1
        while True:
            if s[i] != '"':
                raise _Fallback
            key, i = self._scan(s, i)
            key = self._strings.setdefault(key, key)
            i = _skip(s, i)
            if s[i] != ":":
                raise _Fallback
            i = _skip(s, i + 1)
            c = s[i]
            if key == "messages" and c == "[":
                value, i = self._array(s, i)
            elif not level and key == "request" and c == "{":
                value, i = self._object(s, i, "r")
            elif c == "[" or c == "{":
                value, i = self._param(s, i, level + key)
            else:
                value, i = self._scan(s, i)
            out[key] = value
            i = _skip(s, i)
            if s[i] == "}":
                return out, i + 1
            if s[i] != ",":
                raise _Fallback
            i = _skip(s, i + 1)

    def _param(self, s: str, i: int, name: str) -> tuple[Any, int]:
        """An array or object value: the previous line's under the same name when its text is the same."""
        old = self._params.get(name)
        if old is not None and s.startswith(old[0], i):
            value, end = old[1], i + len(old[0])
        else:
            value, end = self._scan(s, i)
            value = self._share(value)
        self._new_params[name] = (s[i:end], value)
        return value, end

    def _array(self, s: str, i: int) -> tuple[list, int]:
        """The messages array at ``s[i] == "["``, sharing the previous line's messages where the text is the same."""
        prev = self._messages
        here = _Text()
        out, texts = here.values, here.texts
        i = first = last = _skip(s, i + 1)
        if s[i] == "]":
            self._messages = here
            return out, i + 1
        p = 0               # the previous message expected next
        if prev is not None and prev.texts:
            # a full history: all the previous messages, as one text, then "," or "]"
            n = len(prev.whole)
            if s.startswith(prev.whole, i) and s[_skip(s, i + n)] in ",]":
                out.extend(prev.values)
                texts.extend(prev.texts)
                self.shared += len(prev.values)
                p = len(prev.values)
                last = i + n
                i = _skip(s, i + n)
                if s[i] == "]":
                    here.whole = s[first:last]
                    self._messages = here
                    return out, i + 1
                i = _skip(s, i + 1)
        by_text: dict[str, int] | None = None
        while True:
            value = text = None
            if prev is not None and p < len(prev.texts):        # the next previous message, by its text
                text = prev.texts[p]
                if s.startswith(text, i) and s[_skip(s, i + len(text))] in ",]":
                    value, end, p = prev.values[p], i + len(text), p + 1
                    self.shared += 1
                else:
                    text = None
            if text is None:
                value, end = self._scan(s, i)
                value = self._share(value)
                text = s[i:end]
                if prev is not None and p < len(prev.texts):    # one further on: the ones between were dropped
                    if by_text is None:
                        by_text = {}
                        for q, t in enumerate(prev.texts):
                            by_text.setdefault(t, q)
                    q = by_text.get(text)
                    if q is not None and q >= p:
                        value, text, p = prev.values[q], prev.texts[q], q + 1
                        self.shared += 1
                reply = self._reply
                if reply is not None and value is not reply and value == reply and _same(value, reply):
                    value = reply      # the previous line's reply, sent back as it came
            out.append(value)
            texts.append(text)
            last = end
            i = _skip(s, end)
            if s[i] == "]":
                break
            if s[i] != ",":
                raise _Fallback
            i = _skip(s, i + 1)
        here.whole = s[first:last]
        self._messages = here
        return out, i + 1


def _reply_of(response: Any) -> dict | None:
    try:
        message = response["choices"][0]["message"]
    except (TypeError, KeyError, IndexError):
        return None
    return message if type(message) is dict else None


def _same(a: Any, b: Any) -> bool:
    """Equal values that also serialize the same (key order, ``1`` / ``1.0`` / ``true``): called when ``==`` holds."""
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def _skip(s: str, i: int) -> int:
    while s[i] in _WS:
        i += 1
    return i
