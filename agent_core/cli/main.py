"""``chain-studio``: the studio, the chat REPL, the demo model and the trace tools.

Every error a user can cause ends as one line on stderr and a non-zero exit
code; tracebacks only with ``CHAIN_STUDIO_DEBUG=1``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import datetime
from pathlib import Path
from typing import Callable

from agent_core.core.errors import ChainStudioError, MalformedTraceError
from agent_core.core.paths import PROJECT_ROOT, STUDIO_APP, default_traces_dir

EXIT_USAGE = 2


# --- studio ---------------------------------------------------------------

def _studio_command(target: Path | None, port: int | None, extra: list[str] | None = None) -> list[str]:
    cmd = [sys.executable, "-m", "streamlit", "run", str(STUDIO_APP),
           "--server.address", "localhost", "--server.headless", "true",
           "--browser.gatherUsageStats", "false"]
    if port:
        cmd += ["--server.port", str(port)]
    cmd += extra or []
    if target is not None:
        cmd += ["--", "--open", str(target)]
    return cmd


def cmd_studio(args: argparse.Namespace) -> int:
    """Start the studio on the bundled sample traces."""
    return _run_studio(None, args.port)


def cmd_open(args: argparse.Namespace) -> int:
    """Start the studio on one trace file."""
    path = Path(args.path).resolve()
    if not path.is_file():
        raise MalformedTraceError(args.path, "no such file")
    return _run_studio(path, args.port)


def _run_studio(target: Path | None, port: int | None) -> int:
    env = dict(os.environ)
    env.setdefault("CHAIN_STUDIO_TRACES_DIR", str(default_traces_dir()))
    cmd = _studio_command(target, port)
    # Run from the project root so .streamlit/config.toml (theme, limits) applies.
    if os.name == "posix":
        # Become the server: a SIGTERM to `chain-studio studio` (a supervisor, a test) must stop
        # streamlit too, not leave it orphaned and holding the port.
        os.chdir(PROJECT_ROOT)
        os.execve(sys.executable, cmd, env)
    return subprocess.call(cmd, cwd=PROJECT_ROOT, env=env)


# --- demo model -----------------------------------------------------------

def cmd_demo_model(args: argparse.Namespace) -> int:
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


# --- chat -----------------------------------------------------------------

def cmd_chat(args: argparse.Namespace) -> int:
    """Chat with the agent in the terminal, recording a trace."""
    from agent_core.chat.session import ChatSession

    trace_path = Path(args.trace) if args.trace else (
        default_traces_dir() / f"{datetime.now().strftime('%Y%m%d-%H%M%S')}.jsonl")
    session = ChatSession.start(trace_path=trace_path, model=args.model, base_url=args.base_url,
                                api_key=args.api_key, max_messages=args.max_messages,
                                max_tool_rounds=args.max_tool_rounds, system_prompt=args.system)
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
            print(session.handle(line), flush=True)
    except KeyboardInterrupt:
        pass
    finally:
        session.close()
    return 0


# --- parser ---------------------------------------------------------------

def _add_chat(sub) -> None:
    p = sub.add_parser("chat", help=cmd_chat.__doc__, description=cmd_chat.__doc__)
    p.add_argument("--model", help="model name (default: CHAIN_STUDIO_MODEL, or the demo model)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: OPENAI_BASE_URL)")
    p.add_argument("--api-key", help="API key (default: OPENAI_API_KEY); never written to the trace")
    p.add_argument("--max-messages", type=int, default=40, help="max-messages trim limit (default 40)")
    p.add_argument("--max-tool-rounds", type=int, default=1, help="tool rounds per turn (1 = classic flow)")
    p.add_argument("--system", default=None, help="system prompt")
    p.add_argument("--trace", help="trace file (default traces/<timestamp>.jsonl)")
    p.set_defaults(func=cmd_chat)


def _add_demo_model(sub) -> None:
    from agent_core.serve.demo_server import FAULTS

    p = sub.add_parser("demo-model", help=cmd_demo_model.__doc__, description=cmd_demo_model.__doc__)
    p.add_argument("--port", type=int, default=8765)
    p.add_argument("--fault", help=f"inject a fault into every request: {', '.join(FAULTS)} (suffix -once)")
    p.add_argument("--verbose", action="store_true", help="log each request")
    p.set_defaults(func=cmd_demo_model)


def _add_studio(sub) -> None:
    p = sub.add_parser("studio", help=cmd_studio.__doc__, description=cmd_studio.__doc__)
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=cmd_studio)
    p = sub.add_parser("open", help=cmd_open.__doc__, description=cmd_open.__doc__)
    p.add_argument("path")
    p.add_argument("--port", type=int, default=None)
    p.set_defaults(func=cmd_open)


# --- lint / repair (logic in lint.py and repair.py) -------------------------------------------------

def cmd_lint(args: argparse.Namespace) -> int:
    """Check every call's payload for what a provider would reject or mis-pair."""
    from agent_core.lint.scan import lint_file

    text, code = lint_file(args.path, profile=args.profile, fmt=args.format)
    print(text)
    return code


def cmd_repair(args: argparse.Namespace) -> int:
    """Write a repaired copy of every payload in a file (the input is never overwritten)."""
    from agent_core.lint.repair import repair_file

    dest, report = repair_file(args.path, args.strategy, args.output, profile=args.profile)
    total = sum(len(edits) for _, edits in report)
    print(f"{dest}: {total} edits in {len(report)} payload(s), strategy {args.strategy}")
    for name, edits in report:
        for e in edits:
            print(f"  {name}: {e}")
    return 0


def _add_lint(sub) -> None:
    from agent_core.lint.profiles import profile_names

    p = sub.add_parser("lint", help=cmd_lint.__doc__, description=cmd_lint.__doc__)
    p.add_argument("path", help="a trace, request body, messages array, JSONL log or conversation file")
    p.add_argument("--profile", default="openai", choices=profile_names(), help="provider profile (default openai)")
    p.add_argument("--format", default="text", choices=("text", "json"))
    p.set_defaults(func=cmd_lint)


def _add_repair(sub) -> None:
    from agent_core.lint.profiles import profile_names
    from agent_core.lint.repair import STRATEGIES

    p = sub.add_parser("repair", help=cmd_repair.__doc__, description=cmd_repair.__doc__)
    p.add_argument("path")
    p.add_argument("--strategy", required=True, choices=STRATEGIES)
    p.add_argument("-o", "--output", default=None, help="output file (default <name>.repaired.json[l])")
    p.add_argument("--profile", default="openai", choices=profile_names())
    p.set_defaults(func=cmd_repair)


# --- replay (logic in replay_report.py) --------------------------------------------------------------

def cmd_replay(args: argparse.Namespace) -> int:
    """Replay a trace under another trim policy: payloads, tokens, drops, findings, forgotten facts."""
    from agent_core.replay.report import replay_file

    print(replay_file(args.path, args.policy, args.param or [], args.probe or [], args.format))
    return 0


def _add_replay(sub) -> None:
    from agent_core.trim.policies import POLICIES

    p = sub.add_parser("replay", help=cmd_replay.__doc__, description=cmd_replay.__doc__)
    p.add_argument("path", help="a trace or any importable file")
    p.add_argument("--policy", required=True, choices=list(POLICIES))
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="policy parameter, repeatable (compose: policies=NAME:k=v,k=v+NAME:k=v)")
    p.add_argument("--probe", action="append", metavar="TEXT",
                   help="a fact to track, repeatable; re:PATTERN for a regex (default: proposed from early turns)")
    p.add_argument("--format", default="json", choices=("json", "text"))
    p.set_defaults(func=cmd_replay)


# --- proxy and export (logic in proxy.py / export.py) ---------------------------------------------

def cmd_proxy(args: argparse.Namespace) -> int:
    """Record any app's traffic: an OpenAI-compatible pass-through on 127.0.0.1 that writes traces.

    Point the app's base URL at http://127.0.0.1:PORT/v1. Requests and responses pass through
    unchanged; each conversation is written to its own trace file. Authorization headers and
    API keys are never stored.
    """
    from agent_core.serve.proxy import run_proxy

    return run_proxy(args.upstream, port=args.port, trace=args.trace, verbose=args.verbose)


def _add_proxy(sub) -> None:
    p = sub.add_parser("proxy", help="record any app's traffic through an OpenAI-compatible pass-through",
                       description=cmd_proxy.__doc__)
    p.add_argument("--upstream", required=True, help="the real endpoint's base URL, e.g. https://api.openai.com/v1")
    p.add_argument("--port", type=int, default=8787, help="local port (default 8787; 0 picks a free one)")
    p.add_argument("--trace", default=None, help="directory for the trace files (default traces/proxy-<timestamp>/)")
    p.add_argument("--verbose", action="store_true", help="print one line per exchange")
    p.set_defaults(func=cmd_proxy)


def cmd_export(args: argparse.Namespace) -> int:
    """Export a trace or one call: payload JSON, curl, a pytest file, Chain Studio JSONL, payload JSONL, HTML."""
    from agent_core.export.formats import export_file

    text, dest = export_file(args.path, args.as_, call=args.call, redact=args.redact, output=args.output,
                             profile=args.profile)
    if dest is None:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
    else:
        print(f"wrote {dest}", file=sys.stderr)
    return 0


def _add_export(sub) -> None:
    p = sub.add_parser("export", help=cmd_export.__doc__, description=cmd_export.__doc__)
    p.add_argument("path", help="a trace or any importable file")
    p.add_argument("--as", dest="as_", required=True, choices=("json", "curl", "pytest", "trace", "payloads", "html"))
    p.add_argument("--call", type=int, default=None, help="call index for json / curl / pytest (default: the last)")
    p.add_argument("--redact", action="store_true", help="replace PII and keys with stable placeholders")
    p.add_argument("--profile", default="openai", help="linter profile for the HTML report's findings")
    p.add_argument("-o", "--output", default=None, help="output file (default stdout; required for --as trace)")
    p.set_defaults(func=cmd_export)


# Each feature module adds its subcommands here (lint, repair, replay, proxy, export ...).
_SUBCOMMANDS: list[Callable] = [_add_studio, _add_chat, _add_demo_model, _add_lint, _add_repair, _add_replay,
                                _add_proxy, _add_export]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="chain-studio",
        description="Chain Studio: see exactly what the model saw on every call. "
                    "With no command, starts the studio on the bundled sample traces.")
    parser.add_argument("--port", type=int, default=None, help="studio port (with no command)")
    sub = parser.add_subparsers(dest="command")
    for add in _SUBCOMMANDS:
        add(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not getattr(args, "func", None):
        args.func = cmd_studio
    try:
        return int(args.func(args) or 0)
    except ChainStudioError as err:
        if os.environ.get("CHAIN_STUDIO_DEBUG"):
            raise
        print(f"chain-studio: {err}", file=sys.stderr)
        return EXIT_USAGE if isinstance(err, MalformedTraceError) else 1


if __name__ == "__main__":
    sys.exit(main())
