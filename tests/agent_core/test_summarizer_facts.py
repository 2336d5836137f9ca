"""``is_fact`` runs the digit test first and skips the id and phone patterns, which cannot match without a digit:
it must answer exactly what the seven patterns or-ed together answer (the definition), on any text."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.trim import summarizers as s


def _definition(text: str) -> bool:
    return any(p.search(text) for p in (s._ID_RE, s._EMAIL_RE, s._PHONE_RE, s._NUMBER_RE, s._NAME_RE,
                                         s._PREFERENCE_RE, s._DECISION_RE))


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(list("aZ -_@.+\n٣5我叫") + ["name", "like", "book", "A-", "x@y.z"]),
                max_size=30).map("".join))
def test_is_fact_answers_what_the_seven_patterns_answer(text):
    assert s.is_fact(text) == _definition(text)


def test_the_id_and_phone_patterns_need_a_digit():
    for text in ("A-2024-0715", "+86 138 0013 8000", "ticket AB-12", "工号 A-٢٠٢٤-٠٧١٥"):
        assert s._NUMBER_RE.search(text) and s.is_fact(text)
    assert not s.is_fact("hello there, how are you")
