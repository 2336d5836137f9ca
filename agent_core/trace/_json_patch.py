"""Small structural patches between two JSON values of the same shape.

Consecutive responses of one conversation differ in a few leaves (id,
created, usage, finish_reason); a trace stores each response as the leaves
that changed since the previous one, instead of the whole envelope. A patch
is ``{pointer: new_value, ...}`` where ``pointer`` is an RFC 6901 JSON
Pointer (``"/usage/prompt_tokens"``, ``""`` for the whole value).
"""
from __future__ import annotations

import copy
from functools import lru_cache
from typing import Any


def _pointer(path: list) -> str:
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


@lru_cache(maxsize=1024)
def _steps(pointer: str) -> tuple[str, ...]:
    """A pointer's steps (cached: the same few pointers recur in every response patch)."""
    if pointer and not pointer.startswith("/"):
        raise ValueError(f"a JSON pointer starts with '/': {pointer!r}")
    return tuple(s.replace("~1", "/").replace("~0", "~") for s in pointer.split("/")[1:])


def diff(base: Any, value: Any) -> dict:
    """The patch turning ``base`` into ``value``; a node whose shape changed is replaced whole.

    Shape includes key order: ``apply`` rebuilds ``value`` with the same JSON text, not only an equal value.
    """
    out: list = []
    _diff(base, value, [], out)
    return {_pointer(path): new for path, new in out}


def _diff(base: Any, value: Any, path: list, out: list) -> None:
    if type(base) is dict and type(value) is dict and list(base) == list(value):
        for key, item in value.items():
            _diff(base[key], item, path + [key], out)
    elif type(base) is list and type(value) is list and len(base) == len(value):
        for i, item in enumerate(value):
            _diff(base[i], item, path + [i], out)
    elif type(value) is dict or type(value) is list or type(base) is not type(value) or base != value \
            or (type(value) is float and repr(base) != repr(value)):
        # Python's == is blind to what the bytes show: an object with the same items in another key order
        # (an assistant message sent back as {"id","function","type"}), and -0.0 beside 0.0
        out.append((path, value))


def _shallow(value: Any) -> Any:
    return dict(value) if type(value) is dict else list(value) if type(value) is list else value


def _key(node: Any, step: str) -> Any:
    """A pointer step as the node's key: list positions are decimal, object keys are strings."""
    if type(node) is list:
        if not step.isdigit() or int(step) >= len(node):
            raise ValueError(f"no list position {step!r} in a list of {len(node)}")
        return int(step)
    if type(node) is dict:
        return step
    raise ValueError(f"cannot step into a {type(node).__name__} with {step!r}")


def apply(base: Any, patch: dict) -> Any:
    """A new value: ``base`` (left unchanged) with every ``pointer: value`` set.

    Copy-on-write: only the containers along each patched path are copied;
    the rest is shared with ``base``, so treat both as read-only. Raises
    ``ValueError`` for a malformed patch (it comes from an untrusted file).
    """
    result = _shallow(base)
    copied = {id(result)}
    if not isinstance(patch, dict):
        raise ValueError(f"a patch is an object of pointer: value, got {type(patch).__name__}")
    for pointer, value in patch.items():
        steps = _steps(pointer)
        if not steps:
            result = copy.deepcopy(value)
            copied = {id(result)}
            continue
        node = result
        for step in steps[:-1]:
            if type(node) is dict:      # most steps: no call into _key
                if step not in node:
                    raise ValueError(f"the patch path {pointer!r} does not exist")
                key = step
            else:
                key = _key(node, step)
            child = node[key]
            if id(child) not in copied:
                child = _shallow(child)
                node[key] = child
                copied.add(id(child))
            node = child
        last = steps[-1]
        node[last if type(node) is dict else _key(node, last)] = value
    return result
