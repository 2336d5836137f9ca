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


def apply(base: Any, patch: list) -> Any:
    """A new value: ``base`` (left unchanged) with every ``[path, value]`` set."""
    result = copy.deepcopy(base)
    for path, value in patch:
        if not path:
            result = copy.deepcopy(value)
            continue
        node = result
        for step in path[:-1]:
            node = node[step]
        node[path[-1]] = copy.deepcopy(value)
    return result
