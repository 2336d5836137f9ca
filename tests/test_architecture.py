"""The layer order of docs/architecture.md, checked on the code as it is."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_layer_contracts_hold():
    """`lint-imports` checks pyproject's contracts: layers, and no openai/streamlit below `chat`."""
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    done = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout or "broken" not in done.stdout.lower(), done.stdout[-3000:]


@pytest.mark.parametrize("package", ["agent_core", "studio"])
def test_no_import_cycles(package):
    graph = grimp.build_graph(package)
    cycles = []
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.chain_exists(imported=module, importer=imported):
                cycles.append((module, imported))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_reading_and_linting_never_load_the_sdks():
    """The linter, the reader and the importers are usable without importing openai or streamlit."""
    code = ("import sys, agent_core, agent_core.lint.scan, agent_core.trace.reader, agent_core.ingest.detect; "
            "print(sorted({m.split('.')[0] for m in sys.modules} & {'openai', 'streamlit', 'httpx'}))")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_package_root_exports_every_name_it_lists():
    import agent_core

    for name in agent_core.__all__:
        assert getattr(agent_core, name).__name__ == name


def test_no_source_file_over_600_lines():
    """One noun per module: a file past 600 lines is a module doing two things."""
    long = {str(p.relative_to(ROOT)): n for p in [*ROOT.glob("agent_core/**/*.py"), *ROOT.glob("studio/**/*.py")]
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 600}
    assert not long, long


def test_docs_architecture_names_only_files_and_functions_that_exist():
    """The data-path table of docs/architecture.md cites ``file : name``; both must exist (no doc drift)."""
    import re

    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    cited = re.findall(r"`((?:[a-z_]+/)+[a-z_]+\.py)(?: : ([^`]+))?`", doc)
    assert len(cited) > 20
    missing = []
    for path, names in cited:
        base = ROOT / path if path.split("/")[0] in ("studio", "agent_core", "tests") else ROOT / "agent_core" / path
        if not base.exists():
            missing.append(path)
            continue
        text = base.read_text(encoding="utf-8")
        for name in re.split(r"[,/]| → ", names or ""):
            for part in filter(None, name.strip().split(" ")[0].split(".")):
                if not re.search(rf"\b(def|class) {re.escape(part)}\b|^{re.escape(part)}\b", text, re.M):
                    missing.append(f"{path} : {part}")
    assert not missing, missing
