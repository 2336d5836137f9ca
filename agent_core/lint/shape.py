"""Type confusion in a message: a field whose JSON type is not the one the API defines, as its own finding.

A message from a file may hold anything under a known key (``"tool_call_id": [..]``, ``"tool_calls": 7``,
``"role": {..}``). The pairing rules of the scan (``scan.py``) read such a field as absent or empty and would
word it as their own problem ("has no tool_call_id", "tool_calls set to a number" with the empty-list text).
Here each wrongly typed field becomes one ``wrong-type`` finding at its native path that names the field, the
JSON type found and the type expected (``messages[3].tool_call_id is an array, expected a string``), and the
scan's finding at that same path is left out (``superseded``). The scan calls ``check_types`` once per entry
it feeds and ``superseded`` before it records a finding; ``fill_template`` fills a provider text only when
every placeholder has a value (a template with a placeholder left over is no text the provider sent).

Function arguments are not checked here: ``invalid-tool-arguments`` already names their type, with OpenAI's
exact text. A JSON null counts as absent (the scan's missing-field rules word it).
"""
from __future__ import annotations

from string import Formatter
from typing import Any

from agent_core.apis.chain import MISSING, Entry, relocate

RULE = "wrong-type"
_FORMATTER = Formatter()
_STRING = "a string"
_CONTENT = "a string or an array of content parts"
FIX = "Send the field with the JSON type the API defines (see the finding), or remove it."


def json_type(value: Any) -> str:
    """The JSON type of a parsed value, with its article: ``an object``, ``an array``, ``a string`` ..."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None:
        return "null"
    return "a string" if isinstance(value, str) else type(value).__name__


def type_name(value: Any) -> str:
    """OpenAI's wording for a JSON value's type (``an object``, ``an array`` ...); an absent key reads as null."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if value is None or value is MISSING:
        return "null"
    return "a string"


def type_shown(value: Any) -> str:
    """A value for an explanation: strings quoted, anything else by type (never a deep repr)."""
    return repr(value) if isinstance(value, str) else "missing" if value is None else type_name(value)


def _bad(value: Any, *allowed: type) -> bool:
    return value is not None and value is not MISSING and not isinstance(value, allowed)


def wrong_types(e: Entry) -> list[tuple[str, str, Any, str]]:
    """Every wrongly typed field of ``e``: (native path, field name, value found, what is expected)."""
    if not isinstance(e.native, dict):
        return []       # the scan's invalid-role says the message is not an object
    out: list[tuple[str, str, Any, str]] = []
    if _bad(e.role, str):
        out.append((e.at("role"), "role", e.role, "a string (system, developer, user, assistant or tool)"))
    if _bad(e.content, str, list):
        out.append((e.at("content"), "content", e.content, _CONTENT))
    if e.keys.get("calls") == ".tool_calls" and _bad(e.native.get("name"), str):   # Chat Completions' name
        out.append((e.path + ".name", "name", e.native["name"], _STRING))
    if _bad(e.calls_native, list):
        out.append((e.at("calls"), "tool_calls", e.calls_native, "an array of tool calls"))
    for call in e.calls:
        if call.defect == "not-object":
            out.append((call.path, "tool call", call.native, "an object with id, type and function"))
            continue
        if _bad(call.id, str):
            out.append((call.at("id"), "id", call.id, _STRING))
        if _bad(call.type, str):
            out.append((call.at("type"), "type", call.type, 'the string "function"'))
        if call.defect == "no-function" and isinstance(call.native, dict):
            fn = call.native.get("function")
            if _bad(fn, dict):
                out.append((call.at("function"), "function", fn, "an object with name and arguments"))
        elif _bad(call.name, str):
            out.append((call.at("name"), "function name", call.name, _STRING))
    for result in e.results:
        if _bad(result.id, str):
            out.append((result.at("id"), "tool_call_id", result.id, "a string (the id of the call it answers)"))
    return out


def well_typed(e: Entry) -> bool:
    """The common case, cheaply: every field ``wrong_types`` checks has an allowed type (or the entry is no
    object at all, which the scan words itself). Worked out once per distinct message (``facts.entry_kind``)."""
    native = e.native
    if type(native) is not dict:
        return True
    role, content, calls, name = e.role, e.content, e.calls_native, native.get("name")
    if not ((role is None or type(role) is str) and (name is None or type(name) is str)
            and (content is None or content is MISSING or type(content) is str or type(content) is list)
            and (calls is MISSING or calls is None or type(calls) is list)):
        return False
    for c in e.calls:
        if c.defect is not None or not (type(c.id) is str or c.id is MISSING or c.id is None) \
                or not (type(c.name) is str or c.name is MISSING or c.name is None) \
                or not (type(c.type) is str or c.type is MISSING or c.type is None):
            return False
    for r in e.results:
        if not (type(r.id) is str or r.id is MISSING or r.id is None):
            return False
    return True


def check_types(scan: Any, e: Entry, i: int) -> None:
    """Record a ``wrong-type`` finding through ``scan.emit`` for each wrongly typed field of ``e`` (at index
    ``i`` of the payload the scan reads)."""
    if well_typed(e):
        return
    for path, _field, value, expected in wrong_types(e):
        here = relocate(path, e, i)
        cid = [c.id for c in e.calls if isinstance(c.id, str) and path.startswith(c.path)][:1]
        scan.emit(RULE, i, cid, f"{here} is {json_type(value)}, expected {expected}.", path=here, param=here,
                  code="invalid_type", fix=FIX)


def superseded(rule: str, path: str, e: Entry | None, i: int) -> bool:
    """Whether a finding of ``rule`` at ``path`` (while the scan feeds ``e`` at ``i``) describes a wrongly
    typed field that ``check_types`` reports: then the type finding is its one finding."""
    if rule == RULE or e is None:
        return False
    return any(relocate(p, e, i) == path for p, _, _, _ in wrong_types(e))


def fill_template(template: str | None, fill: dict | None) -> str | None:
    """``template`` with its ``{name}`` placeholders filled from ``fill``; None when any has no value (a half
    filled template is not the provider's text)."""
    if not template:
        return None
    values = fill or {}
    try:
        if any(name is not None and name.split(".")[0].split("[")[0] not in values
               for _, name, _, _ in _FORMATTER.parse(template)):
            return None
        return template.format_map(values)
    except (ValueError, KeyError, IndexError, AttributeError):
        return None
