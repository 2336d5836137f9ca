"""A big trace's stream counted by two processes, the first time it is replayed.

A first replay of a 25,000-call trace loads the vocabulary (about 1.4 s) and BPE-encodes 50,001 stream messages
(2.5-2.9 s) before the walk can start, on one core of two. Here a forked child counts every second message not
counted yet while this process counts the others (each loads the vocabulary, at the same time); the child
appends its counts to the on-disk token store (``trace/token_store.py``: whole appends, so both processes may
write) and sends them back through a pipe, in order, as 8-byte integers; this process keeps them on the
messages (``MessageTokens.remember``), where the walk and the recorded payloads read them.

Once its counts are sent, the child can do more of the replay's work that depends on neither the policy nor
the counts (``then``: the recorded retention matrix, ``stored.py : retention_entry``) while this process walks;
measured at 25,000 calls, a first replay took 0.90x the time (6.56 s against 7.08 s, medians of 6 pairs).

Before it, ``warmer.py``'s child has counted much of the stream into the token store while the file was parsed
(its CPU counts as idle here: ``lend``); what is left may be too little to split, and the child is then forked for
``then`` alone.

Only while another core is idle (``_idle_core``): on a busy machine the child only competes with this process.
A count is a pure function of the text and the vocabulary, so which process counts a message changes no
figure. A child that fails or answers short is not trusted: its messages are counted here after all.
"""
from __future__ import annotations

import os
import time
from array import array
from collections.abc import Callable, Sequence

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


_lent = [0.0]


def watch_idle() -> None:
    """Start measuring how idle the machine is from now (``_idle_core`` reads it): the replay calls it before its
    parse, so the parse's own seconds tell whether another core stayed free meanwhile."""
    _since[0] = (_cpu_times(), time.monotonic())
    _lent[0] = 0.0


def lend(cpu_s: float) -> None:
    """Count ``cpu_s`` seconds that this replay's own helper used since ``watch_idle`` (``warmer.py``'s child) as
    idle: that core was free for this replay's work."""
    _lent[0] += cpu_s


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
    elapsed = time.monotonic() - started
    if before is not None and now is not None and elapsed >= MIN_WATCH_S:
        return idle_cores(before, now, cpus) + _lent[0] / elapsed >= IDLE_SHARE
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


class Counted:
    """What ``count_in_two`` did: how many messages its child counted, and the child's later work (``after``)."""

    def __init__(self, counted: int = 0, pid: int | None = None, fd: int | None = None) -> None:
        self.counted = counted
        """Messages the child counted (0: all counted here, or nothing to count)."""
        self._pid = pid
        self._fd = fd

    @property
    def child(self) -> bool:
        """Whether a child was forked and is not reaped yet (its ``then`` runs or ran there)."""
        return self._pid is not None

    def after(self) -> bytes | None:
        """The bytes the child's ``then`` returned, once it is done (None: no child, or its ``then`` failed)."""
        if self._pid is None:
            return None
        try:
            data = read_all(self._fd)
        finally:
            ok = self._reap()
        return data if ok else None

    def close(self) -> None:
        """Leave the child's later work unread (the child stops at its next write) and reap it."""
        if self._pid is not None:
            self._reap()

    def _reap(self) -> bool:
        pid, self._pid = self._pid, None
        os.close(self._fd)
        _, status = os.waitpid(pid, 0)
        return os.waitstatus_to_exitcode(status) == 0


def write_all(fd: int, data: bytes) -> None:
    """All of ``data`` written to the file descriptor ``fd`` (a pipe may take it in parts)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_all(fd: int) -> bytes:
    """What the file descriptor ``fd`` gives until its end."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def _read_exactly(fd: int, n: int) -> bytes:
    chunks, got = [], 0
    while got < n and (chunk := os.read(fd, min(n - got, 1 << 20))):
        chunks.append(chunk)
        got += len(chunk)
    return b"".join(chunks)


def count_in_two(stream: Sequence[Msg], mt: MessageTokens, then: Callable[[], bytes] | None = None) -> Counted:
    """Count the messages of ``stream`` that ``mt`` has no count for, half of them in a forked child.

    ``then``: more work for the child once its counts are sent, beside this process's next steps (the replay's
    walk); ``Counted.after`` returns what it returned. Without a child it is not called: the caller does that
    work itself. For a big stream the child is started for ``then`` alone when too few messages are left to
    split (``warmer.py`` counted them)."""
    todo = [m for m, n in zip(stream, mt.known(stream)) if n is None]
    split = len(todo) >= MIN_MESSAGES
    if not (split or then is not None and len(stream) >= MIN_MESSAGES) or not hasattr(os, "fork") \
            or not _idle_core():
        return Counted()
    mine, theirs = halves(todo) if split else (todo, [])
    read_end, write_end = os.pipe()
    try:
        pid = os.fork()
    except OSError:
        os.close(read_end)
        os.close(write_end)
        return Counted()
    if pid == 0:       # the child: count its half, store and send the counts, then ``then``; no exit handlers
        code = 1
        try:
            os.close(read_end)
            counts = array("q", map(mt.stream_tokens, theirs)).tobytes()
            mt.counter.flush()
            write_all(write_end, counts)
            if then is not None:
                write_all(write_end, then())
            code = 0
        finally:
            os._exit(code)
    os.close(write_end)
    child = Counted(len(theirs), pid, read_end)
    try:
        for m in mine:
            mt.stream_tokens(m)
        data = _read_exactly(read_end, 8 * len(theirs))
    except BaseException:
        child.close()
        raise
    # Whole counts are trusted: the child counted them all before it wrote any. Without ``then`` it is reaped now.
    counts = array("q")
    if len(data) == 8 * len(theirs) and (then is not None or child.after() is not None):
        counts.frombytes(data)
    if len(counts) != len(theirs) or not mt.remember(theirs, counts):
        child.close()
        for m in theirs:         # not trusted: counted here
            mt.stream_tokens(m)
        return Counted()
    return child
