"""A TCP relay between a client and a server that a test can cut, to drop connections."""

from __future__ import annotations

import socket
import threading


class Relay:
    """Relays 127.0.0.1:``port`` to ``target``; :meth:`cut` drops every open connection.

    ``swallow_next_answer``: the next bytes from the server are dropped and the connection cut,
    as if it died after the server had done the work but before the client saw the answer.
    """

    def __init__(self, target_port: int) -> None:
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.conns: list[socket.socket] = []
        self.accepted = 0
        self.swallow_next_answer = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.target)
            with self._lock:
                self.conns += [client, server]
                self.accepted += 1
            threading.Thread(target=self._pump, args=(client, server, False), daemon=True).start()
            threading.Thread(target=self._pump, args=(server, client, True), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, from_server: bool) -> None:
        try:
            while data := src.recv(65536):
                if from_server and self.swallow_next_answer:
                    self.swallow_next_answer = False
                    self.cut()
                    return
                dst.sendall(data)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cut(self) -> None:
        """Drop every open connection (new ones are still accepted)."""
        with self._lock:
            conns, self.conns = self.conns, []
        for s in conns:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def close(self) -> None:
        """Stop accepting and drop everything."""
        self.listener.close()
        self.cut()
