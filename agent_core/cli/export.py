"""``chain-studio export PATH --as FORMAT``: one call or a whole trace in another form."""
from __future__ import annotations

import argparse
import sys

from agent_core.lint.profiles import profile_names


def run(args: argparse.Namespace) -> int:
    """Export a trace or one call: payload JSON, curl, a pytest file, Chain Studio JSONL, payload JSONL, HTML."""
    from agent_core.export.formats import export_file

    text, dest = export_file(args.path, args.as_, call=args.call, redact=args.redact, output=args.output,
                             profile=args.profile)
    if dest is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        print(f"wrote {dest}", file=sys.stderr)
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
    p.set_defaults(func=run)
