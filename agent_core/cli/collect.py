"""``chain-studio collect``: receive OpenTelemetry (OTLP/HTTP) from instrumented apps and write traces."""
from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    """Receive OTLP/HTTP (POST /v1/traces and /v1/logs, protobuf or JSON, gzip) and write one trace per
    conversation, live, for the studio.

    Point an instrumented app (OpenInference, opentelemetry-instrumentation-openai-v2, Traceloop/OpenLLMetry)
    at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT, or add it as an otlphttp exporter of an
    OpenTelemetry Collector. Binds 127.0.0.1 unless --host says otherwise: exports hold whole conversations.
    """
    from agent_core.core.paths import traces_dir
    from agent_core.serve.collector import run_collector

    out = args.out or str(traces_dir() / "collect")
    return run_collector(out, port=args.port, host=args.host, verbose=args.verbose)


def add(sub) -> None:
    p = sub.add_parser("collect", help="receive OpenTelemetry (OTLP/HTTP) and write one trace per conversation",
                       description=run.__doc__)
    p.add_argument("--port", type=int, default=4318, help="port (default 4318, OTLP/HTTP's; 0 picks a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--out", default=None, help="directory for the trace files (default $CHAIN_STUDIO_TRACES_DIR/collect)")
    p.add_argument("--verbose", action="store_true", help="print one line per request")
    p.set_defaults(func=run)
