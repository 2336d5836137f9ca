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
only when it is the same JSON text. A line whose bytes start with the previous
line's, up to the end of its last message (a full history, nothing before the
messages changed), is not even decoded there: only the rest is. Whatever this
walk does not expect (another shape, bad JSON) is left to ``json.loads``, whose
value or error is then the answer: the value is always what ``json.loads``
gives, key order and types included.
"""
from __future__ import annotations

import json
import json.scanner
from typing import Any

_WS = " \t\n\r"
_WS_BYTES = b" \t\n\r"
SHORT = 32
"""Strings up to this length are kept once per file (``LineParser._share``)."""


class _Text:
    """A line's messages: their values and the JSON text of each (one ``str`` shared by the lines that repeat it)."""

    __slots__ = ("texts", "values")

    def __init__(self) -> None:
        self.texts: list[str] = []
        self.values: list = []


class _Line:
    """Where a parsed line's messages stand in its bytes, to compare the next line with it.

    ``raw[start:end]`` is the text of the messages, from the first one's start
    to the last one's end (``chars`` characters); ``frames`` the objects around
    them, outermost first: ``(level, the members before the one holding the
    messages, that member's key)``.
    """

    __slots__ = ("chars", "end", "frames", "raw", "start")

    def __init__(self, raw: bytes, start: int, end: int, chars: int, frames: list) -> None:
        self.raw, self.start, self.end, self.chars, self.frames = raw, start, end, chars, frames


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
        self._line: _Line | None = None                     # where they stood in its bytes
        self._params: dict[str, tuple[str, Any]] = {}       # the previous line's other arrays and objects
        self._strings: dict[str, str] = {}                  # one object per key and per short string value
        self._reply: dict | None = None                     # the previous line's response message
        self._reset_line()
        self.shared = 0
        """Messages taken from the line before (a count, for tests and benchmarks)."""

    def _reset_line(self) -> None:
        """The state one line's walk builds, kept only when the whole line was walked."""
        self._new_params: dict[str, tuple[str, Any]] = {}
        self._path: list[list] = []         # the objects being walked: [level, members so far, current key]
        self._found: tuple | None = None    # (frames, first message's char index, the index after the last,
        #                                     the first's byte offset or None, (a char index, its byte offset or None))
        self._here: _Text | None = None
        self._raw = b""

    def parse(self, raw: bytes) -> Any:
        """``json.loads(raw)``, sharing values with the line before (see the class docstring)."""
        if raw[:3] == b"\xef\xbb\xbf" or json.detect_encoding(raw) != "utf-8":
            return self._whole(raw)
        prev = self._line
        if prev is not None and raw.startswith(memoryview(prev.raw)[:prev.end]):
            try:
                tail = raw[prev.end:].decode("utf-8", "surrogatepass")
            except UnicodeDecodeError:
                return self._whole(raw)
            try:
                return self._resume(raw, tail, prev)
            except (_Fallback, StopIteration, ValueError, RecursionError, IndexError):
                pass        # walked whole below
        try:
            text = raw.decode("utf-8", "surrogatepass")     # what json.loads does with bytes
        except UnicodeDecodeError:
            return self._whole(raw)
        try:
            return self._walk(raw, text)
        except (_Fallback, StopIteration, ValueError, RecursionError, IndexError):
            return self._whole(raw)

    def _whole(self, raw: bytes) -> Any:
        self._messages, self._line, self._params, self._reply = None, None, {}, None
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

    # a whole line --------------------------------------------------------------------------------------
    def _walk(self, raw: bytes, s: str) -> Any:
        self._reset_line()
        self._raw = raw
        i = _skip(s, 0)
        if s[i] != "{":
            raise _Fallback
        top, end = self._object(s, i, "")
        if end != len(s) and s[end:].strip(_WS):
            raise _Fallback
        line = None
        if self._found is not None:
            frames, first, last, start, (at, at_byte) = self._found
            if start is None:
                start = len(s[:first].encode("utf-8", "surrogatepass"))
            if at_byte is None:
                at, at_byte = first, start
            end = at_byte + len(s[at:last].encode("utf-8", "surrogatepass"))
            line = _Line(raw, start, end, last - first, frames)
        return self._done(top, line)

    def _done(self, top: dict, line: _Line | None) -> dict:
        """Keep what the next line is compared with."""
        self._params = self._new_params
        self._reply = _reply_of(top.get("response"))
        self._messages = self._here
        self._line = line if self._here is not None and self._here.values else None
        return top

    def _object(self, s: str, i: int, level: str) -> tuple[dict, int]:
        """The object at ``s[i] == "{"``. At the top (``level`` "") a ``request`` object is walked as the
        request ("r"); at either level ``messages`` (an array) is walked message by message, and any other
        array or object value is the previous line's when its text is the same."""
        frame: list = [level, {}, None]
        self._path.append(frame)
        i = _skip(s, i + 1)
        end = i + 1 if s[i] == "}" else self._members(s, i, frame)
        self._path.pop()
        return frame[1], end

    def _members(self, s: str, i: int, frame: list) -> int:
        """The members from ``s[i]`` (a key's opening quote) to the closing brace; the index after it."""
        level, out = frame[0], frame[1]
        while True:
            if s[i] != '"':
                raise _Fallback
            key, i = self._scan(s, i)
            key = frame[2] = self._strings.setdefault(key, key)
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
                return i + 1
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
        frames = [(f[0], list(f[1].items()), f[2]) for f in self._path]
        prev, line = self._messages, self._line
        here = self._here = _Text()
        i = first = _skip(s, i + 1)
        if s[i] == "]":
            return here.values, i + 1
        start = None            # the byte offset of the first message, when computed
        known = (first, None)   # a char index in the messages and its byte offset, when computed
        p = 0
        if prev is not None and line is not None:
            # a full history behind other bytes: the previous messages' bytes, then "," or "]"
            start = len(s[:i].encode("utf-8", "surrogatepass"))
            if self._raw.startswith(memoryview(line.raw)[line.start:line.end], start) and \
                    s[_skip(s, i + line.chars)] in ",]":
                here.values.extend(prev.values)
                here.texts.extend(prev.texts)
                p = len(prev.values)
                self.shared += p
                i += line.chars
                known = (i, start + line.end - line.start)
        i, last = self._rest(s, i, here, p, p == 0)
        self._found = (frames, first, last if last is not None else known[0], start, known)
        return here.values, i

    def _rest(self, s: str, i: int, here: _Text, p: int, at_start: bool) -> tuple[int, int | None]:
        """The messages from ``s[i]`` on (at a message when ``at_start``, else at "," or "]" after one) to the
        closing bracket; the index after it and the index after the last message walked here (None: none)."""
        prev = self._messages
        out, texts = here.values, here.texts
        last = None
        if not at_start:
            i, closed = _after_item(s, i)
            if closed:
                return i, last
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
            i, closed = _after_item(s, end)
            if closed:
                return i, last

    # a line that starts with the previous line's bytes ---------------------------------------------------
    def _resume(self, raw: bytes, tail: str, prev: _Line) -> dict:
        """The line whose bytes up to ``prev.end`` are the previous line's: its messages so far and every member
        before them are the previous line's objects; ``tail`` (the rest, decoded) is walked from there."""
        self._reset_line()
        if not tail or tail[_skip(tail, 0)] not in ",]":
            raise _Fallback
        old = self._messages
        here = self._here = _Text()
        here.values.extend(old.values)
        here.texts.extend(old.texts)
        self.shared += len(old.values)
        frames = [[level, dict(members), key] for level, members, key in prev.frames]
        for level, members, key in prev.frames:       # what the members before the messages shared, still shared
            for k, _ in members:
                if (level + k) in self._params:
                    self._new_params[level + k] = self._params[level + k]
        i, last = self._rest(tail, 0, here, len(old.values), False)
        value: Any = here.values
        self._path = [f for f in frames]
        while self._path:
            frame = self._path[-1]
            frame[1][frame[2]] = value
            i = _skip(tail, i)
            if tail[i] == "}":
                i += 1
            elif tail[i] == ",":
                i = self._members(tail, _skip(tail, i + 1), frame)
            else:
                raise _Fallback
            value = self._path.pop()[1]
        if i != len(tail) and tail[i:].strip(_WS):
            raise _Fallback
        if self._here is not here:      # another messages array came later: the next line is compared with that
            return self._done(value, None)
        end = prev.end + (len(tail[:last].encode("utf-8", "surrogatepass")) if last is not None else 0)
        chars = prev.chars + (last if last is not None else 0)
        return self._done(value, _Line(raw, prev.start, end, chars, prev.frames))


def _reply_of(response: Any) -> dict | None:
    try:
        message = response["choices"][0]["message"]
    except (TypeError, KeyError, IndexError):
        return None
    return message if type(message) is dict else None


def _same(a: Any, b: Any) -> bool:
    """Equal values that also serialize the same (key order, ``1`` / ``1.0`` / ``true``): called when ``==`` holds."""
    return json.dumps(a, ensure_ascii=False) == json.dumps(b, ensure_ascii=False)


def _after_item(s: str, i: int) -> tuple[int, bool]:
    """After an array item: the index after the closing bracket and True, or the next item's index and False."""
    i = _skip(s, i)
    if s[i] == "]":
        return i + 1, True
    if s[i] != ",":
        raise _Fallback
    return _skip(s, i + 1), False


def _skip(s: str, i: int) -> int:
    while s[i] in _WS:
        i += 1
    return i
