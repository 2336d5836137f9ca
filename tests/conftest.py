"""Shared fixtures: a demo-model server on a free port, temp trace dirs, real traces."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from agent_core.core.paths import PROJECT_ROOT, SAMPLE_TRACES
from agent_core.serve.demo_server import DemoModelServer

# The suite never reads or fills the user's on-disk token counts (trace/token_store.py): one fresh store per run,
# shared by the CLI and studio processes the tests start.
os.environ.setdefault("CHAIN_STUDIO_TOKEN_CACHE", tempfile.mkdtemp(prefix="chain-studio-token-counts-"))
# Nor keeps parsed traces between tests (ingest/snapshot.py): each test parses what it opens, unless it turns this on.
os.environ.setdefault("CHAIN_STUDIO_TRACE_CACHE", "off")
# Nor does the studio drop its traces when the test process (every AppTest's server) grows past the default limit:
# tests that count reads and parses would then depend on what ran before (tests/studio/test_residency.py sets it).
os.environ.setdefault("CHAIN_STUDIO_CACHE_MB", "1000000")

REAL_TRACES = PROJECT_ROOT / "tests" / "fixtures" / "real_traces"
"""Public function-calling traces, vendored verbatim with their LICENSE and README (see its README.md)."""


@pytest.fixture
def demo_server():
    """A real demo-model HTTP server on 127.0.0.1 and a free port."""
    with DemoModelServer() as server:
        yield server


@pytest.fixture(autouse=True)
def _no_real_endpoint(monkeypatch, tmp_path):
    """Tests never reach a real provider: no key, no base URL, traces in a temp dir."""
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "CHAIN_STUDIO_MODEL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CHAIN_STUDIO_TRACES_DIR", str(tmp_path / "traces"))


@pytest.fixture
def real_traces() -> Path:
    return REAL_TRACES


@pytest.fixture
def sample_traces() -> Path:
    return SAMPLE_TRACES
