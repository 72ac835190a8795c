r"""An LLM judge as a reward component, configured in YAML.

::

    reward:
      weights: {correctness: 1.0, explanation: 0.5}
      judges:
        explanation:
          base_url: http://127.0.0.1:8000/v1      # any OpenAI-compatible server
          model: HuggingFaceTB/SmolLM2-135M-Instruct
          prompt: "Task: {task}\nGold: {gold}\nAnswer: {response}\nIs it explained?"
          verdict: {kind: yes_no}                 # or {kind: score, max: 10}
          max_response_chars: 8000                # the most of a response the judge reads
          timeout_s: 30
          max_concurrency: 4

A judge is usable alone (weight only it) or beside the environment's own components. The
response it grades is the policy's, so it is written to game the judge; what holds
(:mod:`envhub.judge.verdicts` has the details):

* ``{response}`` becomes the response **delimited and bounded**: between tags with a random
  per-call nonce the response cannot forge (look-alike tags in it escaped), cut at
  ``max_response_chars``, followed by a fixed instruction that the delimited text is data to
  grade, not instructions, and by the verdict format.
* Only the **final verdict** is read: the reply's last line must be ``VERDICT: yes|no``
  (``SCORE: <n>`` with n in 0..max), or the whole reply the JSON object that
  ``structured_output`` asks for by ``response_format`` where the endpoint takes it (an
  endpoint that refuses it is asked in plain text instead, and not asked for JSON again).
* **Who failed decides the status.** No verdict in the reply, a score out of range, or a
  request the endpoint refuses (4xx, its context overflowed included) that it does not refuse
  with an empty response in its place: the response's doing, :class:`~envhub.errors.InvalidAction`
  (``invalid_action``, scored 0 as a truncation). A judge that cannot be reached, times out,
  answers 5xx or 429 or something that is not a chat completion, or refuses the empty
  response too: :class:`~envhub.errors.InfraError` (``infra_error``, dropped, never a 0).

A judge that never writes a verdict in the required form would score every response 0: check a
judge on gold answers (``envhub check``) before training on it. Calls are cached by their
exact input (endpoint, model, verdict rule, limits, the prompt without its nonce), so a
repeated response costs nothing.

:func:`with_judges` makes the class that :func:`envhub.make` builds: the environment's class
with its ``score`` (and the final ``env_response`` of multi-turn episodes) extended by the
judge components. Its steps are async (:class:`JudgedEnv`): a server awaits the judge on its
event loop, and a step waiting on the judge holds no thread; the sync API asks it blocking.
Either way the step's deadline bounds the environment's own hook, and each request to the
judge has the judge's ``timeout_s``; a wait for one of its ``max_concurrency`` slots is
charged to no one (only a server's deadline for the whole call bounds it).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Awaitable, Callable, Generator, Iterator
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

import httpx

from ..core import Episode, Feedback, TaskEnv
from ..errors import ConfigError, EpisodeError, InfraError, InvalidAction, context_overflow
from ..spec import EnvSpec, JudgeSpec, fill_template
from ..types import Message, Task
from .gate import Gate, async_client
from .verdicts import VerdictError, delimit, instructions, nonce, parse_verdict, response_format

T = TypeVar("T")

CACHE_SIZE = 10_000
"""Judge verdicts kept in memory (least recently used dropped first)."""
EMPTY = Message(role="assistant", content="")
"""The response put in place of a refused one, to tell whose the refusal was."""


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
_GATES: dict[tuple[str, str, int], Gate] = {}
_GATES_LOCK = threading.Lock()
_PLAIN_ONLY: set[tuple[str, str]] = set()
"""Endpoints and models that refused ``response_format``: asked in plain text from then on."""


def _gate(spec: JudgeSpec) -> Gate:
    """The per-process concurrency cap shared by every use of one endpoint and model."""
    key = (spec.base_url, spec.model, spec.max_concurrency)
    with _GATES_LOCK:
        return _GATES.setdefault(key, Gate(spec.max_concurrency))


class Refused(Exception):
    """The judge endpoint refused a request (HTTP 4xx other than 429): see :meth:`Judge.blame`."""

    def __init__(self, status: int, text: str) -> None:
        """The HTTP status and the start of the error body."""
        super().__init__(f"HTTP {status}: {text}")
        self.status, self.text = status, text


Ask = Generator[dict[str, Any], str, T]
"""A judge's logic, written once for both forms: it yields each request's body and is sent
the reply's text, or thrown its :class:`Refused` or :class:`InfraError` at the ``yield``.
:func:`_drive` posts the requests blocking, :func:`_adrive` awaits them."""


def _drive(ask: Ask[T], post: Callable[[dict[str, Any]], str]) -> T:
    """Run ``ask``, each request posted by ``post`` on this thread; its result."""
    reply: str | None = None
    failure: Exception | None = None
    while True:
        try:
            body = ask.send(reply) if failure is None else ask.throw(failure)
        except StopIteration as done:
            return done.value
        try:
            reply, failure = post(body), None
        except (Refused, InfraError) as e:
            failure = e


async def _adrive(ask: Ask[T], post: Callable[[dict[str, Any]], Awaitable[str]]) -> T:
    """Async :func:`_drive`: each request awaited on the running loop."""
    reply: str | None = None
    failure: Exception | None = None
    while True:
        try:
            body = ask.send(reply) if failure is None else ask.throw(failure)
        except StopIteration as done:
            return done.value
        try:
            reply, failure = await post(body), None
        except (Refused, InfraError) as e:
            failure = e


class Judge:
    """One configured judge: renders its prompt, asks the endpoint, parses the verdict.

    Called blocking (``judge(task, response)``) or awaited (:meth:`acall`); both run the same
    logic (:meth:`_verdict`: cache, refusal handling, verdict parsing) and differ only in how a
    request is posted (:meth:`_post`, :meth:`_apost`).
    """

    def __init__(self, name: str, spec: JudgeSpec) -> None:
        """Keep the configuration; nothing is contacted until :meth:`__call__`."""
        if "{response}" not in spec.prompt:
            raise ConfigError(f"judge {name!r}: its prompt must contain {{response}}")
        self.name = name
        self.spec = spec
        self.url = spec.base_url.rstrip("/") + "/chat/completions"
        self.where = f"judge {name!r} at {self.url}"

    def messages(self, task: Task, response: Message, tag_nonce: str) -> list[dict[str, str]]:
        """The chat messages sent to the judge for one response (see :mod:`.verdicts`)."""
        spec, text = self.spec, response.content
        fields = {**task.metadata, "task": task.prompt, "gold": task.answer or ""}
        block = delimit(text, tag_nonce, spec.max_response_chars)
        fields = {**fields, "response": block}
        where = f"judge {self.name!r}: prompt"
        prompt = fill_template(spec.prompt, fields, where, f"task {task.task_id!r}")
        after = instructions(tag_nonce, len(text), spec.max_response_chars, spec.verdict)
        user = {"role": "user", "content": f"{prompt}\n\n{after}"}
        system = [{"role": "system", "content": spec.system_prompt}] if spec.system_prompt else []
        return [*system, user]

    # ------------------------------------------------------------------ one request

    def _headers(self) -> dict[str, str]:
        key = self.spec.api_key_env and os.environ.get(self.spec.api_key_env)
        return {"Authorization": f"Bearer {key}"} if key else {}

    def _post(self, body: dict[str, Any]) -> str:
        """The reply's text; raises :class:`Refused` on a 4xx, :class:`InfraError` otherwise."""
        try:
            with _gate(self.spec):
                r = httpx.post(
                    self.url, json=body, headers=self._headers(), timeout=self.spec.timeout_s
                )
        except httpx.HTTPError as e:
            raise self._unreachable(e) from e
        return self._read(r)

    async def _apost(self, body: dict[str, Any]) -> str:
        """Async :meth:`_post`: no thread is held while the request or its slot waits."""
        client = await async_client()
        try:
            async with _gate(self.spec):
                r = await client.post(
                    self.url, json=body, headers=self._headers(), timeout=self.spec.timeout_s
                )
        except httpx.HTTPError as e:
            raise self._unreachable(e) from e
        return self._read(r)

    def _unreachable(self, e: httpx.HTTPError) -> InfraError:
        if isinstance(e, httpx.TimeoutException):
            return InfraError(f"{self.where}: no answer within {self.spec.timeout_s}s")
        return InfraError(f"{self.where}: unreachable ({type(e).__name__}: {e})")

    def _read(self, r: httpx.Response) -> str:
        """The reply's text in the endpoint's answer (see :meth:`_post`)."""
        if 400 <= r.status_code < 500 and r.status_code != 429:
            raise Refused(r.status_code, r.text[:300])
        if r.status_code != 200:
            raise InfraError(f"{self.where}: HTTP {r.status_code}: {r.text[:200]}")
        try:
            return r.json()["choices"][0]["message"]["content"] or ""
        except (ValueError, KeyError, IndexError, TypeError) as e:
            raise InfraError(f"{self.where}: not a chat completion: {r.text[:200]}") from e

    # ------------------------------------------------------------------ the logic, once

    def _reply(self, messages: list[dict[str, str]]) -> Ask[str]:
        """The judge's reply: asked for JSON by schema where the endpoint takes it."""
        spec = self.spec
        body = {
            "model": spec.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": spec.max_tokens,
        }
        endpoint = (spec.base_url, spec.model)
        if not spec.structured_output or endpoint in _PLAIN_ONLY:
            return (yield body)
        try:
            return (yield {**body, "response_format": response_format(spec.verdict)})
        except Refused as e:
            if context_overflow(e.status, e.text):
                raise
        answer = yield body  # taken in plain text: it was the format it refused
        _PLAIN_ONLY.add(endpoint)
        return answer

    def _blame(self, task: Task, refused: Refused) -> Ask[EpisodeError]:
        """Whose a refused request was, found by asking again with an empty response.

        The endpoint answers that (the response's doing: :class:`InvalidAction`) or refuses
        it too (the judge's set-up: :class:`InfraError`).
        """
        try:
            yield from self._reply(self.messages(task, EMPTY, nonce()))
        except (Refused, InfraError) as e:
            return InfraError(
                f"{self.where}: {refused} (and {e} with an empty response in its place: fix "
                "the judge's model, prompt or limits)"
            )
        overflow = context_overflow(refused.status, refused.text)
        return InvalidAction(
            f"{self.where} refused the request carrying this response ({refused})"
            f"{' (its context overflowed)' if overflow else ''} but not the same request with "
            f"an empty one; the response is scored 0 (the judge reads at most "
            f"{self.spec.max_response_chars} characters of it)"
        )

    def _verdict(self, task: Task, response: Message) -> Ask[float]:
        """The component value for ``response``, from the cache or asked (see :meth:`__call__`)."""
        key = json.dumps(
            [self.spec.model_dump(mode="json"), self.messages(task, response, "")], sort_keys=True
        )
        cached = CACHE.get(key)
        if cached is not None:
            return cached
        try:
            answer = yield from self._reply(self.messages(task, response, nonce()))
        except Refused as e:
            raise (yield from self._blame(task, e)) from e
        try:
            value = parse_verdict(answer, self.spec.verdict)
        except VerdictError as e:
            raise InvalidAction(
                f"judge {self.name!r} gave no verdict for this response ({e}): "
                f"{answer[-200:]!r}; it is scored 0"
            ) from e
        CACHE.put(key, value)
        return value

    def __call__(self, task: Task, response: Message) -> float:
        """The component value for ``response`` (blocking).

        Raises:
            InvalidAction: The response made the judge fail (see the module docstring).
            InfraError: The judge failed by itself.
        """
        return _drive(self._verdict(task, response), self._post)

    async def acall(self, task: Task, response: Message) -> float:
        """Async :meth:`__call__`: awaited on the running loop, holding no thread."""
        return await _adrive(self._verdict(task, response), self._apost)


_DEFERRED: ContextVar[bool] = ContextVar("envhub_judges_deferred", default=False)
"""Set while a step runs the environment's own hook: the judges are asked after it, outside
the step's deadline (:meth:`JudgedEnv._respond`)."""


@contextlib.contextmanager
def _deferred() -> Iterator[None]:
    token = _DEFERRED.set(True)
    try:
        yield
    finally:
        _DEFERRED.reset(token)


class JudgedEnv(TaskEnv):
    """Mixin placed before an environment class: adds the judge components to its scores.

    Its steps are async (:attr:`~envhub.core.Env.async_steps`): a server awaits the judges on
    its event loop, and a step waiting on one holds no thread. The environment's own hooks run
    where they would without judges (:attr:`own_steps`); the sync API (``reset``, ``step``)
    runs the sync hooks and asks the judges blocking (:attr:`sync_hooks`, unless the
    environment's own steps are async only).

    A step's deadline (:attr:`~envhub.core.TaskEnv.step_timeout_s`) bounds the environment's
    own hook, which the model's message can make slow; the judges are asked after it
    (:meth:`_respond`), each request under the judge's own ``timeout_s`` (past it:
    ``infra_error``), so a busy judge never makes the model's ``timeout``.
    """

    judges: ClassVar[dict[str, Judge]] = {}
    own_steps: ClassVar[str] = "blocking"
    """Where the judged environment's own hooks run within an async step: ``awaited`` (its
    async hooks), ``inline`` (on the loop: it declares ``inline_steps``) or ``blocking`` (on a
    thread of the loop's executor). Set by :func:`with_judges`."""
    sync_hooks: ClassVar[bool] = True

    def _judge(self, task: Task, response: Message, have: dict[str, float]) -> dict[str, float]:
        if _DEFERRED.get():
            return {}
        return {
            name: judge(task, response) for name, judge in self.judges.items() if name not in have
        }

    async def _ajudge(
        self, task: Task, response: Message, have: dict[str, float]
    ) -> dict[str, float]:
        """:meth:`_judge` awaited: the judges one after the other, in the same order."""
        if _DEFERRED.get():
            return {}
        return {
            name: await judge.acall(task, response)
            for name, judge in self.judges.items()
            if name not in have
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

    async def ainit_state(self, episode: Episode) -> Any:
        """The environment's own set-up, where its hooks run (:attr:`own_steps`)."""
        return await self._own(super().ainit_state, super().init_state, episode)

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        """:meth:`env_response` with the judges awaited."""
        fb = await self._own(super().aenv_response, super().env_response, episode, message)
        if fb.done and fb.components is not None:
            judged = await self._ajudge(episode.task, message, fb.components)
            fb.components = {**fb.components, **judged}
        return fb

    async def _own(self, awaited: Callable[..., Awaitable[T]], blocking: Callable[..., T],
                   *args: Any) -> T:  # fmt: skip
        """One of the environment's own hooks, where it runs (:attr:`own_steps`)."""
        if self.own_steps == "awaited":
            return await awaited(*args)
        if self.own_steps == "inline":
            return blocking(*args)
        return await asyncio.to_thread(blocking, *args)

    def _respond(self, ep: Episode, message: Message) -> Feedback:
        """The environment's own answer under the step's deadline, then the judges'."""
        with _deferred():
            fb = super()._respond(ep, message)
        if fb.done and fb.components is not None:
            fb.components = {**fb.components, **self._judge(ep.task, message, fb.components)}
        return fb

    async def _arespond(self, ep: Episode, message: Message) -> Feedback:
        """Async :meth:`_respond`: the judges awaited after the deadline-bound hook."""
        with _deferred():
            fb = await super()._arespond(ep, message)
        if fb.done and fb.components is not None:
            judged = await self._ajudge(ep.task, message, fb.components)
            fb.components = {**fb.components, **judged}
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
        "own_steps": "awaited" if cls.async_steps else "inline" if cls.inline_steps else "blocking",
        "sync_hooks": not cls.async_steps or cls.sync_hooks,
        "__module__": cls.__module__,
    }
    return type(f"{cls.__name__}WithJudges", (JudgedEnv, cls), namespace)
