"""The policy registry: name -> policy, ``make_policy`` from parsed parameters, ``describe``.

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

from typing import Any, Sequence

from .base import PolicyError, TrimPolicy
from .budget import TokenBudget
from .compose import Compose
from .langchain import LangchainTrimLast
from .summary import SummaryWindow
from .window import KeepAll, MaxMessages, NaiveDropOldest, SlidingWindow

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
