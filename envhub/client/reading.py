"""Reading a remote server's reply: a bounded body, read to a deadline, parsed or refused.

An HTTP client's timeout bounds each read, not the reply, and no client bounds the body: a
server that sends 100 MB (or an endless chunked body) is read whole, and one that trickles it
a few bytes at a time never trips a read timeout. Every reply envhub reads from a remote
server is read here, within :func:`reply_limit` and a deadline over the whole body: envhub's
own runners (the HTTP wire through :class:`~envhub.client.pool.Pool`, the WebSocket wire's
largest message) and the bridges to other ecosystems' servers
(:mod:`envhub.interop.replies`). One definition of the bound, so the two never drift.

Whose fault each outcome is (issue 33, ``envhub/interop/README.md``): a body over the bound,
or one that is not the reply asked for, is the server's: :class:`~envhub.errors.EpisodeError`,
``env_error``; a body still arriving at the deadline is
:class:`~envhub.deadline.DeadlineExceeded`, which each caller reports as the machinery's
``infra_error``. Nothing a remote server answers is the model's.
"""

from __future__ import annotations

import time
from typing import TypeVar

import httpx
from pydantic import BaseModel, ValidationError

from ..deadline import DeadlineExceeded
from ..errors import EpisodeError

MIN_REPLY_BYTES = 64 * 2**20
"""A reply may always be this long (a long transcript of tool results fits); one that echoes
its request may be four times the request (:func:`reply_limit`)."""

M = TypeVar("M", bound=BaseModel)

_DECODED = ("content-encoding", "content-length", "transfer-encoding")
"""Headers that describe the body as sent, not as read (decoded, whole)."""


def reply_limit(request_bytes: int = 0) -> int:
    """The longest reply read for a request of ``request_bytes`` (servers echo requests)."""
    return max(MIN_REPLY_BYTES, 4 * request_bytes)


def declared_within(resp: httpx.Response, limit: int, who: str) -> None:
    """Refuse, unread, a reply whose ``content-length`` is over ``limit``."""
    declared = resp.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise EpisodeError(f"{who} answered {declared} bytes, over the {limit}-byte reply bound")


class _Body:
    """A body read chunk by chunk, refused past ``limit`` bytes or past ``deadline``."""

    def __init__(self, limit: int, deadline: float, who: str) -> None:
        self.limit, self.deadline, self.who = limit, deadline, who
        self.chunks: list[bytes] = []
        self.size = 0

    def take(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.limit:
            raise EpisodeError(
                f"{self.who} answered over the {self.limit}-byte reply bound; the rest was not read"
            )
        if time.monotonic() > self.deadline:
            raise DeadlineExceeded(f"{self.who} was still sending its answer at the deadline")
        self.chunks.append(chunk)

    def whole(self) -> bytes:
        return b"".join(self.chunks)


def body_within(resp: httpx.Response, limit: int, deadline: float, who: str) -> bytes:
    """The body of streamed ``resp``, decoded, read within ``limit`` bytes and ``deadline``.

    ``deadline`` is a :func:`time.monotonic` time. Decoded bytes count, so a compressed bomb
    counts whole.

    Raises:
        EpisodeError: The body is (or declares itself) over ``limit``; the rest is not read.
        DeadlineExceeded: It was still arriving at ``deadline``.
    """
    declared_within(resp, limit, who)
    body = _Body(limit, deadline, who)
    for chunk in resp.iter_bytes():
        body.take(chunk)
    return body.whole()


async def abody_within(resp: httpx.Response, limit: int, deadline: float, who: str) -> bytes:
    """Async :func:`body_within`."""
    declared_within(resp, limit, who)
    body = _Body(limit, deadline, who)
    async for chunk in resp.aiter_bytes():
        body.take(chunk)
    return body.whole()


def answered(resp: httpx.Response, body: bytes) -> httpx.Response:
    """``resp`` with its ``body`` read: a whole response, as the non-streaming calls give."""
    headers = [(k, v) for k, v in resp.headers.multi_items() if k.lower() not in _DECODED]
    return httpx.Response(resp.status_code, headers=headers, content=body, request=resp.request)


def parsed(model: type[M], raw: str | bytes, who: str) -> M:
    """``raw`` validated as ``model``; a reply that is not one is ``who``'s (``env_error``)."""
    try:
        return model.model_validate_json(raw)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the body"
        raise EpisodeError(
            f"{who} answered no valid {model.__name__} ({where}: {first['msg']}): {raw[:200]!r}"
        ) from e
