"""``chain-studio repair PATH``: a fixed copy of every payload plus the list of edits; never overwrites the input."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

from agent_core.core.errors import ChainStudioError
from agent_core.ingest.detect import load_any
from agent_core.lint.profiles import profile_names
from agent_core.lint.repair import STRATEGIES, Edit, repair_payload, repair_request


def run(args: argparse.Namespace) -> int:
    """Write a repaired copy of every payload in a file (the input is never overwritten)."""
    dest, report = repair_file(args.path, args.strategy, args.output, profile=args.profile)
    total = sum(len(edits) for _, edits in report)
    print(f"{dest}: {total} edits in {len(report)} payload(s), strategy {args.strategy}")
    for name, edits in report:
        for e in edits:
            print(f"  {name}: {e}")
    return 0


def add(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("repair", help=run.__doc__, description=run.__doc__)
    p.add_argument("path")
    p.add_argument("--strategy", required=True, choices=STRATEGIES)
    p.add_argument("-o", "--output", default=None, help="output file (default <name>.repaired.json[l])")
    p.add_argument("--profile", default="openai", choices=profile_names())
    p.set_defaults(func=run)


class RepairOutputError(ChainStudioError):
    """The repair output path is unusable (it is the input file)."""


def default_output(path: Path) -> Path:
    suffix = ".jsonl" if path.suffix == ".jsonl" else ".json"
    return path.with_name(f"{path.stem}.repaired{suffix}")


def repair_file(path: str | Path, strategy: str, out: str | Path | None = None,
                profile: str = "openai") -> tuple[Path, list[tuple[str, list[Edit]]]]:
    """Repair every payload of a file and write them; returns the output path and the edits per payload.

    One payload (a messages array, a request body) is written in the same shape;
    conversation files as a JSON array of ``{"name", "messages"}``; anything with
    several calls as JSONL, one repaired request body per call. Never overwrites the input.
    """

    src = Path(path)
    trace = load_any(src)
    dest = Path(out) if out else default_output(src)
    if dest.resolve() == src.resolve():
        raise RepairOutputError(f"{dest}: refusing to overwrite the input file; pass another -o path")
    report: list[tuple[str, list[Edit]]] = []
    convs = trace.meta.get("conversations")
    if convs and trace.format not in ("toolbench",):
        records = []
        for r in convs:
            m0, m1 = r["messages"]
            result = repair_payload([m.to_openai() for m in trace.stream[m0:m1]], strategy=strategy, profile=profile)
            records.append({"name": r["name"], "messages": result.messages})
            report.append((r["name"], result.edits))
        text = json.dumps(records, ensure_ascii=False, indent=1)
    elif trace.format in ("messages", "request-body") and len(trace.calls) == 1:
        body, edits = repair_request(trace.calls[0].request, strategy=strategy, profile=profile)
        report.append(("call 0", edits))
        text = json.dumps(body["messages"] if trace.format == "messages" else body, ensure_ascii=False, indent=1)
    else:
        if dest.suffix != ".jsonl" and not out:
            dest = dest.with_suffix(".jsonl")
        # one line per call, written as it is made: a 30 MB message in every payload must not be held N times
        with open(dest, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as f:
            for c in trace.calls:
                body, edits = repair_request(c.request, strategy=strategy, profile=profile)
                report.append((f"call {c.index}", edits))
                f.write(json.dumps(body, ensure_ascii=False) + "\n")
        return dest, report
    dest.write_text(text + "\n", encoding="utf-8", errors="backslashreplace")   # lone surrogates: JSON escapes
    return dest, report
