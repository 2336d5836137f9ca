"""A big trace file's texts counted while the file is parsed: a forked child warms the on-disk token store.

A first replay of a 25,000-call trace parses the file (about 1.0 s) and only then counts its 50,001 messages
(1.6 s of BPE on one core, which ``counting.py`` splits over two processes). Counting needs no parse: a count is
a pure function of a text, and the on-disk store keeps counts by text digest (``trace/token_store.py``). So a
child forked before the parse reads the file's lines itself and counts every string that may be a message's text
into the store, while this process parses on the other core. When this process is about to count, ``share``
counts the stream from its last message back while the child goes on from its first; where they meet it stops the
child (after the text it is on) and takes its records in (``TokenStore.refresh``), and ``MessageTokens.from_store``
gives each message whose texts are all there its count; only the rest is encoded. Measured at 25,000 calls, the
count ended 2.6-2.7 s into a first replay against 2.9-3.1 s, and token-budget's first run took 0.91x the time
(alternating pairs, ``README.md``).

The child only fills a cache. A string it counts that is no message's text costs time, never a figure; a text it
did not reach is encoded here as before. Started only where it can pay: our own trace format (its first line
says so) of ``MIN_BYTES`` or more, parsed from the file (no parse kept on disk for it, ``ingest/snapshot.py``),
the token store on, fork available and two cores or more. A payload log is left alone: every line repeats the
conversation so far, and its reader skips the repeats unparsed (``ingest/line_log.py``), which a child parsing
each line could not.
"""
from __future__ import annotations

import ctypes
import json
import mmap
import os
from collections.abc import Sequence
from pathlib import Path

from agent_core.core.models import tokenizer
from agent_core.core.msg import Msg
from agent_core.ingest import snapshot
from agent_core.trace.tokens import TokenCounter, get_encoding, token_store
from agent_core.trim.message_tokens import MessageTokens

MIN_BYTES = 8_000_000
"""Smaller files parse in under about 0.3 s: too short a while for a child to count much."""
_HEADER = b'{"type":"header","format":"chain-studio-trace"'


def _encoding(path: Path) -> str | None:
    """The encoding of the model the file's header names (the trace's own model, as ``replay/calls.py :
    trace_model`` finds it for a recorded session); None when the file is not ours."""
    try:
        with open(path, "rb") as f:
            first = f.readline(65_536)
        if not first.startswith(_HEADER):
            return None
        meta = json.loads(first).get("meta")
    except (OSError, ValueError):
        return None
    return tokenizer(meta.get("model") if isinstance(meta, dict) and isinstance(meta.get("model"), str) else None)


NICE = 10
"""The child's niceness. Whether a core is free cannot be measured when the command starts (the last minute's load
average still counts the commands run just before), so the child always starts, at a niceness that leaves a busy
machine's other work the core (on an idle core it runs at full speed all the same)."""


class Warmer:
    """The child counting a trace file's texts into the token store (``start``), from the stream's first message on,
    while this process parses the file and then counts from the stream's last message back (``share``)."""

    def __init__(self, pid: int | None, marks: ctypes.Array, encoding: str) -> None:
        self._pid = pid
        self._marks = marks
        """[0]: the stream messages the child has counted (the file's first so many memory adds); [1]: the lowest
        message this process has taken (the child stops there)."""
        self._cpu_s = 0.0
        self.encoding = encoding
        """The vocabulary it counts in (the header's model's)."""

    @classmethod
    def start(cls, path: str | Path) -> Warmer | None:
        """Fork the child for the trace file at ``path``; None when it would not pay (see the module)."""
        path = Path(path)
        try:
            if path.stat().st_size < MIN_BYTES or not path.is_file():
                return None
        except OSError:
            return None
        encoding = _encoding(path)
        if encoding is None or not hasattr(os, "fork") or (os.cpu_count() or 1) < 2 or token_store(encoding) is None \
                or snapshot.stored(snapshot.file_digest(path)):
            return None
        get_encoding(encoding)      # loaded once, before the fork: the child counts from its start
        marks = (ctypes.c_int64 * 2).from_buffer(mmap.mmap(-1, 16))    # anonymous, shared with the child
        marks[1] = _NONE_TAKEN
        try:
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:
            try:
                _detach()
                _count_strings(path, encoding, marks, os.getppid())
            finally:
                os._exit(0)
        return cls(pid, marks, encoding)

    def share(self, stream: Sequence[Msg], mt: MessageTokens) -> None:
        """Count ``stream`` from its last message back while the child goes on from its first, until the two
        meet; then stop the child and give each message it reached its count from the store (``from_store``).
        Messages the child counted only in part are counted here after all, by ``count_in_two``."""
        if self._pid is None:
            return
        marks, tokens = self._marks, mt.stream_tokens
        k = len(stream)
        while k > marks[0]:
            k -= 1
            marks[1] = k            # taken: the child stops before it
            tokens(stream[k])
        self.stop()
        front = stream[:k]
        mt.from_store([m for m, n in zip(front, mt.known(front)) if n is None])

    def stop(self) -> float:
        """End the child after the text it is on, wait for it and take its counts into this process's store;
        the CPU seconds it used (``counting.lend``), the same on a later call."""
        if self._pid is None:
            return self._cpu_s
        self._marks[1] = -1
        pid, self._pid = self._pid, None
        try:
            _, _, usage = os.wait4(pid, 0)
        except ChildProcessError:
            return 0.0
        self._cpu_s = usage.ru_utime + usage.ru_stime
        store = token_store(self.encoding)
        if store is not None:
            store.refresh()
        return self._cpu_s


_NONE_TAKEN = 1 << 62
_NOT_TEXT = frozenset({"id", "/id", "ts", "started_at", "created"})
"""Keys whose strings are ids or times (of events, responses, tool calls): a new string on nearly every line, 32,000
of the 75,000 at 25,000 calls, that a message's count seldom encodes. The child skips them (the rare one a count
needs is encoded by this process)."""


def _detach() -> None:
    """The child holds none of its parent's files or sockets (a studio server's), runs niced, and has a token store
    of its own: a thread of the parent may have held the shared one's lock when it forked."""
    os.closerange(3, os.sysconf("SC_OPEN_MAX") if hasattr(os, "sysconf") else 1024)
    os.nice(NICE)
    token_store.cache_clear()


def _count_strings(path: Path, encoding: str, marks: ctypes.Array, parent: int) -> None:
    """The child: every distinct string of every line short enough to be encoded whole (but ids and times,
    ``_NOT_TEXT``), counted into the store,
    line by line; after each memory add (the stream's next message), ``marks[0]`` says how many it has done. It
    stops before the message ``marks[1]`` names (this process counts from there on; -1: stop now), and when its
    parent is gone."""
    counter = TokenCounter(encoding=encoding)
    scan = json.JSONDecoder().scan_once     # json.loads without its wrappers (0.3 s of 100,004 lines)
    longest = counter.LONG_TEXT
    count = counter.encode_len
    seen: set[str] = set()
    done = 0
    try:
        with open(path, "rb") as f:
            for number, line in enumerate(f):
                if done >= marks[1] or number % 1024 == 0 and os.getppid() != parent:
                    return
                try:
                    event = scan(line.decode("utf-8"), 0)[0]
                except (ValueError, StopIteration):      # not JSON, or not UTF-8: the parse reports it
                    continue
                stack = [event]
                while stack:
                    value = stack.pop()
                    kind = type(value)
                    if kind is str:
                        if len(value) <= longest and value not in seen:
                            if done >= marks[1]:
                                return
                            seen.add(value)
                            count(value)
                    elif kind is dict:
                        stack.extend([v for k, v in value.items() if k not in _NOT_TEXT])
                    elif kind is list:
                        stack.extend(value)
                if type(event) is dict and event.get("type") == "add" and event.get("source", "memory") == "memory":
                    done += 1
                    marks[0] = done
    finally:
        counter.flush()
