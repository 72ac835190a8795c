"""OpenEnv 0.10's Task API on ``envhub serve NAME --openenv``: the environment's tasks, listed.

OpenEnv 0.10 servers answer ``GET /list_environments``, ``GET /{env_name}/splits`` and
``POST /{env_name}/tasks | num_tasks | task | task_range`` (``{"split": ..., "index" | "start",
"stop"}``), the shapes of its ``ListTasksRequest`` family. envhub answers them from the
environment's own tasks. A task is its ``task_id`` and its opening ``messages``: never its
gold answer or metadata (the agent's port serves no answers; envhub's ``/tasks`` gives them,
behind ``--answers``). Play one with the WebSocket ``reset`` and ``{"task_id": ...}``.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, HTTPException
from pydantic import BaseModel, ConfigDict

SPLITS = ("train", "validation", "test")
"""The splits looked for; those whose tasks load and are not empty are listed."""


class SplitRequest(BaseModel):
    """OpenEnv's ``ListTasksRequest`` / ``NumTasksRequest``."""

    model_config = ConfigDict(extra="forbid")
    split: str


class TaskRequest(SplitRequest):
    """OpenEnv's ``GetTaskRequest``."""

    index: int


class RangeRequest(SplitRequest):
    """OpenEnv's ``GetTaskRangeRequest`` (Python slice bounds)."""

    start: int | None = None
    stop: int | None = None


def install(app: FastAPI, server: Any) -> None:
    """Mount the Task API on ``app`` for ``server`` (an :class:`~envhub.server.app.Server`)."""
    env, name = server.env, server.env.spec.name

    async def tasks_of(env_name: str, split: str) -> list[dict[str, Any]]:
        if env_name.lower() != name.lower():
            raise HTTPException(404, f"unknown environment {env_name!r}; this server has {name!r}")
        try:
            tasks = await server.run(env.tasks, split)
        except (KeyError, ValueError, FileNotFoundError) as e:
            raise HTTPException(400, f"no split {split!r} here: {e}") from e
        return [_task(env, t) for t in tasks]

    async def splits(env_name: str) -> list[dict[str, str]]:
        found = []
        for split in SPLITS:
            try:
                if await tasks_of(env_name, split):
                    found.append({"name": split, "type": split})
            except HTTPException as e:
                if e.status_code == 404:
                    raise
        return found

    async def listing(env_name: str, body: SplitRequest) -> dict[str, Any]:
        return {"tasks": await tasks_of(env_name, body.split), "env_name": name}

    async def count(env_name: str, body: SplitRequest) -> dict[str, int]:
        return {"num_tasks": len(await tasks_of(env_name, body.split))}

    async def one(env_name: str, body: TaskRequest) -> dict[str, Any]:
        tasks = await tasks_of(env_name, body.split)
        if not 0 <= body.index < len(tasks):
            raise HTTPException(400, f"Invalid task index: {body.split} has {len(tasks)} tasks")
        return {"task": tasks[body.index]}

    async def some(env_name: str, body: RangeRequest) -> dict[str, Any]:
        return {"tasks": (await tasks_of(env_name, body.split))[body.start : body.stop]}

    app.add_api_route("/list_environments", lambda: [name], methods=["GET"])
    app.add_api_route("/{env_name}/splits", splits, methods=["GET"])
    for path, fn in (("tasks", listing), ("num_tasks", count), ("task", one), ("task_range", some)):
        app.add_api_route(f"/{{env_name}}/{path}", fn, methods=["POST"])


def _task(env: Any, task: Any) -> dict[str, Any]:
    messages = env.opening_messages(task)
    return {
        "task_id": task.task_id,
        "messages": [m.model_dump(exclude_none=True) for m in messages],
    }
