"""summary-window's bullet lines counted ahead, by the replay's counting child while this process walks.

summary-window folds at every user turn past the kept ones (17,836 times at 25,000 calls) and counts each new
running summary line by line (``MessageTokens._bulleted``): the lines new in a fold, about three per fold, are
BPE-encoded there, 0.4 s of a first replay's walk. Those lines are fact sentences of the stream's user messages,
known before the walk (``ExtractiveSummarizer.facts_of``), and the counting child (``counting.py``) waits idle
while this process walks. So the child encodes them first, in stream order, ahead of the walk, and appends their
counts in batches to an unlinked file; the walk reads what has arrived whenever it meets a line it has no count
for (``MessageTokens.ahead``), and encodes the line itself when the child is not there yet.

A count is the same function of the same text in either process, so which one encoded a line changes no figure; a
line the child sends that no summary holds costs its time only. A file, not a pipe: the child never waits for
this process to read (it has the recorded retention matrix to build next), and this process never waits for it.
"""
from __future__ import annotations

import os
import pickle
import struct
import tempfile
from collections.abc import Callable, Sequence

from agent_core.core.msg import Msg
from agent_core.trim.base import TrimPolicy
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.summarizers import ExtractiveSummarizer
from agent_core.trim.summary import SummaryWindow

from .counting import write_all

_LENGTH = struct.Struct("<I")
BATCH = 256
"""Lines per batch: the first arrives about 20 ms after the child starts."""


class BulletFeed:
    """The file one child writes bullet-line counts to (``produce``) and this process reads (``pull``)."""

    def __init__(self, stream: Sequence[Msg], mt: MessageTokens, summarizer: ExtractiveSummarizer) -> None:
        self._stream, self._mt, self._summarizer = stream, mt, summarizer
        self._file = tempfile.TemporaryFile()
        self._read_to = 0
        self._done = False

    @classmethod
    def for_policy(cls, policy: TrimPolicy, stream: Sequence[Msg], mt: MessageTokens) -> BulletFeed | None:
        """A feed when ``policy`` is summary-window with the extractive summarizer; else None."""
        if type(policy) is not SummaryWindow or not isinstance(policy.summarizer, ExtractiveSummarizer):
            return None
        return cls(stream, mt, policy.summarizer)

    def produce(self) -> None:
        """In the child: count every distinct fact line of the stream, in order, a batch at a time, then write the
        end (an empty batch). Never raises: the child has more work after this."""
        seen: set[str] = set()
        batch: list[str] = []
        try:
            for line in self._summarizer.facts_of(self._stream):
                if line not in seen:
                    seen.add(line)
                    batch.append(line)
                    if len(batch) == BATCH:
                        self._write(batch)
                        batch = []
            if batch:
                self._write(batch)
            self._write([])
            self._mt.counter.flush()        # and into the token store, for the next run (which has no child)
        except Exception:  # noqa: BLE001 - a full disk, say: this process counts what did not come
            pass

    def _write(self, lines: list[str]) -> None:
        """One batch: its length, then the pickled counts of ``lines``; no lines: the end (length 0)."""
        data = pickle.dumps(self._mt.bullet_counts(lines), pickle.HIGHEST_PROTOCOL) if lines else b""
        write_all(self._file.fileno(), _LENGTH.pack(len(data)) + data)

    def pull(self) -> dict | None:
        """In this process: the counts of the whole batches written since the last pull ({} when none), None once
        the end was read (``MessageTokens.ahead``)."""
        if self._done:
            return None
        fd = self._file.fileno()
        data = os.pread(fd, os.fstat(fd).st_size - self._read_to, self._read_to)
        got: dict = {}
        at = 0
        while at + _LENGTH.size <= len(data):
            (n,) = _LENGTH.unpack_from(data, at)
            if at + _LENGTH.size + n > len(data):
                break       # a batch still being written
            if n == 0:
                self._done = True
                break
            got.update(pickle.loads(data[at + _LENGTH.size:at + _LENGTH.size + n]))     # our own child's bytes
            at += _LENGTH.size + n
        self._read_to += at
        return got if got or not self._done else None

    def before(self, then: Callable[[], bytes]) -> Callable[[], bytes]:
        """The counting child's later work (``count_in_two``'s ``then``): ``produce``, then ``then()``'s bytes."""
        def run() -> bytes:
            self.produce()
            return then()
        return run

    def close(self) -> None:
        self._file.close()
