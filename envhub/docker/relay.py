"""A loopback TCP relay: publishes a container that has no published ports.

Docker does not publish the ports of containers on an *internal* network (the network envhub
gives environments that need none), but this host can reach the container's address on the
bridge. :class:`Relay` listens on ``127.0.0.1`` (a random port by default) and pipes each
connection to the container, on one asyncio loop in a daemon thread, so many concurrent
connections cost no thread each.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import threading

CHUNK = 1 << 16


class Relay:
    """Forward ``host:port`` to ``target`` until :meth:`close`."""

    def __init__(
        self, target: tuple[str, int] | None, *, host: str = "127.0.0.1", port: int = 0
    ) -> None:
        """Bind now (so the port is known and taken), serve in a daemon thread.

        ``target`` may be set later; until then connections are closed at once.
        """
        self.target = target
        self._sock = socket.create_server((host, port), reuse_port=False)
        self.host, self.port = self._sock.getsockname()[:2]
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.base_events.Server | None = None
        self._thread = threading.Thread(target=self._run, name=f"envhub-relay-{self.port}",
                                        daemon=True)  # fmt: skip
        self._thread.start()
        self._ready.wait(5)

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)

        async def start() -> None:
            self._server = await asyncio.start_server(self._handle, sock=self._sock)
            self._ready.set()

        self._loop.run_until_complete(start())
        self._loop.run_forever()
        self._loop.run_until_complete(self._loop.shutdown_asyncgens())
        self._loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.target is None:
            writer.close()
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.target)
        except (OSError, asyncio.CancelledError):
            writer.close()  # the server is not up yet: the client sees a closed connection
            return
        for s in (writer, up_writer):
            sock = s.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        except asyncio.CancelledError:  # close(): drop the connection quietly
            for w in (writer, up_writer):
                w.close()

    def close(self) -> None:
        """Stop listening and drop open connections (idempotent)."""
        if not self._loop.is_closed() and self._loop.is_running():

            async def stop() -> None:
                if self._server is not None:
                    self._server.close()
                for task in asyncio.all_tasks():
                    if task is not asyncio.current_task():
                        task.cancel()

            with contextlib.suppress(RuntimeError):
                asyncio.run_coroutine_threadsafe(stop(), self._loop).result(5)
                self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)
        with contextlib.suppress(OSError):
            self._sock.close()


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except (OSError, asyncio.CancelledError):
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.close()
