"""``chain-studio open URL``: a Phoenix project's LLM spans, read page by page, written as a trace file."""
from __future__ import annotations

import re
import sys
from datetime import datetime
from pathlib import Path

from agent_core.core.paths import traces_dir


def fetch_url(url: str, *, out: str | None = None, trace_id: str | None = None) -> Path:
    """Read the project (progress on stderr per page), write the trace; returns its path."""
    from agent_core.ingest.phoenix import open_project, parse_project_url
    from agent_core.trace.writer import write_trace

    base, project = parse_project_url(url)

    def progress(pages: int, spans: int) -> None:
        print(f"\rreading {base} project {project}: page {pages}, {spans} LLM spans", end="", file=sys.stderr,
              flush=True)

    trace = open_project(url, trace_id=trace_id, progress=progress)
    print(file=sys.stderr)
    if out:
        path = Path(out)
    else:
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", project)[:40] or "project"
        path = traces_dir() / f"phoenix-{stem}-{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    write_trace(trace, path)
    for warning in trace.warnings:
        print(f"note: {warning}", file=sys.stderr)
    print(f"wrote {path} ({len(trace.calls)} calls, trace {trace.meta['phoenix']['trace_id']})", file=sys.stderr)
    return path.resolve()
