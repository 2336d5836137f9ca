"""Trim policies beyond ``trim.KeepAll`` / ``trim.MaxMessages``, and the registry replay uses.

Every policy is pure in the sense that matters: ``apply(messages)`` depends
only on its parameters and the list it is given, so the live
``ShortTermMemory`` and replay (which calls ``apply`` after every add,
exactly like the memory does) see the same outcome. Some are *pair-safe*
(an assistant ``tool_calls`` message never loses its tool results and a
tool result never outlives its call): max-messages, sliding-window,
token-budget, summary-window and compositions of those. Two deliberately
are not: naive-drop-oldest (the classic bug) and langchain-trim-last (a
faithful emulation of ``langchain_core.messages.trim_messages(strategy="last")``),
so replay can show how they break.
"""
from __future__ import annotations

import operator
from typing import Any, Callable, Sequence

from agent_core.core.errors import ChainStudioError
from agent_core.core.ids import new_id
from agent_core.core.msg import Msg, openai_dict
from agent_core.trace.tokens import REPLY_PRIMING, TokenCounter, counter_for

from .base import KeepAll, MaxMessages, TrimPolicy, TrimResult, oldest_non_system
from .summarizers import Summarizer, make_summarizer

SUMMARY_ID_PREFIX = "summary"


class PolicyError(ChainStudioError):
    """An unknown policy name or a parameter that does not parse."""


# --- shared helpers -------------------------------------------------------

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


def is_call(m: Msg) -> bool:
    """An assistant message that asks for tools (``tool_calls`` or legacy ``function_call``)."""
    return m.role == "assistant" and (bool(m.tool_calls) or (bool(m.extra) and any(
        k == "function_call" for k, _ in m.extra)))


def is_result(m: Msg) -> bool:
    return m.role in ("tool", "function")


def is_summary(m: Msg) -> bool:
    """A summary message made by summary-window (recognised by its id prefix)."""
    return m.id.startswith(SUMMARY_ID_PREFIX + "_")


def _result(messages: Sequence[Msg], kept: list[Msg], reason: str) -> TrimResult:
    kept_ids = {m.id for m in kept}
    removed = [m for m in messages if m.id not in kept_ids]
    if not removed and len(kept) == len(messages):
        return TrimResult(list(messages))
    return TrimResult(kept, removed, reason)


def _user_cut(messages: Sequence[Msg], turns: int) -> int | None:
    """Index of the user message that starts the last ``turns`` user turns, or None if there are fewer."""
    seen = 0
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            seen += 1
            if seen == turns:
                # Only cut when something non-system lies before it.
                return i if any(m.role != "system" for m in messages[:i]) else None
    return None


# --- policies -------------------------------------------------------------

class NaiveDropOldest:
    """The classic bug: over ``max_messages``, drop the single oldest non-system message.

    No group handling: when the oldest is an assistant ``tool_calls``
    message its tool results stay behind as orphans, which the API rejects.
    """

    name = "naive-drop-oldest"

    def __init__(self, max_messages: int = 40):
        if int(max_messages) < 1:
            raise PolicyError("max_messages must be at least 1")
        self.max_messages = int(max_messages)

    def params(self) -> dict:
        return {"max_messages": self.max_messages}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        kept = list(messages)
        removed: list[Msg] = []
        while len(kept) > self.max_messages:
            i = oldest_non_system(kept)
            if i is None:
                break
            removed.append(kept.pop(i))
        if not removed:
            return TrimResult(kept)
        return TrimResult(kept, removed, f"over max_messages={self.max_messages}: dropped the oldest "
                                         "non-system message, without its tool results or call")


class SlidingWindow:
    """System messages plus the last ``turns`` user turns, cut only where a user message starts."""

    name = "sliding-window"

    def __init__(self, turns: int = 10):
        if int(turns) < 1:
            raise PolicyError("turns must be at least 1")
        self.turns = int(turns)

    def params(self) -> dict:
        return {"turns": self.turns}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        cut = _user_cut(messages, self.turns)
        if cut is None:
            return TrimResult(list(messages))
        kept = [m for m in messages[:cut] if m.role == "system"] + list(messages[cut:])
        return _result(messages, kept, f"more than {self.turns} user turns: dropped the turns before the "
                                       f"last {self.turns}, cutting at a user message")


class TokenBudget:
    """System messages plus the newest whole groups that fit ``max_tokens - reserve_for_output``.

    ``reserve_for_output`` defaults to ``max_tokens // 8``. A group is one message, except that an assistant ``tool_calls`` message
    and its tool results form one group, so pairs are never split. The
    count is the cookbook formula over the whole candidate payload (messages,
    ``tools`` definitions if given, reply priming) -- the formula is a sum,
    so adding groups newest first counts the whole candidate incrementally
    instead of re-tokenizing it per step. Tool results without their call
    (broken input) are dropped. When even the system messages do not fit,
    they are kept anyway and the reason says so.
    """

    name = "token-budget"

    def __init__(self, max_tokens: int = 8000, reserve_for_output: int | None = None, model: str | None = None,
                 tools: list[dict] | None = None):
        max_tokens = int(max_tokens)
        # Default reserve: an eighth of the window (1,000 of 8,000), so a small max_tokens alone still works.
        reserve = max_tokens // 8 if reserve_for_output is None else int(reserve_for_output)
        if max_tokens < 1 or reserve < 0 or reserve >= max_tokens:
            raise PolicyError("token-budget needs max_tokens > reserve_for_output >= 0")
        self.max_tokens = max_tokens
        self.reserve_for_output = reserve
        self.model = model
        self.tools = tools
        self._tokens = MessageTokens(model)
        self._tool_tokens = self._tokens.counter.count_tools(tools)
        # The last output and its count, so the next apply (last output + one message) is O(1).
        self._last: list[Msg] | None = None
        self._last_total = 0
        self._last_groups = 0

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "reserve_for_output": self.reserve_for_output, "model": self.model}

    @property
    def budget(self) -> int:
        """Tokens the prompt may use."""
        return self.max_tokens - self.reserve_for_output

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        fast = self._incremental(messages)
        return fast if fast is not None else self._walk(messages)

    def _walk(self, messages: Sequence[Msg]) -> TrimResult:
        """The definition: newest whole groups first, while the whole candidate fits."""
        tok = self._tokens.tokens
        total = REPLY_PRIMING + self._tool_tokens + sum(tok(m) for m in messages if m.role == "system")
        # No shortcut for "everything fits": the walk also drops a result whose call was
        # dropped while its siblings were still arriving (a group that outgrew the budget mid-way).
        rest = [m for m in messages if m.role != "system"]
        keep: set[str] = set()
        i = len(rest) - 1
        groups = 0
        while i >= 0:
            j = i
            if is_result(rest[i]):
                while j >= 0 and is_result(rest[j]):
                    j -= 1
                if j < 0 or not is_call(rest[j]):
                    i = j               # orphan results: can never be sent, skip them
                    continue
            group = rest[j:i + 1]
            cost = sum(tok(m) for m in group)
            if total + cost > self.budget:
                break
            total += cost
            keep.update(m.id for m in group)
            groups += 1
            i = j - 1
        kept = [m for m in messages if m.role == "system" or m.id in keep]
        return self._finish(messages, kept, total, groups)

    def _incremental(self, messages: Sequence[Msg]) -> TrimResult | None:
        """The same result in amortized O(1) when ``messages`` is this policy's last output plus one
        message (how memory and replay call it): add the new message's tokens, then drop the oldest
        groups until the candidate fits again. None when the input is anything else.

        The check that the input extends the last output is one identity comparison per message
        in C; the rest is O(dropped). The state list is extended and cut in place."""
        last = self._last
        if last is None or len(messages) != len(last) + 1 or not all(map(operator.is_, messages, last)):
            return None
        new = messages[-1]
        groups = self._last_groups
        if self._orphan(last, new):
            return self._finish(messages, list(last), self._last_total, groups, [new])   # never kept
        if not is_result(new) and new.role != "system":
            groups += 1
        total = self._last_total + self._tokens.tokens(new)
        kept = last                               # becomes the new state
        kept.append(new)
        if total <= self.max_tokens - self.reserve_for_output:    # the common case: it fits
            self._last_total, self._last_groups = total, groups
            return TrimResult(list(messages))
        found = self._oldest_groups(kept, total)
        if found is None:
            return self._walk(messages)          # a system message inside a group: rare, take the long way
        cuts, total = found
        removed = [m for a, b in cuts for m in kept[a:b]]
        for a, b in reversed(cuts):
            del kept[a:b]
        return self._finish(messages, kept, total, groups - len(cuts), removed, owned=True)

    def _orphan(self, last: Sequence[Msg], new: Msg) -> bool:
        """Is ``new`` a tool result whose call is not at the end of ``last`` (past results and system
        messages)? Such a result can never be sent, so it is dropped on arrival."""
        if not is_result(new):
            return False
        j = len(last) - 1
        while j >= 0 and (is_result(last[j]) or last[j].role == "system"):
            j -= 1
        return j < 0 or not is_call(last[j])

    def _oldest_groups(self, kept: Sequence[Msg], total: int) -> tuple[list[tuple[int, int]], int] | None:
        """The ``[start, end)`` ranges in ``kept`` of the oldest whole groups that must go for ``total``
        to fit the budget, oldest first, and the total without them; None when a system message sits
        right after a group's results (then only the walk gives the definition's answer).

        Ranges, not a cut list, so replay can cut its parallel lists in step (``_replay_memory.BudgetMemory``)."""
        budget = self.max_tokens - self.reserve_for_output
        tok = self._tokens.tokens
        cuts: list[tuple[int, int]] = []
        n, k = len(kept), 0
        while total > budget:
            while k < n and kept[k].role == "system":   # system messages always stay
                k += 1
            if k == n:
                break
            end = k + 1
            if is_call(kept[k]):
                while end < n and is_result(kept[end]):
                    end += 1
                if end < n and kept[end].role == "system":
                    return None
            cuts.append((k, end))
            for i in range(k, end):
                total -= tok(kept[i])
            k = end
        return cuts, total

    def _reason(self, total: int, groups: int) -> str:
        over = " (the system messages alone exceed it)" if total > self.budget else ""
        return (f"over the token budget {self.budget} (max_tokens={self.max_tokens} - reserve_for_output="
                f"{self.reserve_for_output}){over}: kept the system messages and the newest {groups} whole "
                f"groups ({total} tokens)")

    def _finish(self, messages: Sequence[Msg], kept: list[Msg], total: int, groups: int,
                removed: list[Msg] | None = None, owned: bool = False) -> TrimResult:
        """Keep ``kept`` as the state (``owned``: it is already this policy's own list) and report."""
        if owned:
            self._last, kept = kept, list(kept)
        else:
            self._last = list(kept)
        self._last_total, self._last_groups = total, groups
        reason = self._reason(total, groups)
        if removed is not None:
            return TrimResult(kept, removed, reason) if removed else TrimResult(list(messages))
        return _result(messages, kept, reason)


class SummaryWindow:
    """Like sliding-window, but what falls out is folded into a running summary system message.

    The summary sits after the leading system messages and is replaced (not
    stacked) at each fold. ``summarizer`` is ``extractive`` (offline,
    deterministic) or ``llm`` (needs ``client``; the call is recorded with
    ``purpose="summary"``), or any object with ``summarize(previous, dropped)``.
    """

    name = "summary-window"

    def __init__(self, keep_turns: int = 5, summarizer: str | Summarizer = "extractive", client=None):  # noqa: ANN001
        if int(keep_turns) < 1:
            raise PolicyError("keep_turns must be at least 1")
        self.keep_turns = int(keep_turns)
        self.summarizer: Summarizer = make_summarizer(summarizer, client) if isinstance(summarizer, str) else summarizer

    def params(self) -> dict:
        return {"keep_turns": self.keep_turns, "summarizer": self.summarizer.name}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        cut = _user_cut(messages, self.keep_turns)
        if cut is None:
            return TrimResult(list(messages))
        head = messages[:cut]
        old = next((m for m in head if is_summary(m)), None)
        dropped = [m for m in head if m.role != "system"]
        text = self.summarizer.summarize(old.text if old is not None else None, dropped)
        summary = Msg(role="system", content=text, id=new_id(SUMMARY_ID_PREFIX))
        systems = [m for m in head if m.role == "system" and not is_summary(m)]
        kept = systems + [summary] + list(messages[cut:])
        removed = dropped + ([old] if old is not None else [])
        return TrimResult(kept, removed, f"more than {self.keep_turns} user turns: folded {len(dropped)} older "
                                         f"messages into the running summary ({self.summarizer.name})")


_LC_TYPES = {"human": "user", "user": "user", "ai": "assistant", "assistant": "assistant", "system": "system",
             "tool": "tool", "function": "function"}


class LangchainTrimLast:
    """A faithful emulation of langchain_core ``trim_messages(strategy="last")`` (1.8.x).

    Same algorithm, step for step: reverse, binary-search the longest prefix
    whose count fits (at most ``len.bit_length()`` probes), cut back to
    ``start_on``, reverse again; with ``include_system`` a leading system
    message is counted alone (so reply priming is counted twice) and kept
    even when it alone exceeds the budget. No tool-call pairing: it returns
    orphan tool messages and can return nothing at all, as langchain does.

    Args:
        max_tokens: the budget.
        start_on: message type(s) the result must start on (``human``, ``ai``,
            ``tool``, ``system``, or the OpenAI roles), comma-separated; None for any.
        include_system: keep a leading system message.
        token_counter: ``tiktoken`` (cookbook count of the list, with priming,
            as ChatOpenAI counts) or ``len`` (one per message).
    """

    name = "langchain-trim-last"

    def __init__(self, max_tokens: int = 4000, start_on: str | Sequence[str] | None = None,
                 include_system: bool = False, token_counter: str = "tiktoken", model: str | None = None):
        if token_counter not in ("tiktoken", "len"):
            raise PolicyError("token_counter must be tiktoken or len")
        self.max_tokens = int(max_tokens)
        if isinstance(start_on, str):
            start_on = [s.strip() for s in start_on.split(",") if s.strip()]
        self.start_on = list(start_on) if start_on else None
        for s in self.start_on or []:
            if s not in _LC_TYPES:
                raise PolicyError(f"start_on {s!r} is not a message type (human, ai, tool, system)")
        self.include_system = bool(include_system)
        self.token_counter = token_counter
        self.model = model
        self._tokens = MessageTokens(model)

    def params(self) -> dict:
        return {"max_tokens": self.max_tokens, "start_on": ",".join(self.start_on) if self.start_on else None,
                "include_system": self.include_system, "token_counter": self.token_counter}

    def _counter(self) -> Callable[[Sequence[Msg]], int]:
        if self.token_counter == "len":
            return len
        tok = self._tokens.tokens
        return lambda msgs: sum(tok(m) for m in msgs) + REPLY_PRIMING

    @staticmethod
    def _first_max_tokens(messages: list[Msg], max_tokens: int, count: Callable[[Sequence[Msg]], int],
                          end_on: set[str] | None) -> list[Msg]:
        if not messages:
            return messages
        if count(messages) <= max_tokens:
            if end_on:
                while messages and messages[-1].role not in end_on:
                    messages.pop()
            return messages
        left, right = 0, len(messages)
        for _ in range(len(messages).bit_length()):
            if left >= right:
                break
            mid = (left + right + 1) // 2
            if count(messages[:mid]) <= max_tokens:
                left = mid
            else:
                right = mid - 1
        idx = left
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
            remaining = max(0, self.max_tokens - count([system]))
        end_on = {_LC_TYPES[s] for s in self.start_on} if self.start_on else None
        kept = self._first_max_tokens(msgs[::-1], remaining, count, end_on)[::-1]
        if system is not None:
            kept = [system] + kept
        return _result(messages, kept, f"langchain trim_messages(strategy='last', max_tokens={self.max_tokens}"
                                       f"{', start_on=' + repr(','.join(self.start_on)) if self.start_on else ''}"
                                       f"{', include_system=True' if self.include_system else ''}): kept the "
                                       f"last {len(kept)} messages that fit, with no tool-call pairing")


class Compose:
    """Policies applied in sequence (e.g. summary-window, then token-budget)."""

    name = "compose"

    def __init__(self, *policies: TrimPolicy):
        if not policies:
            raise PolicyError("compose needs at least one policy")
        self.policies = list(policies)

    def params(self) -> dict:
        return {"policies": [{"name": p.name, "params": p.params()} for p in self.policies]}

    def apply(self, messages: Sequence[Msg]) -> TrimResult:
        current: Sequence[Msg] = messages
        reasons = []
        for p in self.policies:
            r = p.apply(current)
            if r.changed:
                reasons.append(f"{p.name}: {r.reason}")
            current = r.messages
        return _result(messages, list(current), "; then ".join(reasons))


# --- registry -------------------------------------------------------------

POLICIES: dict[str, type] = {
    "keep-all": KeepAll,
    "max-messages": MaxMessages,
    "naive-drop-oldest": NaiveDropOldest,
    "sliding-window": SlidingWindow,
    "token-budget": TokenBudget,
    "summary-window": SummaryWindow,
    "langchain-trim-last": LangchainTrimLast,
    "compose": Compose,
}

DEFAULT_COMPOSE = "summary-window:keep_turns=5+token-budget:max_tokens=8000"
"""What ``make_policy("compose")`` builds when no stages are given (the chat page offers it bare)."""

PAIR_SAFE = ("keep-all", "max-messages", "sliding-window", "token-budget", "summary-window")
"""Policies that never split a tool call from its results (compose of these is pair-safe too)."""

PARAM_TYPES: dict[str, dict[str, type]] = {
    "keep-all": {},
    "max-messages": {"max_messages": int},
    "naive-drop-oldest": {"max_messages": int},
    "sliding-window": {"turns": int},
    "token-budget": {"max_tokens": int, "reserve_for_output": int, "model": str},
    "summary-window": {"keep_turns": int, "summarizer": str},
    "langchain-trim-last": {"max_tokens": int, "start_on": str, "include_system": bool, "token_counter": str,
                            "model": str},
    "compose": {"policies": str},
}
"""Each policy's parameters as the CLI and the studio accept them (strings are parsed to these types)."""

_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}


def _coerce(policy: str, key: str, value: Any) -> Any:
    kind = PARAM_TYPES[policy].get(key)
    if kind is None:
        known = ", ".join(PARAM_TYPES[policy]) or "none"
        raise PolicyError(f"{policy} has no parameter {key!r} (parameters: {known})")
    if not isinstance(value, str):
        return value
    text = value.strip()
    if kind is str:
        return None if text.lower() in ("", "none", "null") else text
    if kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise PolicyError(f"{policy}: {key} must be true or false, not {value!r}")
    try:
        return int(text)
    except ValueError:
        raise PolicyError(f"{policy}: {key} must be an integer, not {value!r}") from None


def parse_params(items: Sequence[str]) -> dict[str, str]:
    """``["max_tokens=2000", "start_on=human"]`` -> dict (values stay strings; ``make_policy`` parses them)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise PolicyError(f"a parameter must look like key=value, not {item!r}")
        out[key.strip()] = value
    return out


def _compose_stages(spec: Any, client) -> list[TrimPolicy]:  # noqa: ANN001
    """``"summary-window:keep_turns=3+token-budget:max_tokens=2000,reserve_for_output=500"`` -> policies."""
    if isinstance(spec, str):
        stages = []
        for part in [p.strip() for p in spec.split("+") if p.strip()]:
            name, _, rest = part.partition(":")
            params = parse_params([kv for kv in rest.split(",") if kv.strip()]) if rest else {}
            stages.append(make_policy(name.strip(), client=client, **params))
        return stages
    stages = []
    for item in spec or []:
        if isinstance(item, (tuple, list)):
            stages.append(make_policy(item[0], client=client, **dict(item[1] if len(item) > 1 else {})))
        elif isinstance(item, dict):
            stages.append(make_policy(item["name"], client=client, **dict(item.get("params") or {})))
        else:
            stages.append(item)
    return stages


def make_policy(name: str, *, client=None, **params: Any) -> TrimPolicy:  # noqa: ANN001
    """Build a policy by registry name; string parameter values are parsed (``"3"`` -> 3).

    ``client`` is the LLMClient the llm summarizer uses. Compose takes
    ``policies`` as a spec string (stages joined by ``+``, each
    ``name:key=value,key=value``) or a list of policies / ``(name, params)``.

    Raises:
        PolicyError: unknown name or parameter, or a value that does not parse.
    """
    cls = POLICIES.get(name)
    if cls is None:
        raise PolicyError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}")
    coerced = {k: _coerce(name, k, v) for k, v in params.items()}
    values = {k: v for k, v in coerced.items() if v is not None}   # None means "the default"
    try:
        if cls is Compose:
            return Compose(*_compose_stages(values.get("policies") or DEFAULT_COMPOSE, client))
        if cls is SummaryWindow:
            return SummaryWindow(client=client, **values)
        return cls(**values)
    except TypeError as err:
        raise PolicyError(f"{name}: {err}") from None
    except ValueError as err:
        raise PolicyError(f"{name}: {err}") from None


def describe(policy: TrimPolicy) -> str:
    """``token-budget(max_tokens=2000, reserve_for_output=500)``: a label for charts and reports."""
    params = policy.params()
    if isinstance(policy, Compose):
        return " + ".join(describe(p) for p in policy.policies)
    # The model only picks the tokenizer; it is the trace's own and would clutter every legend.
    shown = ", ".join(f"{k}={v}" for k, v in params.items() if v is not None and k != "model")
    return f"{policy.name}({shown})" if shown else policy.name
