"""A loopback HTTP server that runs in a background thread, or in the foreground for a CLI.

Shared by the demo model and the recording proxy.
"""
from __future__ import annotations

import threading
from socketserver import BaseServer

POLL_SECONDS = 0.05
"""How often a background server's loop checks for ``stop()``."""


class BackgroundServer:
    """Owns one ``socketserver`` server: ``start()`` in a daemon thread, or ``serve_forever()``."""

    thread_name = "chain-studio-server"

    def __init__(self, server: BaseServer):
        self._server = server
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """What to give an OpenAI client as its base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self):
        # a short poll: stop() waits for the loop to notice, up to one interval (0.5 s by default, per server)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(POLL_SECONDS,),
                                        name=self.thread_name, daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        # shutdown() waits for a serving loop: only a started thread has one still running
        if self._thread is not None:
            self._server.shutdown()
        self._server.server_close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
