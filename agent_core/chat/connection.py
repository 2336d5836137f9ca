"""Where calls go: the configured endpoint, or the bundled demo model started for as long as it is needed.

``chat``, replay's counterfactual re-send and the llm summarizer all connect
the same way; with no key and no base URL set they get the demo model on a
free loopback port, and ``close()`` stops it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent_core.serve.demo_model import MODEL_NAME
from agent_core.serve.demo_server import DemoModelServer

from .client import Endpoint, configured_endpoint


@dataclass
class Connection:
    """An endpoint, and the demo-model server behind it when this process started one."""

    endpoint: Endpoint
    """Where calls go."""
    server: DemoModelServer | None = None
    """The demo model started for this connection (None for a configured endpoint)."""

    def close(self) -> None:
        """Stop the demo model if this connection started it."""
        if self.server is not None:
            self.server.stop()
            self.server = None

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def connect(model: str | None = None, base_url: str | None = None, api_key: str | None = None) -> Connection:
    """The endpoint from arguments or the environment (``configured_endpoint``), else the demo model, started."""
    endpoint = configured_endpoint(base_url, api_key, model)
    if endpoint is not None:
        return Connection(endpoint)
    server = DemoModelServer().start()
    return Connection(Endpoint(base_url=server.base_url, model=model or MODEL_NAME, is_demo=True), server)
