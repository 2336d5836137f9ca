"""``chain-studio export PATH --as FORMAT``: one call or a whole trace in another form."""
from __future__ import annotations

import argparse
import sys

from agent_core.lint.profiles import profile_names


def run(args: argparse.Namespace) -> int:
    """Export a trace or one call: payload JSON, curl, a pytest file, Chain Studio JSONL, payload JSONL, HTML,
    OpenTelemetry GenAI spans (OTLP JSON, or pushed to an OTLP/HTTP endpoint with --otlp-endpoint)."""
    from agent_core.export.formats import export_file

    if getattr(args, "otlp_endpoint", None):
        return _push(args)

    text, dest = export_file(args.path, args.as_, call=args.call, redact=args.redact, output=args.output,
                             profile=args.profile)
    if dest is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        print(f"wrote {dest}", file=sys.stderr)
    return 0


def _push(args: argparse.Namespace) -> int:
    from agent_core.export.formats import ExportError
    from agent_core.export.otlp import send_trace, traces_endpoint
    from agent_core.ingest.detect import load_any

    if args.as_ != "otlp":
        raise ExportError("--otlp-endpoint goes with --as otlp")
    trace = load_any(args.path)
    if args.redact:
        from agent_core.export.redact import redact_trace

        trace = redact_trace(trace)
    def progress(sent: int, total: int) -> None:
        print(f"\rsent {sent} of {total} spans", end="", file=sys.stderr, flush=True)

    sent = send_trace(trace, args.otlp_endpoint, profile=args.profile, progress=progress)
    print(f"\rsent {sent} spans ({len(trace.calls)} calls) to {traces_endpoint(args.otlp_endpoint)}", file=sys.stderr)
    return 0


def add(sub) -> None:  # noqa: ANN001
    from agent_core.export.formats import FORMATS

    p = sub.add_parser("export", help=run.__doc__, description=run.__doc__)
    p.add_argument("path", help="a trace or any importable file")
    p.add_argument("--as", dest="as_", required=True, choices=FORMATS)
    p.add_argument("--call", type=int, default=None, help="call index for json / curl / pytest (default: the last)")
    p.add_argument("--redact", action="store_true", help="replace PII and keys with stable placeholders")
    p.add_argument("--profile", default="openai", choices=profile_names(),
                   help="linter profile for the HTML report's findings")
    p.add_argument("-o", "--output", default=None, help="output file (default stdout; required for --as trace)")
    p.add_argument("--otlp-endpoint", default=None, metavar="URL",
                   help="with --as otlp: send the spans to this OTLP/HTTP endpoint (http://host:4318 or .../v1/traces)")
    p.set_defaults(func=run)
