"""``chain-studio chat``: the agent in the terminal, recording a trace."""
from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from agent_core.core.paths import traces_dir


def run(args: argparse.Namespace) -> int:
    """Chat with the agent in the terminal, recording a trace."""
    from agent_core.chat.session import ChatSession
    from agent_core.core.errors import InputError

    if args.server_state and args.api != "responses":
        raise InputError("--server-state needs --api responses: only the Responses API keeps a conversation "
                         "on the server (previous_response_id)")
    trace_path = Path(args.trace) if args.trace else (
        traces_dir() / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    live = None
    if args.otlp_endpoint:
        from agent_core.export.otlp_live import LiveExporter

        live = LiveExporter(args.otlp_endpoint, secrets=[args.api_key], name="chat")
    session = ChatSession.start(trace_path=trace_path, model=args.model, base_url=args.base_url,
                                api_key=args.api_key, max_messages=args.max_messages,
                                max_tool_rounds=args.max_tool_rounds, system_prompt=args.system, api=args.api,
                                recorders=(live,) if live else (), server_state=args.server_state)
    if live is not None:
        live.add_secrets([session.endpoint.api_key])
        print(f"exporting each call as an OpenTelemetry span to {live.endpoint}", file=sys.stderr)
    interactive = sys.stdin.isatty()
    print(f"Chatting with {session.describe()}; recording to {trace_path}", file=sys.stderr)
    print("Commands: /clear  /history  /exit", file=sys.stderr)
    try:
        while True:
            if interactive:
                try:
                    line = input("you> ")
                except EOFError:
                    break
            else:
                line = sys.stdin.readline()
                if not line:
                    break
            line = line.strip()
            if not line:
                continue
            if line in ("/exit", "/quit"):
                break
            with _waiting(session.describe().split(" at ")[-1]):
                reply = session.handle(line)
            print(reply, flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        session.close()
        if live is not None:
            print(live.close(), file=sys.stderr)
    return 0


@contextmanager
def _waiting(host: str, after: float = 3.0, every: float = 5.0) -> Iterator[None]:
    """A progress line on stderr while a turn takes longer than ``after`` seconds (a slow or silent endpoint
    otherwise shows nothing for the whole timeout): on a terminal one line updated in place, else a line
    every ``every`` seconds."""
    done = threading.Event()
    tty = sys.stderr.isatty()

    def tick() -> None:
        started = time.monotonic()
        if done.wait(after):
            return
        while True:
            text = f"waiting for {host}: {time.monotonic() - started:.0f} s"
            print(f"\r{text}" if tty else text, end="" if tty else "\n", file=sys.stderr, flush=True)
            if done.wait(1.0 if tty else every):
                if tty:
                    print("\r" + " " * len(text) + "\r", end="", file=sys.stderr, flush=True)
                return

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=2)


def add(sub) -> None:  # noqa: ANN001
    p = sub.add_parser("chat", help=run.__doc__, description=run.__doc__)
    p.add_argument("--model", help="model name (default: CHAIN_STUDIO_MODEL, or the demo model)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: OPENAI_API_KEY); never written to the trace")
    p.add_argument("--max-messages", type=int, default=40, help="max-messages trim limit (default 40)")
    p.add_argument("--max-tool-rounds", type=int, default=1, help="tool rounds per turn (1 = classic flow)")
    p.add_argument("--system", default=None, help="system prompt")
    p.add_argument("--api", default="chat-completions", choices=("chat-completions", "responses"),
                   help="wire API: Chat Completions (default) or the Responses API (POST /responses)")
    p.add_argument("--server-state", action="store_true",
                   help="with --api responses: send only new items and previous_response_id, so the server keeps "
                        "the conversation and the trim policy no longer decides what the model sees")
    p.add_argument("--otlp-endpoint", default=None, metavar="URL",
                   help="also send each call as an OpenTelemetry GenAI span to this OTLP/HTTP endpoint")
    p.add_argument("--trace", help="trace file (default: $CHAIN_STUDIO_TRACES_DIR or ./traces/, <timestamp>.jsonl)")
    p.set_defaults(func=run)
