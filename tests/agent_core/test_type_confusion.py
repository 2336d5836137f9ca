"""Type confusion at every field of a Chat Completions message gets its own located finding (issue 17).

A field of the wrong JSON type (``"tool_call_id": [..]``, ``"tool_calls": 7``) must be reported as what it is, at
its native path, naming the JSON type found; never in the wording of a neighbouring rule ("has no tool_call_id")
and never with a provider template left half filled (``messages[{n}]``).

The expected types come from OpenAI's Chat Completions reference (the request body's message objects:
``role``, ``name``, ``tool_call_id`` and a tool call's ``id``, ``type`` and ``function.name`` are strings,
``tool_calls`` an array of objects, ``function`` an object, ``content`` a string or an array of parts), and
the JSON type names from RFC 8259 (object, array, string, number, boolean); neither from the linter.
"""
from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_core.core.errors import MalformedTraceError
from agent_core.ingest.detect import parse_any
from agent_core.lint.profiles import PROFILES
from agent_core.lint.scan import lint_request, lint_trace

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "fixtures"))
import hostile_inputs

PLACEHOLDER = re.compile(r"\{[A-Za-z_][A-Za-z0-9_]*\}")
JSON_TYPES = {dict: "object", list: "array", bool: "boolean", int: "number", float: "number", str: "string"}
# (path inside hostile_inputs.REQUEST, the field's name, the JSON types the API allows there)
FIELDS = [
    (("messages", 1, "role"), "role", {"string"}),
    (("messages", 1, "name"), "name", {"string"}),
    (("messages", 1, "content"), "content", {"string", "array"}),
    (("messages", 2, "tool_calls"), "tool_calls", {"array"}),
    (("messages", 2, "tool_calls", 0), "tool_calls", {"object"}),
    (("messages", 2, "tool_calls", 0, "id"), "id", {"string"}),
    (("messages", 2, "tool_calls", 0, "type"), "type", {"string"}),
    (("messages", 2, "tool_calls", 0, "function"), "function", {"object"}),
    (("messages", 2, "tool_calls", 0, "function", "name"), "name", {"string"}),
    (("messages", 3, "tool_call_id"), "tool_call_id", {"string"}),
    (("messages", 3, "content"), "content", {"string", "array"}),
    (("messages", 4, "content"), "content", {"string", "array"}),
]
_text = st.text(st.characters(blacklist_characters="{}", blacklist_categories=("Cs",)), max_size=6)
_scalar = st.booleans() | st.integers(-10**20, 10**20) | st.floats(allow_nan=False, allow_infinity=False) | _text
JSON_VALUES = st.recursive(_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                           max_leaves=6)
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


def native_path(path: tuple) -> str:
    out = ""
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else (f".{p}" if out else p)
    return out


def json_type(value) -> str:
    return JSON_TYPES[type(value)]


def assert_no_raw_template(findings) -> None:
    for f in findings:
        for text in (f.message, f.api_error or "", f.fix):
            assert not PLACEHOLDER.search(text), (f.rule, f.path, text)


@SETTINGS
@given(st.sampled_from(FIELDS), JSON_VALUES, st.sampled_from(sorted(PROFILES)))
def test_a_field_of_the_wrong_type_is_its_own_finding_at_its_path(field, value, profile):
    path, name, allowed = field
    if json_type(value) in allowed:
        return
    findings = lint_request(hostile_inputs._set(hostile_inputs.REQUEST, path, value), profile=profile)
    assert_no_raw_template(findings)
    where = native_path(path)
    here = [f for f in findings if f.path == where]
    assert [f.rule for f in here] == ["wrong-type"], [(f.rule, f.message) for f in findings]
    text = here[0].message
    assert text.startswith(where) and name in text, text
    assert f"is a{'n' if json_type(value)[0] in 'aeiou' else ''} {json_type(value)}," in text, text
    assert here[0].severity == "error" and here[0].index == path[1]


def test_every_generated_type_confusion_input_names_the_field_and_type():
    """All of the generator's type-confusion inputs, under every profile: no raw template anywhere, and each
    Chat Completions message field given a non-null wrong type has its wrong-type finding at its path."""
    checked = 0
    fields = {native_path(p): allowed for p, _, allowed in FIELDS}
    for item in hostile_inputs.generate():
        if item.family not in ("request", "messages", "jsonl", "otel", "agentscope", "trace"):
            continue
        try:
            trace = parse_any(item.data.decode("utf-8", "surrogatepass"), "<x>")
        except MalformedTraceError:
            continue
        for profile in PROFILES:
            findings = lint_trace(trace, profile=profile)
            assert_no_raw_template(findings)
        m = re.fullmatch(r"(?:request/messages|messages/)\.?(\d+)\.(.+)=(\w+)", item.name)
        if not m:
            continue
        index, rest, kind = m.groups()
        where = native_path(("messages", int(index), *[int(p) if p.isdigit() else p for p in rest.split(".")]))
        value = json.loads(hostile_inputs._dumps(hostile_inputs._value(kind))) if kind not in (
            "bigint", "neg_bigint", "deep_list", "deep_obj") else None
        if where not in fields or value is None or json_type(value) in fields[where]:
            continue
        here = [f for f in lint_trace(trace) if f.path == where]
        assert [f.rule for f in here] == ["wrong-type"], (item.name, [(f.rule, f.message) for f in here])
        assert json_type(value) in here[0].message, (item.name, here[0].message)
        checked += 1
    assert checked >= 40, checked
