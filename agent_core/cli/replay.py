"""``chain-studio replay PATH --policy NAME``: what each call would have sent under another trim policy."""
from __future__ import annotations

import argparse
import sys

from agent_core.core.models import DEFAULT_PRICE_AS, priced_models


def run(args: argparse.Namespace) -> int:
    """Replay a trace under another trim policy: payloads, tokens, drops, findings, forgotten facts."""
    from agent_core.replay.report import replay_file

    text = replay_file(args.path, args.policy, args.param or [], args.probe or [], args.format, args.price_as,
                       full=args.full, out=sys.stdout if args.format == "json" else None, profile=args.profile)
    if text:
        print(text)
    return 0


def add(sub) -> None:
    from agent_core.lint.profiles import profile_names
    from agent_core.trim.registry import ALIASES, POLICIES

    p = sub.add_parser("replay", help=run.__doc__, description=run.__doc__)
    p.add_argument("path", help="a trace or any importable file")
    p.add_argument("--policy", required=True, choices=[*POLICIES, *ALIASES])
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="policy parameter, repeatable (compose: policies=NAME:k=v,k=v+NAME:k=v)")
    p.add_argument("--probe", action="append", metavar="TEXT",
                   help="a fact to track, repeatable; re:PATTERN for a regex (default: proposed from early turns)")
    p.add_argument("--format", default="json", choices=("json", "text"))
    p.add_argument("--full", action="store_true",
                   help="JSON: every call's whole payload (grows with calls x messages); by default each message "
                        "and each drop is listed once and calls refer to them")
    p.add_argument("--price-as", default=None, choices=priced_models(), metavar="MODEL",
                   help="price every call as this model (default: the trace's own priced model, else "
                        f"{DEFAULT_PRICE_AS}); one of {', '.join(priced_models())}")
    p.add_argument("--profile", default=None, choices=profile_names(),
                   help="provider profile judging the replayed payloads (default: the trace's own provider)")
    p.add_argument("--progress", action="store_true",
                   help="report reading a big payload log on stderr (bytes and calls) even when it is not a terminal")
    p.set_defaults(func=run)
