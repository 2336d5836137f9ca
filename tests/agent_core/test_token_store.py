"""The on-disk token counts: equal to tiktoken's, reused across runs, never trusted when damaged, no text kept."""
from __future__ import annotations

import json
import os

from agent_core.core.paths import SAMPLE_TRACES
from agent_core.ingest.detect import load_any
from agent_core.trace.token_store import _RECORD, TokenStore
from agent_core.trace import tokens as tokens_module
from agent_core.trace.tokens import TokenCounter, get_encoding

# a tool result of the shape that dominates long traces: long enough to be stored
LONG = ("工具结果 " + json.dumps({"rows": [{"id": i, "city": "Paris", "temp_c": 18.5 + i} for i in range(12)]}))


def _counter(tmp_path, salt: bytes = b"s" * 16) -> tuple[TokenCounter, list[str]]:
    """A counter on a store in ``tmp_path`` whose encoder records what it was asked to encode."""
    counter = TokenCounter(encoding="o200k_base")
    counter._store = TokenStore(tmp_path / "o200k.bin", salt)
    encoded: list[str] = []
    counter._load()
    real = counter._encode_ordinary
    counter._encode_ordinary = lambda text: (encoded.append(text), real(text))[1]
    return counter, encoded


def _cookbook(message: dict) -> int:
    enc = get_encoding("o200k_base")
    return 3 + sum(len(enc.encode_ordinary(v)) for v in message.values() if isinstance(v, str))


def test_counts_equal_tiktoken_and_a_second_run_encodes_no_stored_text(tmp_path):
    messages = [{"role": "tool", "tool_call_id": "call_1", "content": LONG + str(i)} for i in range(5)]
    first, encoded = _counter(tmp_path)
    assert [first.count_message(m) for m in messages] == [_cookbook(m) for m in messages]
    assert sum(t.startswith("工具结果") for t in encoded) == 5
    first.flush()
    # one record per distinct text: the five results, "tool" and "call_1"
    assert os.path.getsize(tmp_path / "o200k.bin") == 7 * _RECORD.size

    second, encoded_again = _counter(tmp_path)       # a new process: the store is read from disk
    copies = [dict(m) for m in messages]             # other objects: no identity cache can answer
    assert [second.count_message(m) for m in copies] == [_cookbook(m) for m in messages]
    assert not encoded_again                         # not even the short texts ("tool", "call_1")


def test_a_run_whose_texts_are_all_stored_never_loads_the_vocabulary(tmp_path):
    message = {"role": "user", "content": LONG}
    first = TokenCounter(encoding="o200k_base")
    first._store = TokenStore(tmp_path / "o200k.bin", b"s" * 16)
    expected = first.count_message(message)
    first.flush()
    second = TokenCounter(encoding="o200k_base")
    second._store = TokenStore(tmp_path / "o200k.bin", b"s" * 16)
    assert second.count_message(dict(message)) == expected == _cookbook(message)
    assert second._loaded is None


def test_a_sample_trace_counts_the_same_with_and_without_the_store(tmp_path):
    trace = load_any(SAMPLE_TRACES / "huge_tool_result.jsonl")
    plain = TokenCounter(encoding="o200k_base")
    plain._store = None
    expected = [plain.count_payload(c.messages) for c in trace.calls]
    for _ in range(2):
        counter, _ = _counter(tmp_path)
        assert [counter.count_payload(c.messages) for c in trace.calls] == expected
        counter.flush()


def test_a_damaged_record_is_never_trusted(tmp_path):
    counter, _ = _counter(tmp_path)
    counter.count_message({"role": "user", "content": LONG})
    counter.count_message({"role": "user", "content": LONG + "!"})
    counter.flush()
    path = tmp_path / "o200k.bin"
    data = bytearray(path.read_bytes())
    data[16] ^= 0x01                 # the first record's count, off by one: its CRC no longer matches
    path.write_bytes(bytes(data) + b"\x00" * 7)     # and a torn tail
    counter, encoded = _counter(tmp_path)
    assert len(counter._store) == 0                  # reading stops at the damaged record
    assert path.stat().st_size == 0                  # the file keeps only what was good
    assert counter.count_message({"role": "user", "content": LONG}) == _cookbook({"role": "user", "content": LONG})
    assert LONG in encoded


def test_the_file_holds_no_text_and_another_salt_finds_nothing(tmp_path):
    counter, _ = _counter(tmp_path)
    counter.count_message({"role": "user", "content": LONG})
    counter.flush()
    data = (tmp_path / "o200k.bin").read_bytes()
    assert "Paris".encode() not in data and "工具".encode() not in data
    other, encoded = _counter(tmp_path, salt=b"t" * 16)
    other.count_message({"role": "user", "content": LONG})
    assert LONG in encoded


def test_the_store_is_bounded(tmp_path, monkeypatch):
    monkeypatch.setattr(TokenStore, "MAX_RECORDS", 8)
    monkeypatch.setattr(TokenStore, "FLUSH_EVERY", 4)
    store = TokenStore(tmp_path / "s.bin", b"s" * 16)
    for i in range(20):
        store.put(store.digest(f"text {i}"), i)
    store.flush()
    assert len(store) <= 8 and os.path.getsize(tmp_path / "s.bin") <= 8 * _RECORD.size
    assert store.get(store.digest("text 19")) == 19          # the newest survive


def test_off_turns_it_off(monkeypatch, tmp_path):
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", "off")
    assert TokenStore.for_vocabulary("o200k_base", "ab" * 32, "0") is None
    monkeypatch.setenv("CHAIN_STUDIO_TOKEN_CACHE", str(tmp_path / "counts"))
    store = TokenStore.for_vocabulary("o200k_base", "ab" * 32, "0")
    assert store is not None and (tmp_path / "counts" / "salt").stat().st_mode & 0o077 == 0


def test_refresh_takes_another_process_counts_and_leaves_a_torn_tail_alone(tmp_path):
    """A studio server takes in what its counting worker appended; a half-written record may be the worker's
    append under way, so refresh never rewrites the file."""
    path, salt = tmp_path / "o200k.bin", b"s" * 16
    server, worker = TokenStore(path, salt), TokenStore(path, salt)
    digest = worker.digest(LONG)
    worker.put(digest, 42)
    worker.flush()
    assert server.get(digest) is None
    server.refresh()
    assert server.get(digest) == 42
    with open(path, "ab") as f:
        f.write(b"\x01" * (_RECORD.size // 2))         # a record being appended
    size = os.path.getsize(path)
    server.refresh()
    assert os.path.getsize(path) == size and server.get(digest) == 42


def test_refresh_reads_on_from_where_it_stopped_and_whole_after_a_rewrite(tmp_path):
    """A replay takes in its warming child's counts (replay/warmer.py) once the child is done: only the records
    appended since, and after another process compacted the file (shorter than what was read), all of it."""
    path, salt = tmp_path / "o200k.bin", b"s" * 16
    reader, writer = TokenStore(path, salt), TokenStore(path, salt)
    for i in range(3):
        writer.put(writer.digest(f"{LONG} {i}"), i)
    writer.flush()
    reader.refresh()
    assert reader._read_to == 3 * _RECORD.size
    reads = []
    real_load = TokenStore._load

    def spy(self, repair=True, resume=False):
        reads.append(self._read_to if resume else 0)
        return real_load(self, repair, resume)
    TokenStore._load = spy
    try:
        writer.put(writer.digest(f"{LONG} 3"), 3)
        writer.flush()
        reader.refresh()
        assert reads == [3 * _RECORD.size] and reader.get(reader.digest(f"{LONG} 3")) == 3
        path.write_bytes(path.read_bytes()[-_RECORD.size:])      # rewritten shorter: one record left
        other = TokenStore(tmp_path / "other.bin", salt)
        digest = other.digest("new text after the rewrite")
        with open(path, "ab") as f:
            f.write(_RECORD.pack(digest, 7, __import__("zlib").crc32(digest + (7).to_bytes(4, "little"))))
        reader.refresh()
        assert reader.get(digest) == 7 and reader._read_to == 2 * _RECORD.size
    finally:
        TokenStore._load = real_load


def test_stored_only_counts_from_the_store_and_encodes_nothing(tmp_path):
    counter, encoded = _counter(tmp_path)
    message = {"role": "tool", "tool_call_id": "call_1", "content": LONG}
    expected = _cookbook(message)
    with counter.stored_only():
        try:
            counter.count_message(dict(message))
        except tokens_module.NotStored:
            pass
        else:
            raise AssertionError("a text the store lacks was counted")
    assert encoded == []
    assert counter.count_message(dict(message)) == expected          # encoded now, and stored
    counter.flush()
    fresh, encoded_again = _counter(tmp_path)
    with fresh.stored_only():
        assert fresh.count_message(dict(message)) == expected
    assert encoded_again == []
