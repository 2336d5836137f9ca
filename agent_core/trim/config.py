"""Policy parameters, derived from each policy's typed config.

Every policy declares its parameters once, as a frozen dataclass with a
docstring under each field, choices as ``Literal`` and its defaults. The
CLI's ``--param key=value`` parsing, the studio's Replay forms and
``describe`` all read them through ``params_of``; nothing else lists a
policy's parameters, types or defaults.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from dataclasses import dataclass
from typing import Any, Literal, Union

from .base import PolicyError

FROM_TRACE = "from_trace"
"""Field metadata key: the value is the trace's own (the model) and is filled in from it, never asked for."""

_TRUE = {"1", "true", "yes", "on", "y"}
_FALSE = {"0", "false", "no", "off", "n"}
_NONE = {"", "none", "null"}


@dataclass(frozen=True)
class Param:
    """One config field, as the CLI parses it and the studio shows it."""

    name: str
    """The field's name (the ``key`` of ``--param key=value``)."""
    kind: type
    """``int``, ``bool`` or ``str`` (choices are strings)."""
    choices: tuple[str, ...] | None
    """The ``Literal`` values the field accepts; None when it takes any value of ``kind``."""
    optional: bool
    """Whether None is allowed (it means the default the docstring describes)."""
    default: Any
    """The config's default."""
    help: str
    """The field's docstring, on one line."""
    from_trace: bool
    """Filled in from the trace (the model), so neither asked for nor shown in labels."""


def _split(hint: Any) -> tuple[type, tuple[str, ...] | None, bool]:
    """(kind, choices, optional) of a resolved type hint such as ``int | None`` or ``Literal["a", "b"]``."""
    args = typing.get_args(hint)
    optional = False
    if typing.get_origin(hint) in (Union, types.UnionType):
        optional = type(None) in args
        rest = [a for a in args if a is not type(None)]
        hint = rest[0]
        args = typing.get_args(hint)
    if typing.get_origin(hint) is Literal:
        return str, tuple(args), optional
    return hint, None, optional


@functools.cache
def _field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal right under it), whitespace folded."""
    body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant) and isinstance(after.value.value, str)):
            docs[node.target.id] = " ".join(after.value.value.split())
    return docs


@functools.cache
def params_of(config: type) -> tuple[Param, ...]:
    """The fields of a config dataclass, in declaration order."""
    hints = typing.get_type_hints(config)
    docs = _field_docs(config)
    out = []
    for f in dataclasses.fields(config):
        kind, choices, optional = _split(hints[f.name])
        out.append(Param(f.name, kind, choices, optional, f.default, docs.get(f.name, ""),
                         bool(f.metadata.get(FROM_TRACE))))
    return tuple(out)


def coerce(policy: str, config: type, key: str, value: Any) -> Any:
    """``value`` for field ``key`` of ``policy``'s config: strings are parsed to the field's type.

    None (also for the strings ``none``, ``null`` and the empty string where the
    field allows it) means "the default".

    Raises:
        PolicyError: no such field, a value that does not parse, or one not among the choices.
    """
    p = next((p for p in params_of(config) if p.name == key), None)
    if p is None:
        known = ", ".join(p.name for p in params_of(config)) or "none"
        raise PolicyError(f"{policy} has no parameter {key!r} (parameters: {known})")
    if not isinstance(value, str):
        return value
    text = value.strip()
    if text.lower() in _NONE and (p.optional or p.kind is str):
        return None
    if p.choices is not None:
        if text not in p.choices:
            raise PolicyError(f"{policy}: {key} must be one of {', '.join(p.choices)}, not {value!r}")
        return text
    if p.kind is str:
        return text
    if p.kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise PolicyError(f"{policy}: {key} must be true or false, not {value!r}")
    try:
        return int(text)
    except ValueError:
        raise PolicyError(f"{policy}: {key} must be an integer, not {value!r}") from None


def at_least_one(config: Any, *names: str) -> None:
    """Raise ``PolicyError`` for the first of the config's fields ``names`` that is below 1."""
    for name in names:
        if getattr(config, name) < 1:
            raise PolicyError(f"{name} must be at least 1")


def shown(config: Any) -> str:
    """``max_tokens=2000, reserve_for_output=500``: the fields a label shows (set, and not the trace's own)."""
    return ", ".join(f"{p.name}={getattr(config, p.name)}" for p in params_of(type(config))
                     if not p.from_trace and getattr(config, p.name) is not None)


def as_params(config: Any) -> dict:
    """The config as a plain dict, fields in declaration order (what ``params()`` records)."""
    return {p.name: getattr(config, p.name) for p in params_of(type(config))}


class Configured:
    """Mixin for a policy whose parameters are exactly its typed ``config``: ``params()`` derives from it."""

    config: Any
    """The policy's frozen config dataclass."""

    def params(self) -> dict:
        """The parameters as ``MemoryEvent.params`` and the replay report record them."""
        return as_params(self.config)
