"""AppTest helpers: open the studio on one trace and walk its pages."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES

APP = PROJECT_ROOT / "studio" / "app.py"
FIXTURES = PROJECT_ROOT / "tests" / "fixtures"
HOSTILE = FIXTURES / "hostile_trace.jsonl"
PAGES = {
    "screens/traces.py": "Traces", "screens/timeline.py": "Timeline", "screens/tokens.py": "Tokens",
    "screens/lineage.py": "Lineage", "screens/lint.py": "Lint", "screens/chat.py": "Chat",
    "screens/learn.py": "Learn: how a tool call travels",
}
# Screens whose content their own test file checks (test_replay_page.py); here they only have to open.
OTHER_PAGES = ["screens/replay.py"]
SAMPLES = sorted(SAMPLE_TRACES.glob("*.jsonl"))


@pytest.fixture(autouse=True)
def _no_warm_up_left():
    """A big trace's page run arms a background warm-up (``studio/warmup.py``: it fires after ``IDLE_S``): after
    the test, one not yet started is cancelled and one under way is waited for, so none replays during a later
    test (whose counting of replay runs it once joined)."""
    yield
    from studio import warmup

    warmup.page_started()
    warmup.wait(120)


@pytest.fixture
def open_studio(monkeypatch):
    """``open_studio(path)`` -> an AppTest that has run the router with ``path`` open (as ``--open`` does)."""
    def _open(path: Path | None, page: str | None = None) -> AppTest:
        if path is None:
            monkeypatch.delenv("CHAIN_STUDIO_OPEN", raising=False)
        else:
            monkeypatch.setenv("CHAIN_STUDIO_OPEN", str(path))
        at = AppTest.from_file(str(APP), default_timeout=120)
        at.run()
        assert not at.exception, [e.message for e in at.exception]
        if page:
            at.switch_page(page).run()
            assert not at.exception, [e.message for e in at.exception]
        return at
    return _open


def visit_every_page(at: AppTest) -> None:
    """Every page in turn: no uncaught exception, and every error box one plain line."""
    for page in list(PAGES) + list(OTHER_PAGES):
        at.switch_page(page).run()
        assert not at.exception, (page, [e.message for e in at.exception])
        for error in at.error:
            assert "\n" not in error.value and "Traceback" not in error.value, error.value


def walk(node):
    """Every element and block under ``node``, depth first."""
    yield node
    for child in getattr(node, "children", {}).values():
        yield from walk(child)


def plotly_spec(at: AppTest, index: int) -> dict:
    """The chart's figure as plain JSON values: numpy arrays, which plotly sends as typed arrays
    (``{"dtype", "bdata", "shape"}``), decoded back into lists."""
    return _decoded(json.loads(at.get("plotly_chart")[index].proto.spec))


def _decoded(value):
    import base64

    import numpy as np
    if isinstance(value, dict) and isinstance(value.get("bdata"), str) and "dtype" in value:
        array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape is not None:
            array = array.reshape([int(d) for d in str(shape).split(",")])
        return array.tolist()
    if isinstance(value, dict):
        return {k: _decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    return value
