"""Summarizers for the summary-window policy: what survives when old turns are folded away.

``ExtractiveSummarizer`` is offline and deterministic: it keeps the sentences
of user turns that carry names, numbers, ids, e-mails, phone numbers, stated
preferences and decisions, so a replay gives the same summary every time.
``LLMSummarizer`` asks a model (the configured endpoint or the demo model)
through ``LLMClient`` with ``purpose="summary"``, so the call lands in the
trace beside the chat calls it shaped.
"""
from __future__ import annotations

import re
from typing import Iterable, Iterator, Protocol, Sequence

from agent_core.core.msg import Msg

from .message_tokens import bulleted_text

SUMMARY_HEADER = "Summary of the earlier conversation (facts the user stated):"
_BULLET = "- "

# Facts a later answer may depend on. Kept deliberately broad: a false keep
# costs a few tokens, a false drop is the bug this policy exists to avoid.
_ID_RE = re.compile(r"\b[A-Za-z]{1,6}[-_]?\d[\w-]*\d\b|\b[A-Z]{1,6}-\d+\b")
_EMAIL_RE = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE_RE = re.compile(r"(?:\+?\d[\d\s-]{6,}\d)")
_NUMBER_RE = re.compile(r"\d")
_NAME_RE = re.compile(
    r"我叫|我的名字|名字是|我是|my name is|\bI am [A-Z]|\bI'm [A-Z]|\bcall me\b|\bname\b", re.IGNORECASE)
_PREFERENCE_RE = re.compile(
    r"我喜欢|我不喜欢|我偏好|我更喜欢|我想要|我希望|请用|不要|别|记住|以后|总是|always|never|prefer|"
    r"\blike\b|\bdon't\b|\bplease (?:use|remember|keep)\b|\bremember\b|\bfrom now on\b",
    re.IGNORECASE)
_DECISION_RE = re.compile(
    r"决定|选择|就用|确定|定了|改成|取消|预订|订|我要|we'll|we will|I'll|I will|decided|decide|let's|go with|"
    r"choose|chose|book|cancel|confirm|switch to",
    re.IGNORECASE)
_SENTENCE_SPLIT = re.compile(r"(?<=[。！？!?；;\n])|(?<=\.)\s+")
MAX_FACTS = 60
MAX_FACT_CHARS = 300


class Summarizer(Protocol):
    """Folds dropped messages into the running summary."""

    name: str

    def summarize(self, previous: str | None, dropped: Sequence[Msg]) -> str:
        """The new summary text, given the old one (None at first) and what just fell out."""
        ...


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_SPLIT.split(text) if s and s.strip()]


def is_fact(sentence: str) -> bool:
    """True when a user sentence carries something a later turn may need: an id, an e-mail, a phone number, a
    number, a name, a preference or a decision. An id and a phone number both hold a digit (``\\d``, as
    ``_NUMBER_RE`` has it), so the digit test, run first, answers for them (a replay folds tens of thousands of
    sentences)."""
    return bool(_NUMBER_RE.search(sentence) or _EMAIL_RE.search(sentence) or _NAME_RE.search(sentence)
                or _PREFERENCE_RE.search(sentence) or _DECISION_RE.search(sentence))


def summary_facts(summary: str | None) -> list[str]:
    """The fact lines of a summary this module wrote (or any bulleted text)."""
    if not summary:
        return []
    return [line[len(_BULLET):] for line in summary.splitlines() if line.startswith(_BULLET)]


class ExtractiveSummarizer:
    """Keeps fact-bearing sentences of user turns, verbatim, oldest first.

    Verbatim matters: a probe for ``A-2024-0715`` must still match after
    folding. At most ``max_facts`` lines are kept (the oldest go first once
    over), so the summary cannot grow without bound.
    """

    name = "extractive"

    def __init__(self, max_facts: int = MAX_FACTS):
        self.max_facts = max_facts
        self._last: tuple[str, list[str]] | None = None
        """The last summary written and its fact lines, when parsing it back (``summary_facts``) gives exactly
        them: the next fold starts from it (a replay folds thousands of times) instead of parsing its text."""

    @staticmethod
    def facts_of(messages: Iterable[Msg]) -> Iterator[str]:
        """The fact lines ``summarize`` takes from ``messages``, in order (repeats included): each fact-bearing
        sentence of a user message, cut to ``MAX_FACT_CHARS``."""
        for m in messages:
            if m.role == "user":
                for sentence in _sentences(m.text):
                    sentence = sentence[:MAX_FACT_CHARS]
                    if is_fact(sentence):
                        yield sentence

    def summarize(self, previous: str | None, dropped: Sequence[Msg]) -> str:
        last = self._last
        facts = list(last[1]) if last is not None and previous == last[0] else summary_facts(previous)
        seen = set(facts)
        clean = True        # every new fact reads back as one line (no line break that splitlines would cut at)
        for sentence in self.facts_of(dropped):
            if sentence not in seen:
                seen.add(sentence)
                facts.append(sentence)
                clean = clean and (_BULLET + sentence).splitlines() == [_BULLET + sentence]
        facts = facts[-self.max_facts:]
        if not facts:
            return SUMMARY_HEADER + "\n" + _BULLET + "(nothing to keep)"
        if clean:       # no fact holds a line break, so none holds "\n- ": the text splits back into the facts
            text = bulleted_text(SUMMARY_HEADER, facts)
        else:
            text = SUMMARY_HEADER + "\n" + "\n".join(_BULLET + f for f in facts)
        self._last = (text, facts) if clean else None
        return text


LLM_SUMMARY_PROMPT = (
    "You maintain a running summary of a conversation for an assistant whose history is being trimmed. "
    "Merge the previous summary with the messages below. Keep every name, number, id, e-mail, phone number, "
    "stated preference and decision verbatim. Answer with the summary only, as '- ' bullet lines.")


class LLMSummarizer:
    """Asks a model for the summary; the request is recorded with ``purpose="summary"``.

    Args:
        client: an ``LLMClient`` (its recorder receives the summary call).
    """

    name = "llm"

    def __init__(self, client):  # noqa: ANN001 - LLMClient, imported lazily to keep this module light
        self.client = client

    def summarize(self, previous: str | None, dropped: Sequence[Msg]) -> str:
        lines = [f"Previous summary:\n{previous}" if previous else "Previous summary: (none)", "Messages:"]
        for m in dropped:
            text = m.text
            if m.tool_calls:
                text = (text + " " if text else "") + " ".join(
                    f"[calls {(c.get('function') or {}).get('name')}({(c.get('function') or {}).get('arguments')})]"
                    for c in m.tool_calls if isinstance(c, dict))
            lines.append(f"{m.role}: {text}")
        response = self.client.complete(
            [{"role": "system", "content": LLM_SUMMARY_PROMPT}, {"role": "user", "content": "\n".join(lines)}],
            purpose="summary")
        try:
            content = response["choices"][0]["message"].get("content") or ""
        except (KeyError, IndexError, TypeError, AttributeError):
            content = ""
        return SUMMARY_HEADER + "\n" + content.strip()


def make_summarizer(kind: str, client=None) -> Summarizer:  # noqa: ANN001
    """``extractive`` (offline) or ``llm`` (needs ``client``)."""
    if kind == "extractive":
        return ExtractiveSummarizer()
    if kind == "llm":
        if client is None:
            from agent_core.core.errors import ChainStudioError
            raise ChainStudioError("the llm summarizer needs an LLM client (an endpoint or the demo model)")
        return LLMSummarizer(client)
    from agent_core.core.errors import ChainStudioError
    raise ChainStudioError(f"unknown summarizer {kind!r}: use extractive or llm")
