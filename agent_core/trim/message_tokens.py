"""Each message's OpenAI dict and token count, computed once per message and kept on it."""
from __future__ import annotations

from typing import Sequence

from agent_core.core.msg import Msg, openai_dict
from agent_core.trace.tokens import TokenCounter, counter_for

_TOKENS_ATTR = "_tokens_"


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

    def tokens(self, m: Msg) -> int:
        try:
            return m.__dict__[self._attr]
        except KeyError:
            n = m.__dict__[self._attr] = self.counter.count_message(openai_dict(m))
            return n
        except AttributeError:
            return self.counter.count_message(m.to_openai())

    def dict_and_tokens(self, m: Msg) -> tuple[dict, int]:
        return openai_dict(m), self.tokens(m)

    def dicts_and_total(self, messages: Sequence[Msg]) -> tuple[list[dict], int]:
        """The OpenAI dicts of ``messages`` and their summed tokens."""
        tok = self.tokens
        return [openai_dict(m) for m in messages], sum(tok(m) for m in messages)

    def as_dict(self, m: Msg) -> dict:
        """The message's OpenAI dict (shared: treat as read-only)."""
        return openai_dict(m)
