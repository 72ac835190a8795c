"""NeMo Gym's resources-server protocol: ``envhub serve NAME --nemo-gym``.

A NeMo Gym (or NeMo RL) config points its resources server at an envhub server. Two routes:

- ``POST /seed_session``: any body; answers ``{}`` (envhub's verification holds no session).
- ``POST /verify``: NeMo Gym's ``BaseVerifyRequest`` (``responses_create_params``, the OpenAI
  Responses request; ``response``, the Responses object the model produced), plus the row's
  fields naming the envhub task: ``task_id``, a whole ``task``, or a gold answer (``gold``, or
  NeMo Gym's ``expected_answer``). The answer is NeMo Gym's ``BaseVerifyResponse``: the request
  echoed with ``reward``, and envhub's ``status``, ``components`` and ``error`` under
  ``envhub``.

The response verified is the text of the last assistant message in ``response.output`` (its
``output_text`` parts); reasoning items and tool calls are not read. A score the model earned,
``invalid_action`` and ``timeout`` included, is a 200 with its reward. A machinery failure
(``infra_error``, ``env_error``) has no reward NeMo Gym could tell from a wrong answer, so it
is a 503 naming the failure: NeMo Gym's client raises on it instead of training on a 0.
``/aggregate_metrics`` is NeMo Gym's own (its agent server computes it from these answers).

``/verify`` grades any guess against any task (by ``task_id``, or against a ``gold`` /
``expected_answer`` the caller sends): a free oracle to whoever reaches it. So, like envhub's
own ``/verify``, it answers 403 unless the server was started with ``--answers``
(:data:`ORACLES`; ``ServerSettings.answers``): ``envhub serve NAME --nemo-gym --answers``, on a
port that NeMo Gym's trainer reaches and the agent does not.

The bodies are written here from nemo-gym's models (its ``base_resources_server``), not
imported: nemo-gym needs Python 3.12 and pins ``mcp<2``, which envhub's MCP extra cannot share.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import FastAPI, Response
from pydantic import BaseModel, ConfigDict, Field

from envhub.core import fix_surrogates
from envhub.server.app import _verify_items
from envhub.server.errors import error_response
from envhub.types import Status, Task
from envhub.wire import VerifyItem

PATHS = frozenset({"/seed_session", "/verify"})
"""The paths this dialect answers; envhub's own ``/verify`` gives way."""
ORACLES = frozenset({"/verify"})
"""Its paths that grade guesses: refused unless the server serves answers (``--answers``)."""

MACHINERY = frozenset({Status.INFRA_ERROR, Status.ENV_ERROR})
JSON = "application/json"


class NemoGymVerifyRequest(BaseModel):
    """NeMo Gym's ``BaseVerifyRequest`` and the fields that name the envhub task."""

    model_config = ConfigDict(extra="allow")

    responses_create_params: dict[str, Any]
    """The OpenAI Responses request the rollout was made with (echoed back)."""
    response: dict[str, Any]
    """The OpenAI Responses object the model produced; ``output`` holds its messages."""
    task_id: str | None = None
    task: Task | None = None
    gold: str | None = None
    expected_answer: str | None = None
    """NeMo Gym's name for the gold answer (its math servers'); used when ``gold`` is absent."""


class EnvhubVerdict(BaseModel):
    """envhub's accounting beside NeMo Gym's ``reward``."""

    status: Status
    components: dict[str, float] = Field(default_factory=dict)
    error: str | None = None


def response_text(response: dict[str, Any]) -> str:
    """The text of the last assistant message of a Responses object ("" when there is none)."""
    messages = [
        item
        for item in response.get("output") or []
        if isinstance(item, dict) and item.get("type", "message") == "message"
        and item.get("role", "assistant") == "assistant"
    ]  # fmt: skip
    if not messages:
        return ""
    parts = messages[-1].get("content") or []
    if isinstance(parts, str):
        return parts
    texts = [p.get("text", "") for p in parts if p.get("type") == "output_text"]
    wrong = [t for t in texts if not isinstance(t, str)]
    if wrong:
        raise ValueError(
            f"an output_text part's text is {type(wrong[0]).__name__}, not a string: send the "
            "Responses object as the model server wrote it"
        )
    return "".join(texts)


def _item(body: NemoGymVerifyRequest) -> VerifyItem:
    gold = body.gold if body.gold is not None else body.expected_answer
    if body.task_id is None and body.task is None and gold is None:
        raise ValueError(
            "the verify request names no envhub task: add task_id (or task, or gold / "
            "expected_answer) to the row beside responses_create_params"
        )
    text = response_text(body.response)
    return VerifyItem(task_id=body.task_id, task=body.task, gold=gold, response=text)


def _reply(answer: dict[str, Any]) -> Response:
    r"""``answer`` as JSON, lone surrogates in the echoed request replaced by U+FFFD.

    The model's text may escape one (``"\ud800"``): no JSON reply can carry it, so echoing it
    failed the answer (a 422 the caller charged to itself); envhub's runners send such text as
    U+FFFD (``envhub.core.valid_unicode``).
    """
    return Response(fix_surrogates(json.dumps(answer, ensure_ascii=False)), media_type=JSON)


def install(app: FastAPI, server: Any) -> frozenset[str]:
    """Mount NeMo Gym's resources-server routes on ``app`` for ``server``."""

    async def seed_session(body: dict[str, Any] | None = None) -> dict[str, Any]:
        return {}

    async def verify(body: NemoGymVerifyRequest) -> Any:
        item = _item(body)
        # the one reading of a verify item, as /verify's
        scores = await server.run(_verify_items, server.env, [item], server.settings.max_body_bytes)
        score = scores[0]
        server.metrics[f"verify_{score.status.value}"] += 1
        if score.status in MACHINERY:
            return error_response(
                503, score.status.value, f"envhub could not verify: {score.error}",
                **{"Retry-After": "1"},
            )  # fmt: skip
        verdict = EnvhubVerdict(status=score.status, components=score.components, error=score.error)
        return _reply(
            {
                **body.model_dump(mode="json", exclude_unset=True),
                "reward": score.reward,
                "envhub": verdict.model_dump(mode="json"),
            }
        )

    app.add_api_route("/seed_session", seed_session, methods=["POST"])
    app.add_api_route("/verify", verify, methods=["POST"])
    return PATHS
