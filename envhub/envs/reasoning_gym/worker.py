"""reasoning-gym's scorers run in a killable worker process, never in the caller's.

A scorer is third-party code run on the model's text. One that computes without end inside C
(a huge integer power through sympy's ``parse_expr``: ``3**(9999*9999*99)``) holds the GIL,
so no other thread of its process runs again until it is done: under ``envhub serve`` the
server froze (health checks and other episodes timed out, SIGTERM went unanswered) and a
step's deadline never fired. :func:`~.scoring.explosive` refuses every such answer it knows;
this module makes sure that one it misses costs a worker, never the caller.

Every scoring of an answer (with the task's constant floor, the first time) is one call to the
math checker's worker pool (:func:`envhub.envs.math.pool.run_in_worker`: forked workers
under an address-space cap that die with their parent): :data:`SCORE_CPU_S` CPU seconds, then
the step is the model's ``timeout`` (:class:`~envhub.errors.VerifierTimeout`); past the wall
backstop the worker is killed and replaced. The hop costs about 0.25 ms a verify (up to 1 ms
where sympy scores, its caches being per process; ``bench/rg_verify.py``).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import catalog, evaluated, scoring
from . import tasks as generation

Scorer = Callable[[str | None, dict[str, Any]], Any]
SCORE_CPU_S = 2.0
"""CPU seconds for scoring one answer in a worker, the task's constant floor included (a
scorer takes milliseconds; a fresh worker may first import reasoning-gym, under a second)."""


@dataclass(frozen=True)
class Job:
    """One answer to score, and what the worker needs to build the scorer."""

    generator: str
    options: dict[str, Any]
    """The generator's knobs (the entry's ``dataset.options``)."""
    seed: int
    reading: scoring.Reading
    entry: dict[str, Any]
    """The task as reasoning-gym's scorers read it (question, answer, metadata)."""
    floor: float | None
    """The task's constant floor, or ``None`` to measure it here (from ``others`` too)."""
    others: tuple[str, ...] = ()
    """Golds of other tasks of the generator, for the floor (:func:`scoring.constant_floor`)."""


def score(job: Job) -> tuple[float, str | None, float]:
    """Correctness of ``job``'s answer, why it is 0, and the floor used, from a worker.

    Raises:
        VerifierTimeout: Scoring spent :data:`SCORE_CPU_S` CPU seconds (the model's answer).
        InfraError: The worker died for another reason.
    """
    from envhub.envs.math.pool import run_in_worker

    return run_in_worker(judge, (job,), SCORE_CPU_S)


def judge(job: Job) -> tuple[float, str | None, float]:
    """:func:`score`'s work, in the worker: the rules of :func:`scoring.correctness`."""
    source = _source(job.generator, job.entry)
    scorer = scorer_for(job.generator, source, job.options, job.seed)
    floor = job.floor
    if floor is None:
        floor = scoring.constant_floor(scorer, job.entry, job.others)
    value, why = scoring.correctness(
        scorer,
        job.reading,
        job.entry,
        floor=floor,
        full_only=source in catalog.CLOSENESS_CREDIT,
        whole=scoring.WHOLE_ANSWER.get(source),
    )
    return value, why, floor


def _source(generator: str, entry: dict[str, Any]) -> str:
    """The generator that made the task: ``composite`` mixes others and names it per item."""
    if generator == "composite":
        return str((entry.get("metadata") or {}).get("source_dataset") or generator)
    return generator


def scorer_for(generator: str, source: str, options: dict[str, Any], seed: int) -> Scorer:
    """The scorer of the tasks that ``source`` made in entry ``generator``.

    The generator's ``score_answer`` (its dataset built once per process with the entry's knobs
    ``options``), or envhub's own comparison (:data:`scoring.OWN_SCORERS`); refusing what it
    must not evaluate where ``source`` evaluates answers (:data:`evaluated.EVALUATES`; in a
    ``composite`` too, where the item's own generator decides).
    """
    if source in scoring.OWN_SCORERS:
        scorer = scoring.OWN_SCORERS[source]
    else:
        scorer = _score_answer(generator, options, seed)
    if source in evaluated.EVALUATES:
        scorer = evaluated.guarded(scorer, evaluated.EVALUATES[source])
    return scorer


def _score_answer(generator: str, options: dict[str, Any], seed: int) -> Scorer:
    """The generator's ``score_answer``; options that are not JSON data are built each time."""
    try:
        key = json.dumps(options, sort_keys=True)
    except TypeError:
        return generation.dataset(generator, options, seed, 1).score_answer
    return _cached_score_answer(generator, key, seed)


@functools.lru_cache(maxsize=64)
def _cached_score_answer(generator: str, options: str, seed: int) -> Scorer:
    return generation.dataset(generator, json.loads(options), seed, 1).score_answer
