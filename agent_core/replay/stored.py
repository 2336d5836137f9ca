"""What every replay of one big trace computes alike, kept on disk beside its parsed trace.

Every ``chain-studio replay`` of a 25,000-call trace, whatever the policy, counts the same 50,001 stream
messages (a token-store lookup per text: 0.4-0.7 s), searches the same bodies for the same probes and builds
the same recorded retention matrix (0.5-0.9 s). These depend only on the file's bytes, the code and the
vocabulary, so the first replay leaves them here and the next one (another policy, or the same again) reads
them back:

- One file per (sha256 of the trace file, digest of every ``agent_core`` source and the Python version:
  ``ingest/snapshot.py : code_digest``), in the parsed traces' directory (``CHAIN_STUDIO_TRACE_CACHE``, made
  mode 0700; one another user can write to is not read), written mode 0600 through a temporary file and
  ``os.replace``. JSON after its sha256, never a pickle: reading a planted file runs nothing.
- ``counts``: per encoding (and tiktoken version), the cookbook count of each stream message in stream order.
- ``retention``: per probe list, each stream message's probe bit mask and the recorded retention matrix.
- A file that is short, fails its hash, does not parse or does not fit the trace (another number of stream
  messages or calls, a value of the wrong type or range) is removed and all is computed again, never trusted.
- Only for files the snapshot store keeps (``MIN_BYTES`` or more); at most ``MAX_FILES`` kept.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any, Sequence

from agent_core.core.caches import private
from agent_core.core.msg import openai_dict
from agent_core.ingest import snapshot
from agent_core.trace.model import Trace
from agent_core.trim.message_tokens import MessageTokens

from ._memory import recorded_tokens
from .calls import chat_calls
from .engine import replay_order
from .probes import Probe, ProbeRetention, RetentionMatrix, body_masks, recorded_retention, remember_masks
from .result import Drop

FORMAT = "chain-studio-replay-facts/1"
"""The ``format`` of a stored document; another value is not read."""
MAX_FILES = 16
"""Documents kept; the least recently written beyond this are removed."""



def probes_key(probes: Sequence[Probe]) -> str:
    """What identifies a set of probes for a stored retention entry (here and in a studio server's view store)."""
    return json.dumps([[p.label, p.pattern, p.regex, p.kind, p.origin] for p in probes], ensure_ascii=False)


def _counts_key(mt: MessageTokens) -> str:
    import tiktoken

    return f"{mt.counter.encoding_name}:{tiktoken.__version__}"


def _ints(value: Any, n: int) -> bool:
    return type(value) is list and len(value) == n and all(type(v) is int and v >= 0 for v in value)


def _opt_int(value: Any) -> bool:
    return value is None or type(value) is int


class TraceFacts:
    """The stored facts of one trace file (empty when none were stored); ``save`` writes what was added."""

    def __init__(self, path: Path | None, doc: dict) -> None:
        self.path = path
        """The document's file (None: storing is off for this trace)."""
        self.doc = doc
        self.changed = False
        self.reads = 0
        """Stored parts this process used (counts, masks, matrices): work it did not do again."""

    @classmethod
    def open(cls, trace_file: str | Path, trace: Trace) -> TraceFacts:
        """The facts stored for ``trace`` (parsed from ``trace_file``); a damaged or ill-fitting file is removed."""
        fresh = {"format": FORMAT, "stream": trace.stream_length, "calls": [c.index for c in chat_calls(trace)],
                 "counts": {}, "retention": {}}
        digest = snapshot.file_digest(Path(trace_file))
        root = snapshot.directory()
        if digest is None or root is None:
            return cls(None, fresh)
        key = hashlib.sha256(f"{digest}\0{snapshot.code_digest()}".encode()).hexdigest()
        path = root / f"replay-{key}.json"
        if not private(root):
            return cls(path, fresh)
        try:
            data = path.read_bytes()
        except OSError:
            return cls(path, fresh)
        try:
            check, body = data[:64], data[65:]
            if len(data) < 65 or data[64:65] != b"\n" or hashlib.sha256(body).hexdigest().encode() != check:
                raise ValueError("damaged")
            doc = json.loads(body)
            if (type(doc) is not dict or doc.get("format") != FORMAT or doc.get("stream") != fresh["stream"]
                    or doc.get("calls") != fresh["calls"] or type(doc.get("counts")) is not dict
                    or type(doc.get("retention")) is not dict):
                raise ValueError("another trace or format")
        except (ValueError, RecursionError):       # json.JSONDecodeError and UnicodeDecodeError are ValueErrors
            path.unlink(missing_ok=True)
            return cls(path, fresh)
        return cls(path, doc)

    # --- token counts ------------------------------------------------------

    def seed_counts(self, trace: Trace, mt: MessageTokens) -> list[int] | None:
        """Give each stream message its stored count in ``mt``'s encoding (``MessageTokens.remember``) and return
        each recorded call's (``engine.replay_order``); None when none are stored (an ill-formed entry is dropped)."""
        key = _counts_key(mt)
        entry = self.doc["counts"].get(key)
        if entry is None:
            return None
        if type(entry) is not dict or not _ints(entry.get("stream"), len(trace.stream)) or \
                not _ints(entry.get("calls"), len(self.doc["calls"])) or not mt.remember(trace.stream, entry["stream"]):
            del self.doc["counts"][key]
            self.changed = True
            return None
        self.reads += 1
        return entry["calls"]

    def keep_counts(self, trace: Trace, mt: MessageTokens) -> None:
        """Store the counts ``mt`` holds for every stream message and the recorded calls' (nothing when one is
        missing)."""
        key = _counts_key(mt)
        if key in self.doc["counts"] or self.path is None:
            return
        stream, calls = mt.known(trace.stream), recorded_tokens(trace, replay_order(trace))
        if None not in stream and calls is not None:
            self.doc["counts"][key] = {"stream": stream, "calls": calls}
            self.changed = True

    # --- retention ---------------------------------------------------------

    def recorded_retention(self, trace: Trace, probes: Sequence[Probe],
                           computed: bytes | None = None) -> RetentionMatrix:
        """``probes.recorded_retention``, stored; the probe masks of the stream's bodies are stored with it and
        handed to this process's matcher, so the replayed matrix searches only bodies the stream does not hold.
        ``computed``: ``retention_entry`` as another process made it (``counting.py``'s child), checked as a
        stored entry is, and stored."""
        key = probes_key(probes)
        bodies = [openai_dict(m) for m in trace.stream]
        entry = self.doc["retention"].get(key)
        if entry is not None:
            matrix = _matrix(entry, probes, len(bodies), self.doc["calls"])
            if matrix is not None:
                remember_masks(probes, bodies, entry["masks"])
                self.reads += 1
                return matrix
            del self.doc["retention"][key]
            self.changed = True
        try:
            entry = json.loads(computed) if computed is not None else None
        except ValueError:
            entry = None
        matrix = _matrix(entry, probes, len(bodies), self.doc["calls"]) if entry is not None else None
        if matrix is not None:
            remember_masks(probes, bodies, entry["masks"])
        else:
            matrix = recorded_retention(trace, probes)
            entry = _entry(matrix, probes, bodies) if self.path is not None else None
        if self.path is not None:
            self.doc["retention"][key] = entry
            self.changed = True
        return matrix

    # --- writing -----------------------------------------------------------

    def save(self) -> bool:
        """Write the document when something was added (False: nothing to write, off, or the disk refused)."""
        if not self.changed or self.path is None:
            return False
        try:
            body = json.dumps(self.doc, ensure_ascii=False, separators=(",", ":")).encode()
            root = self.path.parent
            root.mkdir(mode=0o700, parents=True, exist_ok=True)
            if not private(root):
                return False
            tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(hashlib.sha256(body).hexdigest().encode() + b"\n")
                f.write(body)
            os.replace(tmp, self.path)
            files = sorted(root.glob("replay-*.json"), key=lambda p: p.stat().st_mtime_ns)
            for old in files[:-MAX_FILES]:
                old.unlink(missing_ok=True)
        except (OSError, ValueError):
            return False
        self.changed = False
        return True


def retention_entry(trace: Trace, probes: Sequence[Probe], matrix: RetentionMatrix | None = None) -> bytes:
    """What ``TraceFacts.recorded_retention`` stores for ``probes``, as its JSON: of ``matrix`` (the trace's recorded
    matrix for them), else computed here."""
    entry = _entry(matrix or recorded_retention(trace, probes), probes, [openai_dict(m) for m in trace.stream])
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode()


def _matrix(entry: Any, probes: Sequence[Probe], n: int, calls: list[int]) -> RetentionMatrix | None:
    """The stored matrix, or None when anything in it is not what ``_matrix_json`` writes for a trace of ``n``
    stream messages and these chat ``calls``."""
    if type(entry) is not dict or not _ints(entry.get("masks"), n) or \
            any(m >> len(probes) for m in entry["masks"]):
        return None
    doc = entry.get("matrix")
    if type(doc) is not dict or type(doc.get("source")) is not str or type(doc.get("rows")) is not list \
            or len(doc["rows"]) != len(probes):
        return None
    matrix = RetentionMatrix(source=doc["source"], calls=list(calls))
    for probe, row in zip(probes, doc["rows"]):
        if type(row) is not dict:
            return None
        present, drop = row.get("present"), row.get("dropped_by")
        if type(present) is not str or len(present) != len(calls) or present.strip("01") or \
                not all(_opt_int(row.get(k)) for k in ("first_present", "first_gone", "returned")) or \
                type(row.get("why")) is not str:
            return None
        if drop is not None:
            if type(drop) is not list or len(drop) != 5 or type(drop[2]) is not int or \
                    not all(v is None or type(v) is str for i, v in enumerate(drop) if i != 2):
                return None
            drop = Drop(*drop)
        matrix.rows.append(ProbeRetention(probe, [c == "1" for c in present], row["first_present"],
                                          row["first_gone"], drop, row["returned"], row["why"]))
    return matrix


def retention_of_entry(trace: Trace, probes: Sequence[Probe], entry: Any) -> RetentionMatrix | None:
    """The recorded matrix of ``entry`` (``retention_entry``, made by another process from the same file and code),
    its probe masks handed to this process's matcher as a stored entry's are; None, and nothing handed, when it
    does not fit ``trace`` and ``probes`` (then it is computed here)."""
    bodies = [openai_dict(m) for m in trace.stream]
    matrix = _matrix(entry, probes, len(bodies), [c.index for c in chat_calls(trace)])
    if matrix is not None:
        remember_masks(probes, bodies, entry["masks"])
    return matrix


def _entry(matrix: RetentionMatrix, probes: Sequence[Probe], bodies: list[dict]) -> dict:
    return {"masks": body_masks(probes, bodies), "matrix": _matrix_json(matrix)}


def _matrix_json(matrix: RetentionMatrix) -> dict:
    rows = [{"present": "".join("1" if p else "0" for p in row.present), "first_present": row.first_present,
             "first_gone": row.first_gone, "returned": row.returned, "why": row.why,
             "dropped_by": None if row.dropped_by is None else
             [row.dropped_by.msg_id, row.dropped_by.role, row.dropped_by.after_add, row.dropped_by.policy,
              row.dropped_by.reason]}
            for row in matrix.rows]
    return {"source": matrix.source, "rows": rows}
