"""The gateway's traces as OpenEnv 0.10's ``TrainingTrace``, and OpenEnv's read back.

OpenEnv's capture proxy hands a trainer a ``TrainingTrace``
(``openenv.core.harness.training``, ``schema_version`` 1): one document per rollout, its
``turns`` the engine calls to train on, each::

    {"node_id": "...",                        # unique in the trace
     "prompt_token_ids": [...], "completion_token_ids": [...], "per_token_logps": [...],
     "loss_mask": [0, ..., 0, 1, ..., 1],     # over prompt + completion; 0 on the prompt
     "request": {"messages": [...], "tools": [...]},
     "response": {"choices": [{"message": {...}, "finish_reason": "stop"}]},
     "metadata": {...}}

An envhub episode (:mod:`envhub.gateway.trace`) maps call for call: ``node_id`` is
``EPISODE/CALL``, the ids and logprobs are the ones the engine sampled, and the mask is 1 on
every sampled id (the gateway's rule: an agent's own assistant turns are prompt ids of a later
call, never completion ids). The episode's reward, status and envhub's call fields ride in
``metadata.envhub``: OpenEnv takes rewards from the environment's ``verify()``, not the trace.

Read back, a ``TrainingTrace`` becomes an episode line of envhub's format (one segment per
call that does not extend the one before). A turn that masks part of its completion cannot
be said in envhub's format (every sampled id is trained) and is refused, as is a trace whose
calls hold no ids (the gateway behind an upstream endpoint records none). No ``openenv`` import:
``tests/interop/test_openenv_trace.py`` checks both ways against the real package.
"""

from __future__ import annotations

from typing import Any

from .trace import FORMAT

EPISODE_KEYS = (
    "episode",
    "env",
    "task_id",
    "sample",
    "seed",
    "status",
    "reward",
    "components",
    "truncated",
    "error",
)
"""The episode's fields that travel in each turn's ``metadata.envhub``."""
CALL_KEYS = (
    "call",
    "segment",
    "reused_prefix",
    "retokenized",
    "weights_version",
    "started",
    "latency_s",
)
"""The call's fields of envhub's own that travel in ``metadata.envhub`` too."""


def to_training_trace(episode: dict[str, Any]) -> dict[str, Any]:
    """One envhub trace episode as an OpenEnv ``TrainingTrace`` (a JSON-ready dict).

    Raises:
        ValueError: a call holds no token ids (an upstream backend's trace).
    """
    turns = []
    shared = {k: episode.get(k) for k in EPISODE_KEYS}
    for c in episode.get("calls") or []:
        node = f"{episode.get('episode')}/{c['call']}"
        if (
            not c["prompt_ids"]
            or not c["sampled_ids"]
            or len(c["logprobs"]) != len(c["sampled_ids"])
        ):
            raise ValueError(
                f"call {node} holds no token ids and logprobs (a trace behind an "
                "upstream endpoint): OpenEnv's TrainingTrace needs them"
            )
        turns.append(
            {
                "node_id": node,
                "prompt_token_ids": c["prompt_ids"],
                "completion_token_ids": c["sampled_ids"],
                "per_token_logps": c["logprobs"],
                "loss_mask": [0] * len(c["prompt_ids"]) + [1] * len(c["sampled_ids"]),
                "request": {"messages": c["messages"], "tools": c.get("tools")},
                "response": {
                    "choices": [{"message": c["reply"], "finish_reason": c["finish_reason"]}]
                },
                "metadata": {
                    "node_id": node,
                    "envhub": {**shared, **{k: c.get(k) for k in CALL_KEYS}},
                },
            }
        )
    return {"schema_version": 1, "turns": turns}


def _call(i: int, turn: dict[str, Any], previous: dict[str, Any] | None) -> dict[str, Any]:
    prompt, sampled = turn["prompt_token_ids"], turn["completion_token_ids"]
    mask = turn["loss_mask"]
    if mask != [0] * len(prompt) + [1] * len(sampled):
        raise ValueError(
            f"turn {turn['node_id']} masks part of its completion (or trains its "
            "prompt): envhub's traces train every sampled id"
        )
    choice = (turn.get("response", {}).get("choices") or [{}])[0]
    reused = 0
    if previous is not None:
        before = previous["prompt_ids"] + previous["sampled_ids"]
        reused = len(before) if prompt[: len(before)] == before else 0
    segment = 0 if previous is None else previous["segment"] + (reused == 0)
    own = (turn.get("metadata") or {}).get("envhub") or {}
    return {
        "call": i,
        "segment": segment,
        "messages": turn.get("request", {}).get("messages") or [],
        "tools": turn.get("request", {}).get("tools"),
        "prompt_ids": prompt,
        "reused_prefix": reused,
        "retokenized": bool(i and not reused),
        "sampled_ids": sampled,
        "logprobs": turn["per_token_logps"],
        "weights_version": own.get("weights_version") or 0,
        "finish_reason": choice.get("finish_reason"),
        "reply": choice.get("message") or {"role": "assistant", "content": ""},
        "started": own.get("started"),
        "latency_s": own.get("latency_s"),
    }


def from_training_trace(trace: dict[str, Any], episode: str | None = None) -> dict[str, Any]:
    """An OpenEnv ``TrainingTrace`` as one episode line of envhub's trace format.

    The episode's fields come from the turns' ``metadata.envhub`` where an envhub export put
    them; otherwise the episode is ``episode`` (default: the first turn's node id) with no
    reward (``status`` ``ok``: OpenEnv's rewards come from ``verify()``, not the trace).

    Raises:
        ValueError: not a ``TrainingTrace`` of schema 1, or a turn envhub cannot say.
    """
    if trace.get("schema_version") != 1 or not isinstance(trace.get("turns"), list):
        raise ValueError("not an OpenEnv TrainingTrace (schema_version 1, a list of turns)")
    calls: list[dict[str, Any]] = []
    for i, turn in enumerate(trace["turns"]):
        calls.append(_call(i, turn, calls[-1] if calls else None))
    turns = trace["turns"]
    own = ((turns[0].get("metadata") or {}).get("envhub") or {}) if turns else {}
    fields = {k: own.get(k) for k in EPISODE_KEYS}
    fields["episode"] = fields["episode"] or episode or (turns[0]["node_id"] if turns else "")
    fields["status"] = fields["status"] or "ok"
    segments = calls[-1]["segment"] + 1 if calls else 0
    retokenized = sum(c["retokenized"] for c in calls)
    return {
        "format": FORMAT,
        **fields,
        "segments": segments,
        "retokenized": retokenized,
        "calls": calls,
    }
