"""Small structural patches between two JSON values of the same shape.

Consecutive responses of one conversation differ in a few leaves (id,
created, usage, finish_reason); a trace stores each response as the leaves
that changed since the previous one, instead of the whole envelope.
"""
from __future__ import annotations

import copy
from typing import Any

Path = list  # keys and list indices from the root


def diff(base: Any, value: Any, path: Path | None = None, out: list | None = None) -> list:
    """``[[path, new_value], ...]`` turning ``base`` into ``value``; a changed shape replaces the whole node."""
    path = path or []
    out = [] if out is None else out
    if type(base) is dict and type(value) is dict and list(base) == list(value):
        for key, item in value.items():
            diff(base[key], item, path + [key], out)
    elif type(base) is list and type(value) is list and len(base) == len(value):
        for i, item in enumerate(value):
            diff(base[i], item, path + [i], out)
    elif type(base) is not type(value) or base != value:
        out.append([path, value])
    return out


def _shallow(value: Any) -> Any:
    return dict(value) if type(value) is dict else list(value) if type(value) is list else value


def apply(base: Any, patch: list) -> Any:
    """A new value: ``base`` (left unchanged) with every ``[path, value]`` set.

    Copy-on-write: only the containers along each patched path are copied;
    the rest is shared with ``base``, so treat both as read-only.
    """
    result = _shallow(base)
    copied = {id(result)}
    for path, value in patch:
        if not path:
            result = copy.deepcopy(value)
            copied = {id(result)}
            continue
        node = result
        for step in path[:-1]:
            child = node[step]
            if id(child) not in copied:
                child = _shallow(child)
                node[step] = child
                copied.add(id(child))
            node = child
        node[path[-1]] = value
    return result
