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


ordered_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.sampled_from([0, 0.0, -0.0, 1, 1.0, True]) | st.text(max_size=3),
    lambda c: st.lists(c, max_size=3)
    | st.lists(st.tuples(st.text(max_size=2), c), max_size=3, unique_by=lambda kv: kv[0]).map(dict),
    max_leaves=12)


def _reordered(value, data):
    """``value`` with the keys of some objects (at any depth) in another order, and some leaves changed."""
    if isinstance(value, dict):
        keys = data.draw(st.permutations(list(value)))
        return {k: _reordered(value[k], data) for k in keys}
    if isinstance(value, list):
        return [_reordered(v, data) for v in value]
    return data.draw(st.sampled_from([value, 0, 0.0, -0.0, 1.0, 1]))


@settings(max_examples=300, deadline=None)
@given(ordered_values, st.data())
def test_apply_of_diff_keeps_key_order_and_number_types_at_every_depth(base, data):
    import json
    value = _reordered(base, data)
    rebuilt = _json_patch.apply(base, _json_patch.diff(base, value))
    assert json.dumps(rebuilt) == json.dumps(value)      # json text: key order, 1 vs 1.0, -0.0 vs 0.0
