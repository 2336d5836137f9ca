"""A running summary is counted bullet line by bullet line (``MessageTokens._bulleted``), each line once.

Expected values come from tiktoken itself: the cookbook formula over the whole text, encoded in one piece
(3 per message + the role's tokens + the content's tokens). The cost test counts characters handed to the
encoder, not seconds.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agent_core.core.msg import Msg
from agent_core.replay.engine import policy_for_trace, replay
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trace.tokens import get_encoding
from agent_core.trim.message_tokens import MessageTokens
from agent_core.trim.summarizers import SUMMARY_HEADER


def _whole(encoding: str, d: dict) -> int:
    enc = get_encoding(encoding)
    return 3 + len(enc.encode_ordinary(d["role"])) + len(enc.encode_ordinary(d["content"]))


# characters the pre-tokenizers treat differently: letters of both cases, CJK, digits, punctuation, the
# contraction quote, spaces, tabs, newlines, carriage returns, slashes, dashes
_TEXT = st.lists(st.sampled_from(list("aZé我叫09 .,-'s/\t\r\n!?:;_") + ["  ", "\n\n", "- ", "'ll", "1234"]),
                max_size=30).map("".join)


@settings(max_examples=300, deadline=None)
@given(head=_TEXT, lines=st.lists(_TEXT, min_size=4, max_size=12), role=st.just("system"),
       encoding=st.sampled_from(["o200k_base", "cl100k_base"]))
def test_a_bulleted_text_counts_what_tiktoken_counts_whole(head, lines, role, encoding):
    content = head + "".join("\n- " + line for line in lines)
    m = Msg(role=role, content=content)
    mt = MessageTokens("gpt-4o" if encoding == "o200k_base" else "gpt-4")
    assert mt.counter.encoding_name == encoding
    d = m.to_openai()
    assert mt._bulleted(d) is not None
    assert mt.tokens(m) == _whole(encoding, d)


def test_the_summaries_of_a_replay_count_what_tiktoken_counts_whole_and_each_line_is_encoded_once():
    trace = synthetic_trace(600)
    policy = policy_for_trace("summary-window", {"keep_turns": 2}, trace)
    handed = [0]
    result_mt = {}

    from agent_core.replay import _memory

    class Counting(_memory.MessageTokens):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            enc = self.counter.encode_len

            def counted(text):
                handed[0] += len(text)
                return enc(text)
            self.counter.encode_len = counted
            result_mt["mt"] = self

    original = _memory.MessageTokens
    _memory.MessageTokens = Counting
    try:
        result = replay(trace, policy, lint_calls=False)
    finally:
        _memory.MessageTokens = original
    summaries = {}
    for c in result.calls:
        for mid, d in zip(c.payload.ids(), c.payload.messages()):
            if mid.startswith("summary_"):
                summaries[mid] = d
    assert len(summaries) > 100 and all(d["content"].startswith(SUMMARY_HEADER) for d in summaries.values())
    bulleted = [d for d in summaries.values() if result_mt["mt"]._bulleted(d) is not None]
    assert len(bulleted) > len(summaries) // 2
    for d in bulleted:
        assert result_mt["mt"]._bulleted(d) == _whole("o200k_base", d)
    summary_chars = sum(len(d["content"]) for d in summaries.values())
    stream_chars = sum(len(m.text) for m in trace.stream)
    assert summary_chars > 3 * stream_chars            # counting each summary whole encodes this much
    assert handed[0] < stream_chars + summary_chars // 5
