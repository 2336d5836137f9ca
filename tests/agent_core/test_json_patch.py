from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.trace import _json_patch

values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                      lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c, max_size=3),
                      max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(values, values)
def test_apply_of_diff_rebuilds_the_value_and_leaves_the_base_alone(base, value):
    import copy
    before = copy.deepcopy(base)
    patch = _json_patch.diff(base, value)
    assert _json_patch.apply(base, patch) == value
    assert base == before


def test_a_new_response_is_a_few_leaves():
    a = {"id": "x1", "created": 1, "usage": {"prompt_tokens": 10, "total_tokens": 12}, "choices": [{"message": None}]}
    b = {"id": "x2", "created": 1, "usage": {"prompt_tokens": 15, "total_tokens": 17}, "choices": [{"message": None}]}
    assert _json_patch.diff(a, b) == {"/id": "x2", "/usage/prompt_tokens": 15, "/usage/total_tokens": 17}


def test_pointer_steps_are_escaped_and_list_positions_are_numbers():
    base = {"a/b": {"~x": [1, 2]}, "0": 1}
    value = {"a/b": {"~x": [1, 3]}, "0": 2}
    patch = _json_patch.diff(base, value)
    assert patch == {"/a~1b/~0x/1": 3, "/0": 2}
    assert _json_patch.apply(base, patch) == value


def test_a_malformed_patch_is_a_value_error():
    import pytest
    for bad in ({"nope": 1}, {"/a/5": 1}, [["/a", 1]], "x", {"/a/b/c": 1}, {"/b/c": 1}):
        with pytest.raises(ValueError):
            _json_patch.apply({"a": [1]}, bad)
