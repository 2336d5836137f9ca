"""``chain-studio demo-model``: serve the bundled demo model in the foreground."""
from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Serve the deterministic demo model on 127.0.0.1 (OpenAI-compatible)."""
    from agent_core.serve.demo_server import DemoModelServer

    server = DemoModelServer(port=args.port, fault=args.fault, verbose=args.verbose)
    print(f"demo model listening on {server.base_url} (Ctrl-C to stop)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
    return 0


def add(sub) -> None:  # noqa: ANN001
    from agent_core.serve.demo_server import FAULTS

    p = sub.add_parser("demo-model", help=run.__doc__, description=run.__doc__)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--fault", help=f"inject a fault into every request: {', '.join(FAULTS)} (suffix -once)")
    p.add_argument("--verbose", action="store_true", help="log each request")
    p.set_defaults(func=run)
