"""``chain-studio proxy --upstream URL``: record any app's traffic through an OpenAI-compatible pass-through."""
from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Record any app's traffic: an OpenAI-compatible pass-through on 127.0.0.1 that writes traces.

    Point the app's base URL at http://127.0.0.1:PORT/v1. Requests and responses pass through
    unchanged; each conversation is written to its own trace file (index.jsonl says why each
    request went where it went). Authorization headers and API keys are never stored. Ctrl-C or
    SIGTERM finishes the exchanges in flight, finalizes every conversation and prints a summary;
    the exit status is 1 when some exchange could not be recorded.
    """
    import sys

    from agent_core.serve.proxy import run_proxy

    live = None
    if args.otlp_endpoint:
        from agent_core.export.otlp_live import LiveExporter

        live = LiveExporter(args.otlp_endpoint, name="proxy")
        print(f"exporting each chat call as an OpenTelemetry span to {live.endpoint}", flush=True)
    try:
        return run_proxy(args.upstream, port=args.port, trace=args.trace, verbose=args.verbose,
                         observers=(live,) if live else ())
    finally:
        if live is not None:
            print(live.close(), file=sys.stderr, flush=True)


def add(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("proxy", help="record any app's traffic through an OpenAI-compatible pass-through",
                       description=run.__doc__)
    p.add_argument("--upstream", required=True, help="the real endpoint's base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--port", type=int, default=8787, help="local port (default 8787; 0 picks a free one)")
    p.add_argument("--trace", default=None, help="directory for the trace files (default traces/proxy-<timestamp>/)")
    p.add_argument("--verbose", action="store_true", help="print one line per exchange")
    p.add_argument("--otlp-endpoint", default=None, metavar="URL",
                   help="also send each chat call as an OpenTelemetry GenAI span to this OTLP/HTTP endpoint "
                        "(one trace per conversation)")
    p.set_defaults(func=run)
