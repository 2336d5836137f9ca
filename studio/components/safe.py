"""Escaping for the few places where untrusted text must sit in a markdown element (error boxes).

Streamlit renders st.error / st.warning / st.caption bodies as markdown. A
file name or a loader message can carry trace text (``[x](javascript:...)``,
``:red[...]``, ``$...$``, ``<img ...>``); every ASCII punctuation character
is backslash-escaped (valid CommonMark for all of them), so it shows literally.
"""
from __future__ import annotations

import json
import re
import string

_ESCAPE = {ord(ch): "\\" + ch for ch in string.punctuation}


def md_escape(text: object, max_chars: int = 400) -> str:
    """``text`` as literal markdown on one line, shortened to ``max_chars``."""
    value = " ".join(str(text).split())
    if len(value) > max_chars:
        value = value[: max_chars - 1] + "…"
    return value.translate(_ESCAPE)


def tool_calls_of(message: object) -> list[dict]:
    """The tool-call objects of a message dict, whatever type its ``tool_calls`` has in the file (a number,
    a string, an object: none; the linter reports those at their JSON path)."""
    calls = message.get("tool_calls") if isinstance(message, dict) else None
    return [c for c in calls if isinstance(c, dict)] if isinstance(calls, list) else []


def function_of(call: dict) -> dict:
    """A tool call's ``function`` object, or an empty one when it is missing or not an object."""
    fn = call.get("function")
    return fn if isinstance(fn, dict) else {}


_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_LONE = re.compile("[\ud800-\udfff]")


def displayable(data: bytes) -> tuple[bytes, int]:
    """``data`` with every lone surrogate (``"\\ud800"`` in JSON, which no page can encode) turned into the
    literal text ``\\ud800``, and how many there were. Files without a surrogate escape come back as they are
    (one C-speed search); others are rewritten line by line (a whole document when a line is not JSON).
    Escaped surrogate pairs (emoji) are real characters and stay."""
    if not _SURROGATE_ESCAPE.search(data):
        return data, 0
    count = 0

    def fix(text: str) -> str | None:
        nonlocal count
        try:
            value = json.loads(text)
        except (ValueError, RecursionError):
            return None
        dumped = json.dumps(value, ensure_ascii=False)
        found = len(_LONE.findall(dumped))
        if not found:
            return text
        count += found
        return _LONE.sub(lambda m: f"\\\\u{ord(m.group()):04x}", dumped)

    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return data, 0
    lines = text.split("\n")
    fixed = [fix(line) if _SURROGATE_ESCAPE.search(line.encode()) else line for line in lines]
    if any(f is None for f in fixed):
        whole = fix(text)
        return (data, 0) if whole is None else (whole.encode("utf-8"), count)
    return "\n".join(fixed).encode("utf-8"), count
