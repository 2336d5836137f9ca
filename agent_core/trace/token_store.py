"""Token counts of texts this machine has encoded before, kept on disk between runs.

Encoding with tiktoken is most of the cost of opening a long trace (50,001 distinct
messages at 25,000 calls: 2.7 s of BPE); reopening the same trace the next day, or
running ``replay`` after ``lint`` on it, encodes the same texts again. The count is a
pure function of the text and the vocabulary, so it is kept here, keyed by a digest:

- One file per vocabulary (its sha256 and tiktoken's version are in the name): a
  changed vocabulary or encoder starts an empty file, never reuses a count.
- A record is a 16-byte keyed BLAKE2b digest of the UTF-8 text, the count and a
  CRC-32 of both. The digest key is random per machine (``salt``, mode 0600), so the
  file says nothing about the texts without it; no text is stored.
- Records are appended in whole writes; a record that fails its CRC (a torn write,
  a damaged file) ends the reading and the file is rewritten with the good ones.
- At most ``MAX_RECORDS`` are kept (the newest half survives a compaction): memory
  stays under about 25 MB whatever was opened before.
- A run whose every text is stored never loads the vocabulary at all (about 1.4 s
  for o200k_base): ``TokenCounter`` loads it on the first text it must encode.

``CHAIN_STUDIO_TOKEN_CACHE`` names the directory, or ``off`` to encode everything
every time.
"""
from __future__ import annotations

import hashlib
import os
import struct
import threading
import zlib
from pathlib import Path

from agent_core.core.caches import cache_root

_RECORD = struct.Struct("<16sII")


class TokenStore:
    """Persistent text-digest -> token-count map for one vocabulary."""

    MAX_RECORDS = 200_000
    """Records kept on disk and in memory; past it the file is rewritten with the newest half."""
    FLUSH_EVERY = 1_024
    """New counts are appended to the file in batches of this many (and at ``flush``)."""

    def __init__(self, path: Path, salt: bytes):
        self.path = path
        self._lock = threading.Lock()
        self._pending: list[bytes] = []
        self._counts: dict[bytes, int] = {}
        self._hasher = hashlib.blake2b(digest_size=16, key=salt)     # keyed once; each digest copies it
        self._read_to = 0
        """How many bytes of the file were read (``refresh`` goes on from there)."""
        self._load()

    @classmethod
    def for_vocabulary(cls, name: str, vocabulary_sha256: str, encoder_version: str) -> TokenStore | None:
        """The store of one vocabulary under ``CHAIN_STUDIO_TOKEN_CACHE`` (default
        ``~/.cache/chain-studio/token-counts``), or None when it is ``off`` or cannot be created."""
        root = cache_root()
        if root is None:
            return None
        try:
            root.mkdir(parents=True, exist_ok=True)
            return cls(root / f"{name}-{vocabulary_sha256[:16]}-tiktoken{encoder_version}.bin", _salt(root))
        except OSError:
            return None

    def digest(self, text: str) -> bytes:
        hasher = self._hasher.copy()    # half the cost of keying a new hasher per text (121,000 texts at 25,000 calls)
        hasher.update(text.encode("utf-8", "surrogatepass"))
        return hasher.digest()

    def get(self, digest: bytes) -> int | None:
        return self._counts.get(digest)

    def put(self, digest: bytes, count: int) -> None:
        self._counts[digest] = count
        with self._lock:
            self._pending.append(_record(digest, count))
            if len(self._pending) >= self.FLUSH_EVERY:
                self._write_pending()

    def flush(self) -> None:
        """Append what was counted since the last write (called at exit, and by whoever finishes a batch)."""
        with self._lock:
            self._write_pending()

    def __len__(self) -> int:
        return len(self._counts)

    def _write_pending(self) -> None:
        if not self._pending:
            return
        data, self._pending = b"".join(self._pending), []
        try:
            if len(self._counts) > self.MAX_RECORDS:
                self._compact()
                return
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError:
            pass            # a read-only or full disk: counts are still right, only not kept

    def _compact(self) -> None:
        newest = list(self._counts.items())[-self.MAX_RECORDS // 2:]
        self._counts = dict(newest)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(b"".join(_record(d, n) for d, n in newest))
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)

    def refresh(self) -> None:
        """Take in the counts another process appended since this store was read (a studio server after its
        counting worker, a replay after its warming child). Read only: a torn tail may be another process's append
        under way, not damage. Reads on from where the last read ended, unless the file was rewritten shorter
        since (a compaction): then whole."""
        self._load(repair=False, resume=True)

    def _load(self, repair: bool = True, resume: bool = False) -> None:
        start = self._read_to if resume else 0
        try:
            with open(self.path, "rb") as f:
                if start and os.fstat(f.fileno()).st_size < start:
                    start = 0
                f.seek(start)
                data = f.read()
        except OSError:
            return
        good = len(data) - len(data) % _RECORD.size
        counts = self._counts
        for offset in range(0, good, _RECORD.size):
            digest, count, check = _RECORD.unpack_from(data, offset)
            if zlib.crc32(digest + count.to_bytes(4, "little")) != check:
                good = offset
                break
            counts[digest] = count
        self._read_to = start + good
        if repair and good != len(data):     # a torn or damaged tail: keep what was good
            try:
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_bytes(data[:good])
                os.chmod(tmp, 0o600)
                os.replace(tmp, self.path)
            except OSError:
                pass


def _record(digest: bytes, count: int) -> bytes:
    return _RECORD.pack(digest, count, zlib.crc32(digest + count.to_bytes(4, "little")))


def _salt(root: Path) -> bytes:
    """The machine's digest key. Replacing it only makes old records miss: a count is never misattributed."""
    path = root / "salt"
    try:
        salt = path.read_bytes()
        if len(salt) == 16:
            return salt
    except OSError:
        pass
    salt = os.urandom(16)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, salt)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return salt
