"""The gateway's trace format: ``RUN/traces/episodes.jsonl``, one JSON object per episode.

An episode line::

    {"format": "envhub-gateway-trace/1",
     "episode": "gsm8k/task-3/0",          # the runner's episode id
     "env": "gsm8k", "task_id": "task-3", "sample": 0, "seed": 123,
     "status": "ok", "reward": 1.0, "components": {...}, "truncated": false,
     "error": null, "agent": {"exit_code": 0, "wall_s": 1.2, "stderr_tail": "..."},
     "segments": 1, "retokenized": 0,
     "calls": [CALL, ...]}

and each ``CALL`` (:class:`~envhub.gateway.recording.CallRecord`)::

    {"call": 0, "segment": 0,
     "messages": [...],          # the request's messages as the agent sent them
     "tools": null,              # the request's tools (OpenAI form) or null
     "prompt_ids": [...],        # the ids the engine was given
     "reused_prefix": 0,         # leading prompt ids reused from the call it extends
     "retokenized": false,       # rendered from messages after an earlier call (history edit)
     "sampled_ids": [...], "logprobs": [...],   # what the engine sampled, one logprob each
     "weights_version": 0, "finish_reason": "stop",
     "reply": {"role": "assistant", "content": "..."},   # what the agent received
     "started": 1732890000.0, "latency_s": 0.05}

Ids are empty behind an upstream backend (no tokenizer). ``envhub rollouts RUN`` reads the
file (:func:`rollout_records`), as it reads a training run's rollout logs.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

FORMAT = "envhub-gateway-trace/1"
TRACE_FILE = Path("traces") / "episodes.jsonl"


class TraceWriter:
    """Appends episode lines to ``RUN/traces/episodes.jsonl`` (thread-safe, flushed per line)."""

    def __init__(self, run_dir: Path) -> None:
        """Open (append) the trace of ``run_dir``."""
        self.path = Path(run_dir) / TRACE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()

    def write(self, episode: dict[str, Any]) -> None:
        """Append one episode."""
        line = json.dumps({"format": FORMAT, **episode}, ensure_ascii=False)
        with self._lock, self.path.open("a", encoding="utf-8") as f:
            f.write(line + "\n")


def read_trace(run_dir: Path) -> Iterator[dict[str, Any]]:
    """The episode lines of ``run_dir``'s trace (a torn last line is skipped)."""
    path = Path(run_dir) / TRACE_FILE
    if not path.exists():
        return
    with path.open(encoding="utf-8") as f:
        for line in f:
            try:
                yield json.loads(line)
            except ValueError:
                continue


def _content(message: dict[str, Any]) -> str:
    text = message.get("content") or ""
    if not isinstance(text, str):
        text = json.dumps(text)
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        text += f"\n[tool call] {fn.get('name')}({fn.get('arguments')})"
    return text


def rollout_records(run_dir: Path) -> list[dict[str, Any]]:
    """The trace as ``envhub rollouts`` records (step 0): the opening, then each call.

    Per call: the messages the agent added since the previous reply (``env``: tool results,
    its own turns), then the model's reply (``assistant``).
    """
    out = []
    for ep in read_trace(run_dir):
        calls = ep.get("calls") or []
        opening = calls[0]["messages"] if calls else []
        messages: list[dict[str, Any]] = []
        seen = len(opening)
        for c in calls:
            added = c["messages"][seen:] if c is not calls[0] else []
            for m in added:
                messages.append({"role": "env", "content": f"[{m.get('role')}] {_content(m)}"})
            messages.append({"role": "assistant", "content": _content(c["reply"])})
            seen = len(c["messages"]) + 1
        out.append(
            {
                "step": 0,
                "env": ep.get("env", ""),
                "group": 0,
                "task_id": ep.get("task_id"),
                "seed": ep.get("seed"),
                "prompt": "\n".join(_content(m) for m in opening),
                "messages": messages,
                "prompt_tokens": len(calls[0]["prompt_ids"]) if calls else 0,
                "response_tokens": sum(len(c["sampled_ids"]) for c in calls),
                "total_tokens": sum(len(c["prompt_ids"]) + len(c["sampled_ids"]) for c in calls),
                "reward": ep.get("reward", 0.0),
                "components": ep.get("components", {}),
                "status": ep.get("status"),
                "error": ep.get("error"),
                "end": "truncated" if ep.get("truncated") else "terminated",
                "turns": len(calls),
                "advantage": None,
                "trained": False,
                "filtered": False,
                "truncated": bool(ep.get("truncated")),
                "overlong_penalty": 0.0,
                "weights_versions": sorted({c.get("weights_version") or 0 for c in calls}),
                "age": 0,
                "segments": ep.get("segments"),
                "retokenized": ep.get("retokenized"),
            }
        )
    return out
