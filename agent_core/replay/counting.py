"""A big trace's stream counted by two processes, the first time it is replayed.

A first replay of a 25,000-call trace loads the vocabulary (about 1.4 s) and BPE-encodes 50,001 stream messages
(2.5-2.9 s) before the walk can start, on one core of two. Here a forked child counts every second message not
counted yet while this process counts the others (each loads the vocabulary, at the same time); the child
appends its counts to the on-disk token store (``trace/token_store.py``: whole appends, so both processes may
write) and sends them back through a pipe, in order, as 8-byte integers; this process keeps them on the
messages (``MessageTokens.remember``), where the walk and the recorded payloads read them.

Only while another core is idle (``_idle_core``): on a busy machine the child only competes with this process.
A count is a pure function of the text and the vocabulary, so which process counts a message changes no
figure. A child that fails or answers short is not trusted: its messages are counted here after all.
"""
from __future__ import annotations

import os
import time
from array import array
from collections.abc import Sequence

from agent_core.core.msg import Msg
from agent_core.trim.message_tokens import MessageTokens

MIN_MESSAGES = 10_000
"""Streams with fewer uncounted messages are counted in one process (a fork and a second vocabulary load would
cost more than they save)."""


def _cpu_times(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(idle, total) clock ticks of all the machine's CPUs since boot, from ``/proc/stat``'s first line (proc(5):
    user nice system idle iowait irq softirq steal ...; idle and iowait are idle; guest time is inside user)."""
    try:
        with open(path, "rb") as f:
            fields = f.readline().split()
    except OSError:
        return None
    if len(fields) < 5 or fields[0] != b"cpu":
        return None
    try:
        ticks = [int(v) for v in fields[1:9]]
    except ValueError:
        return None
    return ticks[3] + ticks[4], sum(ticks)


_since: list[tuple[tuple[int, int] | None, float]] = [(_cpu_times(), time.monotonic())]
MIN_WATCH_S = 0.3
"""An idle share measured over less time than this is not trusted (the load average decides)."""


def watch_idle() -> None:
    """Start measuring how idle the machine is from now (``_idle_core`` reads it): the replay calls it before its
    parse, so the parse's own seconds tell whether another core stayed free meanwhile."""
    _since[0] = (_cpu_times(), time.monotonic())


def idle_cores(before: tuple[int, int], after: tuple[int, int], cpus: int) -> float:
    """How many of ``cpus`` were idle on average between two ``_cpu_times`` samples."""
    total = after[1] - before[1]
    return cpus * (after[0] - before[0]) / total if total > 0 else 0.0


def _idle_core() -> bool:
    """Whether another core is free: measured by ``/proc/stat`` since ``watch_idle`` (this process, parsing, keeps
    one core busy, so about one idle core of two means nothing else ran), else the last minute's load average
    leaves one (that average also counts the commands run just before, say a benchmark's previous replay, which
    kept it above 1 on a machine that was free). Measured on the 2-core machine with other work running
    (load 2-5), a child counting beside this process only competed with it: the same wall time or worse, and
    0.5-1 s more CPU (its own vocabulary and store)."""
    cpus = os.cpu_count() or 1
    (before, started), now = _since[0], _cpu_times()
    if before is not None and now is not None and time.monotonic() - started >= MIN_WATCH_S:
        return idle_cores(before, now, cpus) >= IDLE_SHARE
    try:
        return os.getloadavg()[0] <= cpus - 1
    except OSError:
        return False


IDLE_SHARE = 0.7
"""Idle cores (averaged since ``watch_idle``) from which a second counting process is started."""


def _weight(m: Msg) -> int:
    """About how long ``m`` takes to count: its text's length, plus a message's fixed cost."""
    content = m.content
    return 64 + (len(content) if type(content) is str else 0)


def halves(todo: Sequence[Msg]) -> tuple[list[Msg], list[Msg]]:
    """``todo`` in two parts of about the same text length, each in stream order. Every second message would give
    one process all the tool results of a conversation whose rounds alternate (user, assistant; tool, assistant):
    measured at 25,000 calls, this process then waited 0.8 s for the child after counting its own half."""
    mine: list[Msg] = []
    theirs: list[Msg] = []
    a = b = 0
    for m in todo:
        w = _weight(m)
        if a <= b:
            mine.append(m)
            a += w
        else:
            theirs.append(m)
            b += w
    return mine, theirs


def count_in_two(stream: Sequence[Msg], mt: MessageTokens) -> int:
    """Count the messages of ``stream`` that ``mt`` has no count for, half of them in a forked child; how many the
    child counted (0: all counted here, or nothing to count)."""
    todo = [m for m, n in zip(stream, mt.known(stream)) if n is None]
    if len(todo) < MIN_MESSAGES or not hasattr(os, "fork") or not _idle_core():
        return 0
    mine, theirs = halves(todo)
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return 0
    if pid == 0:       # the child: count its half, store and send the counts, leave without exit handlers
        code = 1
        try:
            os.close(read_end)
            data = memoryview(array("q", map(mt.tokens, theirs)).tobytes())
            mt.counter.flush()
            while data:
                data = data[os.write(write_end, data):]
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    try:
        for m in mine:
            mt.tokens(m)
        chunks = []
        while chunk := os.read(read_end, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(read_end)
        _, status = os.waitpid(pid, 0)
    data = b"".join(chunks)
    if os.waitstatus_to_exitcode(status) != 0 or len(data) != 8 * len(theirs):
        for m in theirs:         # not trusted: counted here
            mt.tokens(m)
        return 0
    counts = array("q")
    counts.frombytes(data)
    if not mt.remember(theirs, counts):
        for m in theirs:
            mt.tokens(m)
        return 0
    return len(theirs)
