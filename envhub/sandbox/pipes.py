"""The parent's side of a run's pipes: bounded output, stdin feeding, the verdict channel."""

from __future__ import annotations

import ast
import os
import secrets
import selectors
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .procs import Process

NONCE_LEN = 32
"""Bytes of the per-run nonce (hex) that prefix every verdict message."""
MAX_VERDICT_BYTES = 8 << 20
DRAIN_CAP = 64 << 20
"""Bytes of output read (and thrown away) past ``output_bytes`` before the pipe is dropped."""


def parse_verdicts(data: bytes, nonce: bytes) -> tuple[list[dict[str, Any]], int]:
    """Messages that carry the nonce, and the number of lines that did not."""
    messages, rejected = [], 0
    for line in data.split(b"\n"):
        if not line:
            continue
        if not secrets.compare_digest(line[:NONCE_LEN], nonce):
            rejected += 1
            continue
        try:
            msg = ast.literal_eval(line[NONCE_LEN:].decode())
        except (ValueError, SyntaxError, RecursionError, MemoryError, UnicodeDecodeError):
            rejected += 1
            continue
        if isinstance(msg, dict):
            messages.append(msg)
        else:
            rejected += 1
    return messages, rejected


class Reader:
    """Pumps stdin in and stdout, stderr and the verdict channel out, all bounded."""

    def __init__(self, proc: Process, verdict_r: int, stdin: bytes, cap: int) -> None:
        self.proc = proc
        self.sel = selectors.DefaultSelector()
        self.out = {1: bytearray(), 2: bytearray(), 3: bytearray()}
        self.seen = {1: 0, 2: 0, 3: 0}
        self.truncated = {1: False, 2: False, 3: False}
        self.caps = {1: cap, 2: cap, 3: MAX_VERDICT_BYTES}
        self.verdict_r = verdict_r
        assert proc.stdout is not None and proc.stderr is not None
        for key, fd in ((1, proc.stdout.fileno()), (2, proc.stderr.fileno()), (3, verdict_r)):
            os.set_blocking(fd, False)
            self.sel.register(fd, selectors.EVENT_READ, key)
        self.pending = memoryview(stdin)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            self.sel.register(proc.stdin.fileno(), selectors.EVENT_WRITE, 0)

    @property
    def verdict(self) -> bytearray:
        """Bytes read from the verdict channel."""
        return self.out[3]

    def pump(self, deadline: float) -> bool:
        """Move data until every output closes; False if the deadline came first."""
        exited_at: float | None = None
        while self.sel.get_map():
            now = time.monotonic()
            if now >= deadline:
                return False
            if exited_at is None and self.proc.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > 0.2:
                return True  # the program is gone; a leftover holds a pipe open
            wait = min(deadline - now, 0.05 if exited_at is None else 0.01)
            for key, _ in self.sel.select(timeout=max(wait, 0.0)):
                self._handle(key)
        return True

    def _handle(self, key: selectors.SelectorKey) -> None:
        which = key.data
        if which == 0:
            self._feed(key.fd)
            return
        try:
            chunk = os.read(key.fd, 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            self.sel.unregister(key.fd)
            return
        self.seen[which] += len(chunk)
        room = self.caps[which] - len(self.out[which])
        if room > 0:
            self.out[which] += chunk[:room]
        if len(chunk) > room:
            self.truncated[which] = True
        if self.seen[which] > self.caps[which] + DRAIN_CAP:
            self.sel.unregister(key.fd)  # stop draining a flood; the writer blocks till killed

    def _feed(self, fd: int) -> None:
        try:
            n = os.write(fd, self.pending[: 1 << 16])
        except BlockingIOError:
            return
        except OSError:
            n = len(self.pending)
        self.pending = self.pending[n:]
        if not self.pending:
            self.sel.unregister(fd)
            assert self.proc.stdin is not None
            self.proc.stdin.close()

    def close(self) -> None:
        """Close every pipe of the run."""
        self.sel.close()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                try:
                    stream.close()
                except OSError:
                    pass
        os.close(self.verdict_r)
