"""Type checks at the boundary of the importers: a malformed element becomes one line naming its JSON path.

The importers read well-formed exports; a hostile or damaged file can put any
JSON type anywhere. Before a document reaches an importer, the skeleton the
importer walks is checked here, and the first element of the wrong type is
reported as ``path: resourceSpans[0].scopeSpans[0].spans: expected an array,
got a number`` (a ``MalformedTraceError``, exit 2 in the CLI, one sentence in
the studio). ``guarded`` is the last line of defence around an importer: an
exception it did not mean to raise becomes one line that says so, never a
traceback.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from agent_core.core.errors import ChainStudioError, MalformedTraceError

T = TypeVar("T")

_TYPE_NAMES = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", int: "a number",
               float: "a number", type(None): "null"}
_OTLP_VALUE_KINDS = {"stringValue": (str,), "boolValue": (bool,), "doubleValue": (int, float, str),
                     "intValue": (int, str), "arrayValue": (dict,), "kvlistValue": (dict,), "bytesValue": (str,)}
_MESSAGE_ATTRIBUTES = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions",
                       "gen_ai.tool.definitions")


def type_name(value: Any) -> str:
    return _TYPE_NAMES.get(type(value), type(value).__name__)


class _Checker:
    def __init__(self, source: str):
        self.source = source

    def fail(self, path: str, expected: str, value: Any) -> MalformedTraceError:
        return MalformedTraceError(self.source, f"{path}: expected {expected}, got {type_name(value)}")

    def of(self, value: Any, path: str, kinds: tuple[type, ...], expected: str, optional: bool = True) -> Any:
        if value is None and optional:
            return None
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise self.fail(path, expected, value)
        return value


def check_otlp(value: Any, source: str) -> None:
    """The OTLP JSON skeleton an importer walks: resourceSpans > scopeSpans > spans > attributes."""
    c = _Checker(source)
    exports = value if isinstance(value, list) else [value]
    for e, export in enumerate(exports):
        base = f"[{e}]." if isinstance(value, list) else ""
        c.of(export, base.rstrip(".") or "$", (dict,), "an object", optional=False)
        for r, resource in enumerate(c.of(export.get("resourceSpans"), f"{base}resourceSpans", (list,),
                                          "an array") or []):
            rpath = f"{base}resourceSpans[{r}]"
            c.of(resource, rpath, (dict,), "an object")
            resource = resource or {}
            for key in ("scopeSpans", "instrumentationLibrarySpans"):
                for s, scope in enumerate(c.of(resource.get(key), f"{rpath}.{key}", (list,), "an array") or []):
                    _check_scope(c, scope, f"{rpath}.{key}[{s}]")


def _check_scope(c: _Checker, scope: Any, path: str) -> None:
    c.of(scope, path, (dict,), "an object")
    for n, span in enumerate(c.of((scope or {}).get("spans"), f"{path}.spans", (list,), "an array") or []):
        spath = f"{path}.spans[{n}]"
        c.of(span, spath, (dict,), "an object")
        if not isinstance(span, dict):
            continue
        for key in ("startTimeUnixNano", "endTimeUnixNano"):
            stamp = c.of(span.get(key), f"{spath}.{key}", (int, str), "a number or a string of digits")
            if isinstance(stamp, str) and not stamp.isdigit():
                raise MalformedTraceError(c.source, f"{spath}.{key}: expected a string of digits, got {stamp[:40]!r}")
        for key in ("name", "spanId", "traceId", "parentSpanId"):
            c.of(span.get(key), f"{spath}.{key}", (str,), "a string")
        c.of(span.get("status"), f"{spath}.status", (dict,), "an object")
        for a, attr in enumerate(c.of(span.get("attributes"), f"{spath}.attributes", (list,), "an array") or []):
            apath = f"{spath}.attributes[{a}]"
            c.of(attr, apath, (dict,), "an object", optional=False)
            key = c.of(attr.get("key"), f"{apath}.key", (str,), "a string", optional=False)
            inner = c.of(attr.get("value"), f"{apath}.value", (dict,), "an object")
            for kind, kinds in _OTLP_VALUE_KINDS.items():
                if inner and kind in inner:
                    got = c.of(inner[kind], f"{apath}.value.{kind}", kinds, "a " + kinds[0].__name__
                               .replace("str", "string").replace("dict", "object").replace("int", "number"))
                    if key in _MESSAGE_ATTRIBUTES and kind != "stringValue" and got is not None:
                        raise c.fail(f"{apath}.value ({key})", "a stringValue holding JSON", got)
                    if kind == "intValue" and isinstance(got, str) and not got.lstrip("-").isdigit():
                        raise MalformedTraceError(c.source, f"{apath}.value.intValue: expected a string of digits, "
                                                            f"got {got[:40]!r}")


def guarded(importer: Callable[[], T], source: str, what: str = "the importer") -> T:
    """Run ``importer``; an exception it did not mean to raise becomes one line naming the error (``what``
    names who failed: "the OpenTelemetry importer").

    Only the importers' own input checks are meant to stop a file; anything else here is a bug the input
    revealed, reported as such (with ``CHAIN_STUDIO_DEBUG=1`` the traceback propagates).
    """
    import os
    try:
        return importer()
    except (TypeError, AttributeError, KeyError, IndexError, ValueError) as err:
        if os.environ.get("CHAIN_STUDIO_DEBUG") or isinstance(err, ChainStudioError):
            raise
        raise MalformedTraceError(source, f"{what} could not read this file "
                                          f"({type(err).__name__}: {str(err)[:200]}); this is a Chain Studio bug, "
                                          "please report it with the file") from None
