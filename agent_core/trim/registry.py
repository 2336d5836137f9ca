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

from .anthropic_context import ClearThinking, ClearToolUses
from .base import PolicyError, TrimPolicy
from .budget import TokenBudget
from .compose import Compose
from .config import Param, coerce, params_of, shown
from .items import TruncationAuto
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
    "anthropic-clear-tool-uses": ClearToolUses,
    "anthropic-clear-thinking": ClearThinking,
    "openai-truncation-auto": TruncationAuto,
}
"""Every policy by its registry name; each class's ``Config`` declares its parameters."""

ALIASES: dict[str, str] = {"truncation-auto": "openai-truncation-auto"}
"""Other names a policy answers to (issue 14's name for the Responses API's truncation)."""


def policy_params(name: str) -> tuple[Param, ...]:
    """The parameters of the policy called ``name``, from its config (raises ``PolicyError`` for a bad name)."""
    return params_of(_policy_class(name).Config)


def _policy_class(name: str) -> type:
    cls = POLICIES.get(ALIASES.get(name, name))
    if cls is None:
        raise PolicyError(f"unknown policy {name!r}; choose one of: {', '.join(POLICIES)}")
    return cls


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
    """Build a policy by registry name; string parameter values are parsed to its config's types.

    ``client`` is the LLMClient the llm summarizer uses. Compose takes
    ``policies`` as a spec string (stages joined by ``+``, each
    ``name:key=value,key=value``) or a list of policies / ``(name, params)``.

    Raises:
        PolicyError: unknown name or parameter, or a value that does not parse or is not one of the choices.
    """
    cls = _policy_class(name)
    coerced = {k: coerce(name, cls.Config, k, v) for k, v in params.items()}
    values = {k: v for k, v in coerced.items() if v is not None}   # None means "the default"
    try:
        if cls is Compose:
            return Compose(*_compose_stages(values.get("policies") or cls.Config.policies, client))
        if cls is SummaryWindow:
            return SummaryWindow(client=client, **values)
        return cls(**values)
    except TypeError as err:
        raise PolicyError(f"{name}: {err}") from None
    except ValueError as err:
        raise PolicyError(f"{name}: {err}") from None


def describe(policy: TrimPolicy) -> str:
    """``token-budget(max_tokens=2000, reserve_for_output=500)``: a label for charts and reports.

    The fields of the policy's config that are set, but not the model: it only
    picks the tokenizer, is the trace's own and would clutter every legend.
    """
    if isinstance(policy, Compose):
        return " + ".join(describe(p) for p in policy.policies)
    config = getattr(policy, "config", None)
    if config is not None:
        fields = shown(config)
    else:   # a policy of the caller's own, without a config
        fields = ", ".join(f"{k}={v}" for k, v in policy.params().items() if v is not None and k != "model")
    return f"{policy.name}({fields})" if fields else policy.name
