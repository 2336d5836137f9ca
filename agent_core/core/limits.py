"""Size limits on untrusted input, in one place.

Parsing JSON costs several times its size in memory; past these limits a
file is refused with one sentence instead of exhausting the machine.
"""
from __future__ import annotations

import os
import re
import stat
import sys
from pathlib import Path
from typing import Any

from .errors import MalformedTraceError

MAX_INPUT_MB = int(os.environ.get("CHAIN_STUDIO_MAX_INPUT_MB", "64"))
MAX_INPUT_BYTES = MAX_INPUT_MB * 1024 * 1024

# The most turns any provider documents accepting in one request: Anthropic's Messages API, "There is a limit of
# 100,000 messages in a single request" (API reference, messages); Azure OpenAI's /chat/completions takes 2,048.
# A body past it was never accepted by a provider, and reading it costs about 1.3 KB of memory per message
# whatever the message's size (200,000 two-word messages: an 8 MB file, 270 MB), so it is refused in one line.
MAX_BODY_MESSAGES = int(os.environ.get("CHAIN_STUDIO_MAX_BODY_MESSAGES", "100000"))


def check_input_size(path: Path, size: int | None = None) -> None:
    """Refuse a file (or upload of ``size`` bytes) over the limit, naming the limit and how to raise it."""
    size = path.stat().st_size if size is None else size
    if size > MAX_INPUT_BYTES:
        raise MalformedTraceError(
            str(path), f"is {size / 1024 / 1024:.0f} MB; Chain Studio opens files up to {MAX_INPUT_MB} MB "
                       "(set CHAIN_STUDIO_MAX_INPUT_MB to raise the limit)")


TURNS_KEYS = ("messages", "contents", "input")
"""The keys of a request body's turns: Chat Completions and Anthropic ``messages``, Gemini ``contents``, Responses
``input``."""


def check_body(body: Any, source: str, where: str) -> None:
    """``check_body_messages`` on each turns array of a parsed request body (anything: only a dict is looked at)."""
    if isinstance(body, dict):
        for key in TURNS_KEYS:
            turns = body.get(key)
            if isinstance(turns, list):
                check_body_messages(len(turns), source, where)


def check_body_messages(count: int, source: str, where: str) -> None:
    """Refuse a request body (``where``: "request 3") holding more turns than any provider accepts."""
    if count > MAX_BODY_MESSAGES:
        raise MalformedTraceError(
            source, f"{where} holds {count:,} messages; no provider accepts more than {MAX_BODY_MESSAGES:,} in one "
                    "request (Anthropic's documented limit; Azure OpenAI's is 2,048), so Chain Studio does not read "
                    "it (set CHAIN_STUDIO_MAX_BODY_MESSAGES to raise the limit)")


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')
_TURNS_KEYS = frozenset(f'"{key}"' for key in TURNS_KEYS)


def refuse_long_body_unparsed(text: str, source: str) -> None:
    """``check_body_messages`` on a single JSON object before it is parsed: parsing 200,000 small messages
    only to refuse them costs 9-10x the file. Only a document that starts with ``{`` and holds more ``"role"``
    strings than the limit (a C-speed count) is scanned; the objects of its top-level ``messages``,
    ``contents`` or ``input`` array are counted without building them."""
    if text.count('"role"') <= MAX_BODY_MESSAGES or not text.lstrip().startswith("{"):
        return
    depth, previous, target, count = 0, "", 0, 0
    for token in _TOKEN.finditer(text):
        t = token.group()
        if t[0] == '"':
            previous = t
            continue
        if t in "[{":
            depth += 1
            if t == "[" and depth == 2 and previous in _TURNS_KEYS:
                target, count = depth, 0
            elif t == "{" and target and depth == target + 1:
                count += 1
        else:
            if target and depth == target:
                check_body_messages(count, source, "request 0")
                target = 0
            depth -= 1
        previous = ""


def read_input(path: Path) -> bytes:
    """The one gate every reader opens a file through: a regular file of at most the limit, or one sentence.

    The file is opened without blocking and checked on the open descriptor, so a FIFO (whose open would
    wait for a writer), a directory or a device (``/dev/zero``, whose ``st_size`` is 0) is refused as
    "not a regular file", and at most the limit plus one byte is ever read (a file growing while it is
    read cannot exhaust memory either). Symlinks are followed: a link to a regular file reads it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise MalformedTraceError(str(path), err.strerror or str(err)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a directory" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode) \
                else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode) else "a socket"
            raise MalformedTraceError(str(path), f"not a regular file ({kind}); give the path of a trace file")
        check_input_size(path, info.st_size)
        chunks, total = [], 0
        while total <= MAX_INPUT_BYTES:
            chunk = os.read(fd, min(1 << 24, MAX_INPUT_BYTES + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        check_input_size(path, total)
        return b"".join(chunks)
    except OSError as err:
        raise MalformedTraceError(str(path), err.strerror or str(err)) from None
    finally:
        os.close(fd)


_LONG_INT = re.compile(r"(?:(?<=[:,\[])|(?<=\s)|^)-?\d{" + str(sys.get_int_max_str_digits() + 1) + ",}")


def number_too_long(text: str, source: str, line: int = 1) -> MalformedTraceError:
    """The error for JSON holding an integer Python will not convert (over ``sys.get_int_max_str_digits()``
    digits: ``json`` raises a bare ValueError), located at the number when it can be found."""
    found = _LONG_INT.search(text)
    if found is None:
        return MalformedTraceError(source, "a number is too long to read", line, 1)
    before = text[:found.start()]
    line_at = line + before.count("\n")
    column = found.start() - (before.rfind("\n") + 1) + 1
    return MalformedTraceError(source, f"a number of {len(found.group().lstrip('-'))} digits is too long to read",
                               line_at, column)
