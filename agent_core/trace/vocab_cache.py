"""A vocabulary's ranks kept in a binary form beside tiktoken's own copy, read back without parsing its text.

tiktoken reads a vocabulary file (``o200k_base.tiktoken``: 200,000 lines of base64 and a rank) by decoding each
line in Python: 0.3 s (more on a busy machine) of the 0.55 s a process spends before it can encode its first
text; a first replay at 25,000 calls loads it in two processes (``replay/counting.py``). Once tiktoken has built
an encoding from its file (checking the file's sha256 itself), its ranks, pattern and special tokens are
written here as one ``marshal`` blob (0.08 s to read back), and the next process builds the same
``tiktoken.Encoding`` from them: the encoder is tiktoken's, the ranks are the ones tiktoken parsed.

- Where: the directory tiktoken's vocabulary files are in (``tokens._cache_dir``), mode 0700; a directory
  another user can write to is neither read nor written. One file per vocabulary sha256, Python version (the
  marshal format) and tiktoken version; written mode 0600 through a temporary file and ``os.replace``.
- Checked: the file starts with its format line and the sha256 of the rest; a file that fails that, does not
  unmarshal, or holds anything but (name, pattern, {str: int} special tokens, {bytes: int} ranks of the
  expected size) is removed and the vocabulary is read from its text again, never trusted.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import sys
from pathlib import Path
from typing import Any

from agent_core.core.caches import private

MAGIC = b"chain-studio-ranks/1\n"
"""The first line of a ranks file; another is not read."""



def path_for(directory: Path, vocabulary_sha256: str, encoder_version: str) -> Path:
    """The ranks file of one vocabulary for this Python and tiktoken version."""
    py = f"{sys.version_info[0]}{sys.version_info[1]}"
    return directory / f"ranks-{vocabulary_sha256[:32]}-py{py}-tiktoken{encoder_version}.bin"


def _fits(value: Any, n_ranks: int | None) -> bool:
    if type(value) is not tuple or len(value) != 4:
        return False
    name, pat, special, ranks = value
    if type(name) is not str or type(pat) is not str or type(special) is not dict or type(ranks) is not dict:
        return False
    if n_ranks is not None and len(ranks) != n_ranks:
        return False
    if not all(type(k) is str and type(v) is int for k, v in special.items()):
        return False
    return all(type(k) is bytes for k in ranks) and all(type(v) is int for v in ranks.values())


def load(path: Path, n_ranks: int | None = None) -> dict | None:
    """``tiktoken.Encoding`` keyword arguments (name, pat_str, special_tokens, mergeable_ranks) from ``path``; None
    when there is none or it is not private; a damaged or ill-fitting file is removed."""
    if not private(path.parent):
        return None
    try:
        data = path.read_bytes()
    except OSError:
        return None
    head = len(MAGIC) + 65
    try:
        if data[:len(MAGIC)] != MAGIC or data[head - 1:head] != b"\n" or \
                hashlib.sha256(data[head:]).hexdigest().encode() != data[len(MAGIC):head - 1]:
            raise ValueError("damaged")
        value = marshal.loads(data[head:])
        if not _fits(value, n_ranks):
            raise ValueError("not a vocabulary")
    except (ValueError, EOFError, TypeError):
        path.unlink(missing_ok=True)
        return None
    name, pat, special, ranks = value
    return {"name": name, "pat_str": pat, "special_tokens": special, "mergeable_ranks": ranks}


def save(path: Path, encoding: Any) -> bool:
    """Keep the ranks of a ``tiktoken.Encoding`` tiktoken built from its checked file (False: not written)."""
    try:
        value = (encoding.name, encoding._pat_str, dict(encoding._special_tokens), dict(encoding._mergeable_ranks))
    except AttributeError:          # another tiktoken: nothing kept, nothing lost
        return False
    if not _fits(value, None):
        return False
    try:
        body = marshal.dumps(value)
        root = path.parent
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not private(root):
            return False
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
        os.replace(tmp, path)
    except (OSError, ValueError):
        return False
    return True
