"""summary-window's head (the system prompt and a new running summary per fold) does not restart the window
linter's leader scan: two plain messages of one role at the same place scan alike (``WindowLint._lints_alike``).

The reference is the linter on each whole payload (``lint_payload``); the cost test counts leader restarts and
messages fed, not seconds.
"""
from __future__ import annotations

import pytest
from test_replay_linear import _assert_findings_are_whole_payload_lints, _two_tools

from agent_core.core.msg import Msg
from agent_core.lint import windows
from agent_core.replay.engine import replay
from agent_core.trace.synthetic import synthetic_trace
from agent_core.trim.summary import SummaryWindow


def _counting(mp):
    starts, fed = [0], [0]
    start, extend = windows.WindowLint._start, windows.WindowLint._extend

    def counted_start(self, head):
        starts[0] += 1
        return start(self, head)

    def counted_extend(self, messages):
        fed[0] += len(messages)
        return extend(self, messages)
    mp.setattr(windows.WindowLint, "_start", counted_start)
    mp.setattr(windows.WindowLint, "_extend", counted_extend)
    return starts, fed


@pytest.mark.parametrize("profile", ["openai", "deepseek"])
def test_summary_window_findings_equal_whole_payload_lints(profile):
    trace = _two_tools(synthetic_trace(400))      # an undeclared tool: findings in many windows
    result = replay(trace, SummaryWindow(2), profile=profile)
    _assert_findings_are_whole_payload_lints(result, profile)
    assert sum(1 for d in result.drops if d.msg_id.startswith("summary_")) > 100
    assert any(c.findings for c in result.calls)


def test_summary_window_lints_with_one_leader():
    trace = synthetic_trace(400)
    with pytest.MonkeyPatch.context() as mp:
        starts, fed = _counting(mp)
        result = replay(trace, SummaryWindow(5))      # the benchmark's keep_turns
    folds = sum(1 for d in result.drops if d.msg_id.startswith("summary_"))
    # one restart per fold before; what still restarts: a window whose first message the leader of its tools list
    # never read (the trace alternates calls with and without tools, one leader each)
    assert folds > 100 and starts[0] < folds // 8
    assert fed[0] <= 3 * len(trace.stream)        # about the history once, not the window per fold
    _assert_findings_are_whole_payload_lints(result)


def test_a_head_that_differs_otherwise_restarts_and_is_judged_whole():
    """A head whose new message is not a plain one of the same role (here a system message with no content, a
    finding of its own) is scanned as itself."""
    trace = synthetic_trace(60)
    stream = trace.stream
    at = next(i for i, m in enumerate(stream) if i > 20 and m.role == "user")
    stream.insert(at, Msg(role="system", content=None))        # null-content: the scan reports it
    for c in trace.calls:
        c.stream_index = None
    result = replay(trace, SummaryWindow(2))
    _assert_findings_are_whole_payload_lints(result)
