"""langchain-trim-last: a faithful emulation of langchain_core ``trim_messages(strategy="last")``."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Literal, Sequence

from agent_core.core.msg import Msg
from agent_core.trace.tokens import REPLY_PRIMING

from .base import PolicyError, TrimResult, result_of
from .config import FROM_TRACE, as_params
from .langchain_incremental import LangchainTrimmer
from .message_tokens import MessageTokens

_LC_TYPES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "system": "system",
             "tool": "tool", "function": "function"}


@dataclass(frozen=True)
class LangchainTrimLastConfig:
    """Parameters of langchain-trim-last, as ``trim_messages`` names them."""

    max_tokens: int = 4000
    """The budget, in what token_counter counts."""
    start_on: str | None = None
    """Message type(s) the result must start on (human, ai, tool, system), comma-separated; None for any."""
    include_system: bool = False
    """Keep a leading system message (counted alone, kept even when it alone exceeds the budget)."""
    token_counter: Literal["tiktoken", "len"] = "tiktoken"
    """tiktoken (cookbook count of the list, with priming, as ChatOpenAI counts) or len (one per message)."""
    model: str | None = field(default=None, metadata={FROM_TRACE: True})
    """The model whose tokenizer tiktoken counts with (the trace's own when replaying)."""

    def __post_init__(self) -> None:
        if self.token_counter not in ("tiktoken", "len"):
            raise PolicyError("token_counter must be tiktoken or len")
        for s in (self.start_on or "").split(","):
            if s.strip() and s.strip() not in _LC_TYPES:
                raise PolicyError(f"start_on {s.strip()!r} is not a message type (human, ai, tool, system)")


class LangchainTrimLast:
    """A faithful emulation of langchain_core ``trim_messages(strategy="last")`` (1.8.x).

    Same algorithm, step for step: reverse, binary-search the longest prefix
    whose count fits (at most ``len.bit_length()`` probes), cut back to
    ``start_on``, reverse again; with ``include_system`` a leading system
    message is counted alone (so reply priming is counted twice) and kept
    even when it alone exceeds the budget. No tool-call pairing: it returns
    orphan tool messages and can return nothing at all, as langchain does.

    Parameters: ``LangchainTrimLastConfig`` (``start_on`` may also be a list).
    """

    name = "langchain-trim-last"
    Config = LangchainTrimLastConfig

    def __init__(self, max_tokens: int = LangchainTrimLastConfig.max_tokens, start_on: str | Sequence[str] | None = None,
                 include_system: bool = False, token_counter: str = LangchainTrimLastConfig.token_counter,
                 model: str | None = None):
        if not isinstance(start_on, str) and start_on:
            start_on = ",".join(start_on)
        types = [s.strip() for s in (start_on or "").split(",") if s.strip()]
        self.config = LangchainTrimLastConfig(int(max_tokens), ",".join(types) or None, bool(include_system),
                                              token_counter, model)  # type: ignore[arg-type]
        self.max_tokens = self.config.max_tokens
        self.start_on = types or None
        self.include_system = self.config.include_system
        self.token_counter = token_counter
        self.model = model
        self._tokens = MessageTokens(model)

    def params(self) -> dict:
        # The model only picks the tokenizer; langchain's own parameters are what a trim event records.
        return {k: v for k, v in as_params(self.config).items() if k != "model"}

    def _counter(self) -> tuple[Callable[[Msg], int], int]:
        """The counter as (size of one message, what an empty list counts): langchain's ``token_counter`` sums
        the messages it is given, plus the reply priming for the tiktoken counter."""
        if self.token_counter == "len":
            return (lambda m: 1), 0
        return self._tokens.tokens, REPLY_PRIMING

    @staticmethod
    def _first_max_tokens(messages: list[Msg], max_tokens: int, counter: tuple[Callable[[Msg], int], int],
                          end_on: set[str] | None) -> list[Msg]:
        """langchain's ``_first_max_tokens``: the longest prefix whose count fits (it bisects over
        ``token_counter(messages[:mid])``; a count only grows with the prefix, so the first message that does
        not fit ends it: a running sum over the messages that fit, not a recount of each candidate prefix),
        then back to the last message of an ``end_on`` type."""
        size, empty = counter
        idx, total = 0, empty
        for m in messages:
            total += size(m)
            if total > max_tokens:
                break
            idx += 1
        if end_on:
            while idx > 0 and messages[idx - 1].role not in end_on:
                idx -= 1
        return messages[:idx]

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        msgs = list(messages)
        if not msgs:
            return TrimResult(msgs)
        count = self._counter()
        system = None
        if self.include_system and msgs[0].role == "system":
            system, msgs = msgs[0], msgs[1:]
        remaining = self.max_tokens
        if system is not None:
            remaining = max(0, self.max_tokens - (count[0](system) + count[1]))
        end_on = {_LC_TYPES[s] for s in self.start_on} if self.start_on else None
        kept = self._first_max_tokens(msgs[::-1], remaining, count, end_on)[::-1]
        if system is not None:
            kept = [system] + kept
        return result_of(messages, kept, self.reason_for(len(kept)))

    def reason_for(self, kept: int) -> str:
        """The reason of a trim that kept ``kept`` messages."""
        return (f"langchain trim_messages(strategy='last', max_tokens={self.max_tokens}"
                f"{', start_on=' + repr(','.join(self.start_on)) if self.start_on else ''}"
                f"{', include_system=True' if self.include_system else ''}): kept the "
                f"last {kept} messages that fit, with no tool-call pairing")

    def incremental(self) -> LangchainTrimmer | None:
        """Replay's trimmer: the same suffix from a running count, O(added + dropped) per add
        (``trim/langchain_incremental.py``; a subclass gets ``apply``: it may change the rule)."""
        if type(self) is not LangchainTrimLast:
            return None
        return LangchainTrimmer(self, {_LC_TYPES[s] for s in self.start_on} if self.start_on else None)
