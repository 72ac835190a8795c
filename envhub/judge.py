r"""An LLM judge as a reward component, configured in YAML.

::

    reward:
      weights: {correctness: 1.0, explanation: 0.5}
      judges:
        explanation:
          base_url: http://127.0.0.1:8000/v1      # any OpenAI-compatible server
          model: HuggingFaceTB/SmolLM2-135M-Instruct
          prompt: "Task: {task}\nGold: {gold}\nAnswer: {response}\nIs it explained? yes or no"
          verdict: {kind: yes_no}                 # or {kind: score, max: 10}
          timeout_s: 30
          max_concurrency: 4

A judge is usable alone (weight only it) or beside the environment's own components. The
rule that matters: a judge that cannot be reached, times out or answers something the verdict
rule cannot parse raises :class:`~envhub.errors.InfraError`, so that episode's status is
``infra_error`` (dropped from training, never a reward of 0). Calls are cached by their exact
input (endpoint, model, messages, limits), so a repeated response costs nothing.

:func:`with_judges` makes the class that :func:`envhub.make` builds: the environment's class
with its ``score`` (and the final ``env_response`` of multi-turn episodes) extended by the
judge components.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, ClassVar

import httpx

from .core import Episode, Feedback, TaskEnv
from .errors import ConfigError, InfraError
from .spec import EnvSpec, JudgeSpec, VerdictSpec
from .types import Message, Task

CACHE_SIZE = 10_000
"""Judge verdicts kept in memory (least recently used dropped first)."""


def _yes_no(text: str, rule: VerdictSpec) -> float | None:
    found = re.search(r"\b(yes|no)\b", text, re.IGNORECASE)
    return None if found is None else float(found.group(1).lower() == "yes")


def _score(text: str, rule: VerdictSpec) -> float | None:
    found = re.search(rule.pattern, text)
    if found is None:
        return None
    value = float(found.group(1))
    return value / rule.max if 0 <= value <= rule.max else None


VERDICTS: dict[str, Callable[[str, VerdictSpec], float | None]] = {
    "yes_no": _yes_no,
    "score": _score,
}


def parse_verdict(text: str, rule: VerdictSpec) -> float | None:
    """The component value a judge's answer gives, or ``None`` when it cannot be parsed."""
    return VERDICTS[rule.kind](text, rule)


class _Cache:
    """A thread-safe LRU of verdicts by exact request."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._data: OrderedDict[str, float] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> float | None:
        with self._lock:
            if key in self._data:
                self._data.move_to_end(key)
                return self._data[key]
            return None

    def put(self, key: str, value: float) -> None:
        with self._lock:
            self._data[key] = value
            self._data.move_to_end(key)
            while len(self._data) > self.size:
                self._data.popitem(last=False)


CACHE = _Cache(CACHE_SIZE)
_GATES: dict[tuple[str, str, int], threading.BoundedSemaphore] = {}
_GATES_LOCK = threading.Lock()


def _gate(spec: JudgeSpec) -> threading.BoundedSemaphore:
    """The per-process concurrency cap shared by every use of one endpoint and model."""
    key = (spec.base_url, spec.model, spec.max_concurrency)
    with _GATES_LOCK:
        return _GATES.setdefault(key, threading.BoundedSemaphore(spec.max_concurrency))


class Judge:
    """One configured judge: renders its prompt, asks the endpoint, parses the verdict."""

    def __init__(self, name: str, spec: JudgeSpec) -> None:
        """Keep the configuration; nothing is contacted until :meth:`__call__`."""
        self.name = name
        self.spec = spec

    def messages(self, task: Task, response: Message) -> list[dict[str, str]]:
        """The chat messages sent to the judge for one response."""
        fields = {**task.metadata, "task": task.prompt, "gold": task.answer or ""}
        try:
            text = self.spec.prompt.format(**{**fields, "response": response.content})
        except (KeyError, IndexError) as e:
            raise ConfigError(
                f"judge {self.name!r}: prompt names {e}, which task {task.task_id!r} lacks "
                f"(available: task, response, gold, {', '.join(task.metadata)})"
            ) from e
        system = [{"role": "system", "content": self.spec.system_prompt}]
        return [*(system if self.spec.system_prompt else []), {"role": "user", "content": text}]

    def _request(self, body: dict[str, Any]) -> str:
        headers = {}
        if self.spec.api_key_env and os.environ.get(self.spec.api_key_env):
            headers["Authorization"] = f"Bearer {os.environ[self.spec.api_key_env]}"
        url = self.spec.base_url.rstrip("/") + "/chat/completions"
        where = f"judge {self.name!r} at {url}"
        try:
            with _gate(self.spec):
                r = httpx.post(url, json=body, headers=headers, timeout=self.spec.timeout_s)
        except httpx.TimeoutException as e:
            raise InfraError(f"{where}: no answer within {self.spec.timeout_s}s") from e
        except httpx.HTTPError as e:
            raise InfraError(f"{where}: unreachable ({type(e).__name__}: {e})") from e
        if r.status_code != 200:
            raise InfraError(f"{where}: HTTP {r.status_code}: {r.text[:200]}")
        try:
            return r.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise InfraError(f"{where}: not a chat completion: {r.text[:200]}") from e

    def __call__(self, task: Task, response: Message) -> float:
        """The component value for ``response``; raises :class:`InfraError` when it cannot."""
        body = {
            "model": self.spec.model,
            "messages": self.messages(task, response),
            "temperature": 0,
            "max_tokens": self.spec.max_tokens,
        }
        key = json.dumps([self.spec.base_url, self.spec.verdict.model_dump(), body], sort_keys=True)
        cached = CACHE.get(key)
        if cached is not None:
            return cached
        answer = self._request(body)
        value = parse_verdict(answer, self.spec.verdict)
        if value is None:
            raise InfraError(
                f"judge {self.name!r}: cannot parse a {self.spec.verdict.kind} verdict from "
                f"{answer[:200]!r}; fix the judge prompt or the verdict rule"
            )
        CACHE.put(key, value)
        return value


def judge_names(spec: EnvSpec) -> set[str]:
    """Names of the judge components a spec configures."""
    return set(spec.reward.judges)


class JudgedEnv(TaskEnv):
    """Mixin placed before an environment class: adds the judge components to its scores."""

    judges: ClassVar[dict[str, Judge]] = {}

    def _judge(self, task: Task, response: Message, have: dict[str, float]) -> dict[str, float]:
        return {
            name: judge(task, response) for name, judge in self.judges.items() if name not in have
        }

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """The environment's components plus each judge's."""
        components, details = super().score(task, response)
        return {**components, **self._judge(task, response, components)}, details

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Multi-turn: judge the message that ends the episode with a reward."""
        fb = super().env_response(episode, message)
        if fb.done and fb.components is not None:
            fb.components = {**fb.components, **self._judge(episode.task, message, fb.components)}
        return fb


def with_judges(cls: type, spec: EnvSpec) -> type:
    """``cls`` itself, or a subclass scoring with the spec's judges too."""
    if not spec.reward.judges:
        return cls
    if not (isinstance(cls, type) and issubclass(cls, TaskEnv)):
        raise ConfigError(f"{spec.name}: reward.judges needs a TaskEnv, not {cls!r}")
    clash = sorted(set(spec.reward.judges) & set(cls.components))
    if clash:
        raise ConfigError(
            f"{spec.name}: reward.judges {clash} has the name of a component "
            f"{cls.__name__} computes; give the judge another name"
        )
    judges = {name: Judge(name, j) for name, j in spec.reward.judges.items()}
    namespace = {
        "judges": judges,
        "components": frozenset(cls.components) | set(judges),
        "__module__": cls.__module__,
    }
    return type(f"{cls.__name__}WithJudges", (JudgedEnv, cls), namespace)
