"""The HTTP wire: the :class:`~envhub.client.transport.Wire` over ``envhub serve``'s JSON routes.

Each call builds its body once (the models of :mod:`envhub.wire`, or for a step the message
already serialised, spliced into the envelope), yields its request and reads the answer. A
call a saturated server refused unstarted (``overloaded``) is sent again within the admission
wait, uncounted; a dropped connection or another 429/503 within ``retries`` (see
:class:`envhub.wire.Backoff`); past them it raises :class:`~envhub.wire.Transient`. A body over
the server's limit is sent as its size alone (``oversized``), which the server answers as the
model's ``invalid_action``. Every answer is read within a bound and a deadline (the pool's,
:mod:`envhub.client.reading`), and one that is over the bound or not the body asked for is
the server's fault: :class:`~envhub.errors.EpisodeError`, ``env_error``.
"""

from __future__ import annotations

import json
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from ..core import valid_unicode
from ..errors import EpisodeError
from ..types import Message, ResetResult, Score, StepResult, Task
from ..wire import (
    OVERLOADED,
    RETRY_CODES,
    Backoff,
    CloseRequest,
    EnvInfo,
    FinishRequest,
    ResetRequest,
    ResetResponse,
    TaskPage,
    Transient,
    VerifyItem,
    VerifyRequest,
    VerifyResponse,
    raise_for_error,
)
from .plan import Http, Pause, Plan
from .pool import Pool
from .reading import parsed
from .transport import Items, Limits, Session

_JSON = {"content-type": "application/json"}
M = TypeVar("M", bound=BaseModel)


class HttpWire:
    """One handle's calls over the HTTP routes; its :class:`Session` travels in each body."""

    name = "http"

    def __init__(self, pool: Pool, limits: Limits, session: Session) -> None:
        """Calls over ``pool``'s connections within ``limits``, in ``session``."""
        self.pool, self.limits, self.session = pool, limits, session
        self.http = self

    @property
    def info(self) -> EnvInfo:
        """The server's ``/info``."""
        return self.pool.info

    # ------------------------------------------------------------------ sending

    def request(self, method: str, path: str, **kwargs: Any) -> Plan[httpx.Response]:
        """One request, sent again past refusals and drops (see :meth:`_again`)."""
        backoff: Backoff | None = None
        while True:
            try:
                resp = yield Http(method, path, kwargs)
            except httpx.TransportError as e:
                resp = e
            backoff, pause = self._again(resp, backoff)
            if pause is None:
                return resp
            yield Pause(pause)

    def _post(self, path: str, content: bytes) -> Plan[httpx.Response]:
        return self.request("POST", path, content=content, headers=_JSON)

    def _again(
        self, resp: httpx.Response | httpx.TransportError, backoff: Backoff | None
    ) -> tuple[Backoff | None, float | None]:
        """The pause before sending again (``None``: ``resp`` is the answer); raises past it.

        An ``overloaded`` refusal is sent again within the admission budget, uncounted; a
        dropped connection or another 429/503 within ``retries``.
        """
        if isinstance(resp, httpx.Response) and resp.status_code not in RETRY_CODES:
            _raise_for(resp)
            return backoff, None
        backoff = backoff or Backoff(self.limits.retries, self.limits.admission_s)
        if isinstance(resp, httpx.Response):
            pause = backoff.pause(_kind(resp) == OVERLOADED, _retry_after(resp))
            if pause is None:
                _raise_for(resp)
            return backoff, pause
        pause = backoff.pause(False)
        if pause is None:
            raise Transient(f"{type(resp).__name__}: {resp}") from resp
        return backoff, pause

    # ------------------------------------------------------------------ the episode

    def reset(self, seed: int | None, task_id: str | None, aio: bool = False) -> Plan[ResetResult]:
        """``POST /reset``, closing the session's episode under way, if any."""
        s = self.session
        close = s.id if s.live else None
        body = ResetRequest(
            seed=seed, task_id=task_id, close_session=close, close_secret=close and s.secret
        )
        resp = yield from self._post("/reset", body.model_dump_json(exclude_none=True).encode())
        return s.opened(self._parsed(ResetResponse, resp, "/reset"))

    def step(self, message_json: str, aio: bool = False) -> Plan[StepResult]:
        """``POST /step`` with the message already serialised (as on the WebSocket)."""
        resp = yield from self._post("/step", self._step_body(message_json))
        return self.session.stepped(self._parsed(StepResult, resp, "/step"))

    def _step_body(self, message_json: str) -> bytes:
        """The ``/step`` body; over the server's limit, the stand-in that gives its size."""
        s = self.session
        head = f'{{"session_id":{json.dumps(s.id)},"session_secret":'
        head += f'{json.dumps(s.secret)},"seq":{s.steps + 1},'
        content = f'{head}"message":{message_json}}}'.encode()
        if self.limits.max_body and len(content) > self.limits.max_body:
            content = f'{head}"oversized":{len(content)}}}'.encode()
        return content

    def finish(self, aio: bool = False) -> Plan[StepResult]:
        """``POST /finish``: the episode's final accounting."""
        s = self.session
        body = FinishRequest(session_id=s.id, session_secret=s.secret)
        resp = yield from self._post("/finish", body.model_dump_json().encode())
        return s.stepped(self._parsed(StepResult, resp, "/finish"))

    def close(self) -> None:
        """``POST /close`` for the episode under way, if any (best effort, not retried)."""
        s = self.session
        if s.live:
            s.end()
            body = CloseRequest(session_id=s.id, session_secret=s.secret)
            content = body.model_dump_json().encode()
            try:
                self.pool.fetch(Http("POST", "/close", {"content": content, "headers": _JSON}))
            except (httpx.HTTPError, EpisodeError, Transient):
                pass

    # ------------------------------------------------------------------ beside the episode

    def verify(self, items: Items) -> Plan[list[Score]]:
        """``POST /verify``: one score per item, in order."""
        resp = yield from self._post("/verify", self._verify_body(items))
        return self._parsed(VerifyResponse, resp, "/verify").scores

    def _parsed(self, model: type[M], resp: httpx.Response, path: str) -> M:
        """``resp``'s body as ``model``; any other answer is the server's (``env_error``)."""
        return parsed(model, resp.content, f"the server at {self.pool.url} ({path})")

    def _verify_body(self, items: Items) -> bytes:
        """The ``/verify`` body; an item over the server's limit goes as its size."""
        body = VerifyRequest(items=[_item(t, r) for t, r in items])
        content = body.model_dump_json(exclude_none=True).encode()
        limit = self.limits.max_body
        if not limit or len(content) <= limit:
            return content
        stand_ins = [_stand_in(item, limit) for item in body.items]
        return VerifyRequest(items=stand_ins).model_dump_json(exclude_none=True).encode()

    def tasks(self, split: str | None) -> Plan[list[Task]]:
        """``GET /tasks``, page by page."""
        out: list[Task] = []
        while True:
            params: dict[str, Any] = {"offset": len(out), "limit": 1000}
            if split:
                params["split"] = split
            resp = yield from self.request("GET", "/tasks", params=params)
            page = TaskPage.model_validate_json(resp.content)
            out.extend(page.tasks)
            if len(out) >= page.total or not page.tasks:
                return out


def _item(task: Task | str, response: Message | str) -> VerifyItem:
    message = valid_unicode(Message.coerce(response))
    if isinstance(task, str):
        return VerifyItem(task_id=task, response=message)
    return VerifyItem(task=task, response=message)


def _stand_in(item: VerifyItem, limit: int) -> VerifyItem:
    """``item``, or if it alone is over the body ``limit``, the item that gives its size."""
    size = len(item.model_dump_json(exclude_none=True).encode())
    if size <= limit:
        return item
    return item.model_copy(update={"response": None, "oversized": size})


def _raise_for(resp: httpx.Response) -> None:
    if resp.status_code < 400:
        return
    try:
        body = resp.json()
    except ValueError:
        body = {"error": resp.text[:300]}
    if not isinstance(body, dict):
        body = {"error": str(body)[:300]}
    kind, message = body.get("kind", ""), body.get("error") or str(body)[:300]
    raise_for_error(resp.status_code, kind, message)


def _retry_after(resp: httpx.Response) -> float | None:
    try:
        return min(float(resp.headers.get("Retry-After", "")), 5.0)
    except ValueError:
        return None


def _kind(resp: httpx.Response) -> str:
    try:
        body = resp.json()
    except ValueError:
        return ""
    return body.get("kind", "") if isinstance(body, dict) else ""
