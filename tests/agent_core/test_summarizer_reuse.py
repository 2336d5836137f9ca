"""The extractive summarizer starts each fold from the facts it wrote last (``ExtractiveSummarizer._last``) instead
of parsing them back from the summary's text; the reference is a fresh summarizer per fold, which can only parse.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.core.msg import Msg
from agent_core.trim import summarizers
from agent_core.trim.summarizers import ExtractiveSummarizer

# fact-bearing words, sentence ends, and every line break str.splitlines cuts at (a fact holding one reads back as
# two lines: the summarizer must then parse, as before)
_PIECES = ["my name is Ana", "order A-1234", "I prefer tea", "42", "ok", "。", ". ", "!", "\n", "\r", "\x0b", "\x1c",
           "\x85", "\u2028", "- ", " ", "remember 7"]
_TURN = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=8).map("".join)


@settings(max_examples=200, deadline=None)
@given(folds=st.lists(st.lists(st.tuples(st.sampled_from(["user", "assistant"]), _TURN), max_size=4), max_size=8),
       max_facts=st.integers(1, 6))
def test_reusing_the_last_facts_writes_what_parsing_them_back_writes(folds, max_facts):
    mine = ExtractiveSummarizer(max_facts)
    previous = None
    for fold in folds:
        dropped = [Msg(role=role, content=text) for role, text in fold]
        want = ExtractiveSummarizer(max_facts).summarize(previous, dropped)
        assert mine.summarize(previous, dropped) == want
        previous = want


def test_a_fold_that_follows_the_last_summary_does_not_parse_it():
    parsed = []
    original = summarizers.summary_facts

    def counting(text):
        parsed.append(text)
        return original(text)
    s = ExtractiveSummarizer()
    previous = None
    summarizers.summary_facts = counting
    try:
        for i in range(50):
            previous = s.summarize(previous, [Msg(role="user", content=f"my order is A-{1000 + i}.")])
    finally:
        summarizers.summary_facts = original
    assert parsed == [None]          # only the first fold, which has no summary before it
