"""Run a server in a background thread on a free loopback port: an ASGI app with uvicorn
(:func:`running`), or a plain ``http.server`` handler (:class:`LoopbackHTTPServer`)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import uvicorn

from envhub.client.child_server import free_port


@contextlib.contextmanager
def running(app, **config):
    """Serve ``app``; an envhub app with the read deadline of ``envhub serve`` (its protocol)."""
    settings = getattr(app.state, "settings", None) if hasattr(app, "state") else None
    if settings is not None and "http" not in config:
        from envhub.server.reading import protocol

        config["http"] = protocol(settings.read_timeout_s)
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **config)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/health", timeout=0.5).status_code == 200:
                break
        except httpx.HTTPError:
            time.sleep(0.02)
    try:
        yield url
    finally:
        server.should_exit = True
        thread.join(10)
        if thread.is_alive():  # the graceful stop hangs: drop open connections and tasks
            server.force_exit = True
            thread.join(10)


@contextlib.contextmanager
def serving_env(name, **settings):
    """``envhub.make(name)`` served with ``ServerSettings(**settings)``; yields its URL.

    With ``/tasks`` and ``/verify`` on unless ``answers=False``: the tests stand where a trainer
    or an evaluator does (an app's own default is off).
    """
    import envhub
    from envhub.server.app import ServerSettings, create_app

    settings.setdefault("answers", True)
    with running(create_app(envhub.make(name), ServerSettings(**settings))) as url:
        yield url


async def all_at_once(url, sessions, *, task_id="train/0", message="yes"):
    """``sessions`` episodes on ``url`` opened together, then every step sent together.

    Returns the steps and the seconds the steps took, all of them together.
    """
    from envhub.client.remote_env import RemoteEnv

    root = RemoteEnv(url, transport="ws", timeout=60)
    forks = [root.fork() for _ in range(sessions)]
    try:
        await asyncio.gather(*(f.areset(task_id=task_id) for f in forks))
        t0 = time.monotonic()
        steps = await asyncio.gather(*(f.astep(message) for f in forks))
        elapsed = time.monotonic() - t0
    finally:
        for f in forks:
            f.close()
        root.close()
    return steps, elapsed


class LoopbackHTTPServer:
    """``handler`` served on 127.0.0.1 in a daemon thread; :attr:`url` is its base URL."""

    def __init__(self, handler: type[BaseHTTPRequestHandler]) -> None:
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        """Stop serving and release the port."""
        self.server.shutdown()
        self.server.server_close()
