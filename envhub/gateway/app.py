"""The gateway's HTTP face: chat completions and responses (JSON or SSE), and the models.

``/v1/responses`` is the Responses API over the same path (:mod:`.responses`).

Each route translates HTTP to :class:`~.service.Gateway` and back; the error table is in
:mod:`.service`. Errors have OpenAI's shape (``{"error": {"message", "type", "code"}}``) so
the ``openai`` SDK raises its own typed exceptions. A budget refusal carries
``x-should-retry: false``: the SDK would otherwise retry a 429 on its own.

Streaming (``"stream": true``) sends the completion as server-sent events after the backend
has produced it (engines sample whole turns), in :mod:`envhub.chat_api`'s shape: one delta with
the whole message (and its logprobs when asked), one with the finish reason, one with the
usage, then ``data: [DONE]``. A client that hangs up mid-stream changes nothing: the call was
recorded before the first byte.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response

from envhub import chat_api

from . import responses
from .backends import BackendError
from .episodes import Budget, BudgetExhausted, GatewayEpisode
from .recording import CallRecord
from .service import BadRequest, Gateway, GatewayBroken, Unauthorized, parse_request

_ERRORS: dict[type[Exception], tuple[int, str]] = {
    Unauthorized: (401, "invalid_api_key"),
    BadRequest: (400, "invalid_request_error"),
    BudgetExhausted: (429, "episode_budget_exhausted"),
    BackendError: (502, "backend_error"),
    GatewayBroken: (500, "gateway_error"),
}


def _error(exc: Exception) -> JSONResponse:
    status, kind = next(v for t, v in _ERRORS.items() if isinstance(exc, t))
    headers = {"x-should-retry": "false"} if status in (429, 500, 502) else None
    body = {"error": {"message": str(exc), "type": kind, "code": kind}}
    return JSONResponse(body, status_code=status, headers=headers)


def _key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    scheme, _, token = auth.partition(" ")
    return token.strip() if scheme.lower() == "bearer" else None


def make_app(gateway: Gateway) -> FastAPI:
    """The FastAPI application of ``gateway``."""
    app = FastAPI(title="envhub gateway", docs_url=None, redoc_url=None)
    app.state.gateway = gateway

    @app.get("/health")
    async def health() -> dict[str, Any]:
        return {"ok": True, "episodes": len(gateway.episodes), **gateway.counters}

    @app.get("/v1/models")
    async def models(request: Request) -> JSONResponse:
        try:
            gateway.authorize(_key(request))
        except Unauthorized as e:
            return _error(e)
        model = {"id": gateway.backend.name, "object": "model", "owned_by": "envhub"}
        return JSONResponse({"object": "list", "data": [model]})

    _episode_routes(app, gateway)

    @app.post("/v1/episode/step")
    async def episode_step(request: Request) -> JSONResponse:
        try:
            ep, body = await _authorized_body(gateway, request)
            return JSONResponse(await gateway.step(ep, body))
        except tuple(_ERRORS) as e:
            return _error(e)

    @app.post("/v1/chat/completions", response_model=None)
    async def chat(request: Request) -> Response:
        try:
            ep, body = await _authorized_body(gateway, request)
            req = parse_request(body)
            rec = await gateway.complete(ep, req)
        except tuple(_ERRORS) as e:
            return _error(e)
        response = completion(rec, req.model or gateway.backend.name, req.logprobs)
        if req.stream:  # sampled whole, sent as events (the usage chunk always comes)
            return Response(chat_api.sse(response), media_type="text/event-stream")
        return JSONResponse(response)

    @app.post("/v1/responses", response_model=None)
    async def respond(request: Request) -> Response:
        try:
            ep, body = await _authorized_body(gateway, request)
            req = responses.chat_request(body)
            rec = await gateway.complete(ep, req)
        except tuple(_ERRORS) as e:
            return _error(e)
        answer = responses.response(rec, req.model or gateway.backend.name)
        if req.stream:
            return Response(responses.sse(answer), media_type="text/event-stream")
        return JSONResponse(answer)

    return app


def _episode_routes(app: FastAPI, gateway: Gateway) -> None:
    """``POST /episodes`` (open: its key) and ``DELETE /episodes/{id}`` (close: its trace).

    For an orchestrator outside this process (``envhub gateway``); they need the admin key.
    """

    @app.post("/episodes")
    async def open_episode(request: Request) -> JSONResponse:
        try:
            gateway.check_admin(_key(request))
            body = await request.json() if await request.body() else {}
            budget = Budget(**{k: body[k] for k in ("max_calls", "max_tokens") if k in body})
        except Unauthorized as e:
            return _error(e)
        except (ValueError, TypeError) as e:
            return _error(BadRequest(f"invalid episode settings: {e}"))
        ep = gateway.open(body.get("id"), budget)
        return JSONResponse({"id": ep.id, "api_key": ep.key, "model": gateway.backend.name})

    @app.delete("/episodes/{episode_id}")
    async def close_episode(episode_id: str, request: Request) -> JSONResponse:
        try:
            gateway.check_admin(_key(request))
        except Unauthorized as e:
            return _error(e)
        ep = gateway.episodes.by_id(episode_id)
        if ep is None:
            body = {"error": {"message": f"no live episode {episode_id!r}", "type": "not_found"}}
            return JSONResponse(body, status_code=404)
        gateway.close(ep)
        return JSONResponse(episode_trace(ep))


def episode_trace(ep: GatewayEpisode) -> dict[str, Any]:
    """What the gateway knows of a closed episode (the gateway's part of a trace line)."""
    rec = ep.recorder
    return {
        "episode": ep.id,
        "truncated": ep.truncated,
        "infra_error": ep.infra_error,
        "requests": ep.requests,
        "segments": rec.segments,
        "retokenized": rec.retokenized,
        "calls": [c.to_json() for c in rec.calls],
    }


def _logprobs(rec: CallRecord) -> dict[str, Any]:
    """OpenAI's ``logprobs`` object; ``token`` is the sampled id (as text), no alternatives."""
    pairs = zip(rec.sampled_ids, rec.logprobs, strict=False)
    return {
        "content": [
            {"token": str(i), "logprob": lp, "bytes": None, "top_logprobs": []} for i, lp in pairs
        ]
    }


def completion(rec: CallRecord, model: str, logprobs: bool) -> dict[str, Any]:
    """The ``chat.completion`` object of a recorded call (:mod:`envhub.chat_api`'s shape)."""
    response = chat_api.completion(
        rec.reply,
        model=model,
        usage=chat_api.token_usage(len(rec.prompt_ids), len(rec.sampled_ids)),
        finish_reason=rec.finish_reason or "stop",
        id=f"chatcmpl-{rec.segment}-{rec.call}-{int(rec.started * 1000)}",
    )
    response["choices"][0]["logprobs"] = _logprobs(rec) if logprobs else None
    return response


async def _authorized_body(gateway: Gateway, request: Request) -> tuple[GatewayEpisode, Any]:
    """The episode the request's key opens (401 otherwise), and its JSON body (400 if none)."""
    ep = gateway.authorize(_key(request))
    try:
        return ep, await request.json()
    except ValueError:
        raise BadRequest("the body is not JSON") from None
