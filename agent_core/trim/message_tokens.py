"""Each message's OpenAI dict and token count, computed once per message and kept on it."""
from __future__ import annotations

from typing import Callable, Iterable, Sequence

from agent_core.core.msg import Msg, openai_dict
from agent_core.trace.tokens import TOKENS_PER_MESSAGE, NotStored, TokenCounter, counter_for

_TOKENS_ATTR = "_tokens_"
_BULLET_CUT = "\n- "
_MIN_BULLETS = 4
"""A text with fewer bullet lines is counted whole (``MessageTokens._bulleted``)."""
_PIECES_KEPT = 200_000
_CUT_SAFE = ("o200k_base", "cl100k_base")
"""The encodings whose pre-tokenizer the cut rule of ``MessageTokens._bulleted`` was checked against."""


_known_parts: dict[int, tuple[str, list[str]]] = {}
"""id(text) -> (text, ``text.split("\\n- ")``) for the newest running summaries (``bulleted_text``)."""
_KNOWN_KEPT = 8


def bulleted_text(head: str, lines: list[str]) -> str:
    """``head + "\\n- " + "\\n- ".join(lines)``, remembered as split, so counting it (``MessageTokens._bulleted``)
    reads ``lines`` (the same string objects as the summary before's, their hashes known) instead of splitting
    the text anew. ``lines`` must not hold ``"\\n- "``."""
    text = head + _BULLET_CUT + _BULLET_CUT.join(lines)
    if len(_known_parts) >= _KNOWN_KEPT:
        _known_parts.clear()
    _known_parts[id(text)] = (text, [head, *lines])
    return text


class MessageTokens:
    """Each message's OpenAI dict and cookbook token count, computed once per message.

    Both are kept on the ``Msg`` itself (the dict by ``openai_dict``, the count
    under its encoding's name), so every policy and every replay of a trace
    shares them, a message is tokenized once per encoding however many
    policies replay it, and two messages that share an id in a hand-made
    stream are never confused.
    """

    def __init__(self, model: str | None = None, counter: TokenCounter | None = None):
        self.counter = counter or counter_for(model)
        self._attr = _TOKENS_ATTR + self.counter.encoding_name
        self._pieces: dict[str | tuple[int, str], int] = {}
        """Count of each bullet line seen (``_bulleted``), at most ``_PIECES_KEPT``."""
        self.ahead: Callable[[], dict | None] | None = None
        """Bullet-line counts another process makes ahead (``bullet_counts``; ``replay/bullets.py``): called when a
        line has no count yet, it returns the counts arrived since ({} when none did), None when no more will come."""

    def tokens(self, m: Msg, by_content: bool = True) -> int:
        try:
            return m.__dict__[self._attr]
        except KeyError:
            d = openai_dict(m)
            n = m.__dict__[self._attr] = self._bulleted(d) or self.counter.count_message(d, by_content=by_content)
            return n
        except AttributeError:
            return self.counter.count_message(m.to_openai())

    def stream_tokens(self, m: Msg) -> int:
        """``tokens`` of a message of a trace's stream: the same count, without the cache of counts by content. A
        stream's messages seldom repeat a whole content, and the cache's key (a JSON dump of a message with tool
        calls) cost a third of ``from_store``'s time at 25,000 calls; a text repeated in another message is still
        counted once per process by the on-disk store's lookup (or the counter's cache of short texts)."""
        return self.tokens(m, False)

    def _bulleted(self, d: dict) -> int | None:
        """``count_message(d)`` of a ``{"role": "system", "content"}`` message whose content is a list of ``- `` bullets
        (a running summary: summary-window makes a new one at every fold, mostly the same lines), counted line by
        line so each line is encoded once however many summaries carry it; None for any other message.

        Exact: the text is cut only before the space of each newline-dash-space, and no pre-token of o200k_base or
        cl100k_base holds a non-space followed by a space (a space only starts one; whitespace runs are their
        own), so every cut is a pre-token boundary and BPE never merges across it (the rule
        ``TokenCounter._long_len`` cuts long texts by). A piece never ends in whitespace, so no lookahead changes."""
        if len(d) != 2 or d.get("role") != "system" or self.counter.encoding_name not in _CUT_SAFE:
            return None
        content = d.get("content")
        if type(content) is not str or len(content) > self.counter.LONG_TEXT:
            return None
        known_parts = _known_parts.get(id(content))
        if known_parts is not None and known_parts[0] is content:
            parts = known_parts[1]      # built by ``bulleted_text``: its parts hold no cut, so this is its split
        elif content.count(_BULLET_CUT) < _MIN_BULLETS:
            return None
        else:
            parts = content.split(_BULLET_CUT)
        if len(parts) <= _MIN_BULLETS:
            return None
        known, enc = self._pieces, self.counter.encode_len
        if len(known) > _PIECES_KEPT:
            known.clear()
        # the pieces: parts[0] + "\n-", then " " + part + "\n-" for each middle part, then " " + parts[-1];
        # known by their part (a middle one as itself, the first and the last tagged), built only to encode
        n = TOKENS_PER_MESSAGE + enc(d["role"])
        get = known.get
        middle = parts[1:-1]
        counts = list(map(get, middle))       # a new summary is mostly the lines of the one before: all known
        if None in counts and self._take_ahead():
            counts = list(map(get, middle))
        if None in counts:      # new lines are appended: encode from the first unknown one on
            for i in range(counts.index(None), len(counts)):
                if counts[i] is None:
                    part = middle[i]
                    counts[i] = known[part] = known.get(part) or enc(" " + part + "\n-")
        n += sum(counts)
        for key, piece in (((0, parts[0]), parts[0] + "\n-"), ((1, parts[-1]), " " + parts[-1])):
            k = get(key)
            if k is None and self._take_ahead():
                k = get(key)
            if k is None:
                k = known[key] = enc(piece)
            n += k
        return n

    def bullet_counts(self, lines: Iterable[str]) -> dict[str | tuple[int, str], int]:
        """What ``_bulleted`` keeps for each of ``lines`` as a middle line and as the last one, encoded here: the
        counts another process hands to ``ahead``."""
        enc = self.counter.encode_len
        counts: dict[str | tuple[int, str], int] = {}
        for line in lines:
            counts[line] = enc(" " + line + "\n-")
            counts[(1, line)] = enc(" " + line)
        return counts

    def _take_ahead(self) -> bool:
        """Keep the counts that arrived from ``ahead``; whether any did."""
        if self.ahead is None:
            return False
        got = self.ahead()
        if got is None:
            self.ahead = None
            return False
        self._pieces.update(got)
        return bool(got)

    def remember(self, messages: Sequence[Msg], counts: Sequence[int]) -> bool:
        """Take ``counts`` as the counts of ``messages`` in this encoding (an earlier run's: ``replay/stored.py``);
        False when a message keeps no attributes."""
        attr = self._attr
        try:
            for m, n in zip(messages, counts):
                m.__dict__[attr] = n
        except AttributeError:
            return False
        return True

    def from_store(self, messages: Sequence[Msg]) -> list[Msg]:
        """Count each of ``messages`` whose every text the on-disk store holds, encoding nothing (``replay/warmer.py``
        filled it); the others are returned, uncounted."""
        left = []
        tokens = self.stream_tokens
        with self.counter.stored_only():
            for m in messages:
                try:
                    tokens(m)
                except NotStored:
                    left.append(m)
        return left

    def known(self, messages: Sequence[Msg]) -> list[int | None]:
        """The count of each of ``messages`` this encoding has made or been given so far (None where not)."""
        attr = self._attr
        return [getattr(m, "__dict__", {}).get(attr) for m in messages]

    def dict_and_tokens(self, m: Msg) -> tuple[dict, int]:
        return openai_dict(m), self.tokens(m)

    def dicts_and_total(self, messages: Sequence[Msg]) -> tuple[list[dict], int]:
        """The OpenAI dicts of ``messages`` and their summed tokens."""
        tok = self.tokens
        return [openai_dict(m) for m in messages], sum(tok(m) for m in messages)

    def as_dict(self, m: Msg) -> dict:
        """The message's OpenAI dict (shared: treat as read-only)."""
        return openai_dict(m)
