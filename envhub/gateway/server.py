"""The gateway on a loopback port, served by uvicorn in a background thread: :class:`GatewayServer`.

Used by ``envhub eval --agent`` and the tests (one process, the agents in their own). ``envhub
gateway`` serves in the foreground instead (:mod:`.cli`).
"""

from __future__ import annotations

import threading
import time

from .app import make_app
from .service import Gateway


class GatewayServer:
    """Serve ``gateway`` on ``host`` (loopback by default) at a free port until :meth:`stop`."""

    def __init__(self, gateway: Gateway, *, host: str = "127.0.0.1", port: int = 0) -> None:
        """Configure; :meth:`start` binds."""
        import uvicorn

        self.gateway = gateway
        config = uvicorn.Config(
            make_app(gateway),
            host=host,
            port=port,
            log_level="warning",
            access_log=False,
            timeout_keep_alive=30,
            backlog=2048,
        )
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # type: ignore[method-assign]
        self._thread = threading.Thread(target=self._server.run, name="envhub-gateway", daemon=True)
        self.host = host
        self.port = port

    @property
    def base_url(self) -> str:
        """The OpenAI base URL agents are given (``http://HOST:PORT/v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    def start(self, timeout_s: float = 30.0) -> GatewayServer:
        """Start serving; returns once the port is bound."""
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the gateway server did not start (is the port free?)")
            time.sleep(0.01)
        sock = self._server.servers[0].sockets[0]
        self.port = sock.getsockname()[1]
        return self

    def wait(self) -> None:
        """Block until the server stops."""
        self._thread.join()

    def stop(self) -> None:
        """Stop serving and wait for the thread."""
        self._server.should_exit = True
        self._thread.join(timeout=10)

    def __enter__(self) -> GatewayServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
