"""``envhub check``: the self-test of one environment, as a table of named checks.

The same functions run in ``tests/test_all_envs.py`` over every catalog entry, so an author's
``envhub check NAME`` and the project's CI prove the same things:

- ``determinism``: the same seed gives the same task and opening messages;
- ``bad_inputs``: nonsense answers get model-owned statuses (never ``infra_error``/``env_error``)
  and the episode lifecycle holds;
- ``gold``: the env's gold answers (or its reference solver) score full marks, in an episode
  and through stateless ``verify``;
- ``gymnasium``: gymnasium's own ``check_env`` on the text adapter;
- ``http``: the same seeds and actions give the same transcripts in-process and over HTTP.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from ..client.venv import is_current, python_of
from ..core import Env, TaskEnv
from ..registry.make import make_http, make_local
from ..spec import EnvSpec
from ..types import Message, Status
from .checker import (
    CheckError,
    check_bad_action,
    check_determinism,
    check_gold,
    check_verify,
)

PASSED, FAILED, SKIPPED = "passed", "failed", "skipped"


@dataclass(frozen=True)
class CheckResult:
    """The outcome of one named check."""

    name: str
    outcome: str
    """``passed``, ``failed`` or ``skipped``."""
    detail: str = ""


class Skip(Exception):
    """A check that does not apply to this environment (the message says why)."""


def _determinism(spec: EnvSpec) -> str:
    env = make_local(spec)
    first = check_determinism(env)
    env.close()
    env.close()  # closing twice is safe
    return f"seed 1234 -> task {first.info.task_id}, twice"


def _bad_inputs(spec: EnvSpec) -> str:
    with make_local(spec) as env:
        statuses = []
        for text in ("\x00 not an answer {{[(\ufffd", "", "x" * 20_000):
            env.reset(seed=3)
            result = env.step(Message(role="assistant", content=text))
            owned = result.info.status not in (Status.INFRA_ERROR, Status.ENV_ERROR)
            if not owned:
                raise CheckError(
                    f"the answer {text[:20]!r} gave status {result.info.status}: "
                    f"{result.info.error}; a model's text must never look like a machine fault"
                )
            statuses.append(result.info.status.value)
        check_bad_action(env)
    return f"statuses {sorted(set(statuses))}"


def _gold(spec: EnvSpec) -> str:
    with make_local(spec) as env:
        if not isinstance(env, TaskEnv):
            raise Skip(f"{type(env).__name__} is not a TaskEnv")
        finals = check_gold(env)
        if not finals:
            raise Skip("no reference_action(): add one so the verifier is proven on gold")
        verified = check_verify(env)
    how = " and verify()" if verified is not None else ""
    return f"{len(finals)} tasks at full {env.primary_component}{how}"


def _gym_view(env: Env) -> Any:
    """Gymnasium's text adapter (:class:`envhub.registry.gym.GymEnv`) over an already-made env."""
    from ..registry.gym import GymEnv

    return GymEnv.over(env)


def _gymnasium(spec: EnvSpec) -> str:
    from gymnasium.utils.env_checker import check_env as gym_check_env

    gym_env = _gym_view(make_local(spec))
    try:
        gym_check_env(gym_env, skip_render_check=True)
    finally:
        gym_env.close()
    return "gymnasium.utils.env_checker.check_env"


def _transcript(env: Env, seeds: tuple[int, ...], actions: dict[int, list]) -> list:
    out = []
    for seed in seeds:
        first = env.reset(seed=seed)
        steps = []
        for action in actions[seed]:
            r = env.step(action)
            steps.append(
                (r.messages, r.reward, r.terminated, r.truncated, r.info.status, r.info.components)
            )
            if r.done:
                break
        out.append((first.messages, first.info.task_id, steps))
    return out


def _parity_actions(local: TaskEnv, seeds: tuple[int, ...]) -> dict[int, list]:
    actions: dict[int, list] = {}
    for seed in seeds:  # a wrong answer, then the reference answer, so rewards vary
        ref = local.fork()
        ref.reset(seed=seed)
        gold = ref.reference_action(ref._episode) if ref._episode else None
        multi = ref.spec.max_turns > 1
        actions[seed] = ["I am not sure.", gold or "x"] if multi else [gold or "x"]
        actions[seed + 1000] = ["I am not sure."]
    return actions


def _http(spec: EnvSpec, seeds: tuple[int, ...] = (0, 1, 5)) -> str:
    local = make_local(spec)
    if not isinstance(local, TaskEnv):
        raise Skip(f"{type(local).__name__} is not a TaskEnv")
    actions = _parity_actions(local, seeds)
    all_seeds = (*seeds, *(s + 1000 for s in seeds))
    with make_http(spec) as remote:
        got_remote = _transcript(remote, all_seeds, actions)
    got_local = _transcript(local, all_seeds, actions)
    local.close()
    for seed, a, b in zip(all_seeds, got_local, got_remote, strict=True):
        if a != b:
            raise CheckError(f"seed {seed}: in-process {a!r} but over HTTP {b!r}")
    return f"{len(all_seeds)} episodes identical"


CHECKS: dict[str, Callable[[EnvSpec], str]] = {
    "determinism": _determinism,
    "bad_inputs": _bad_inputs,
    "gold": _gold,
    "gymnasium": _gymnasium,
    "http": _http,
}
"""Every check by name, in the order ``envhub check`` runs them."""


def run_check(spec: EnvSpec, name: str) -> CheckResult:
    """Run one named check; a broken rule or an envhub error is a failed result, not a raise."""
    try:
        return CheckResult(name, PASSED, CHECKS[name](spec))
    except Skip as e:
        return CheckResult(name, SKIPPED, str(e))
    except Exception as e:  # noqa: BLE001 (a self-test reports every failure as a row; it scores nothing)
        return CheckResult(name, FAILED, f"{type(e).__name__}: {e}")


def run_checks(spec: EnvSpec, only: list[str] | None = None) -> list[CheckResult]:
    """Run the named checks (all by default) in order.

    An environment of a venv of its own (``spec.venv``) is checked there, by that venv's Python
    (:func:`main`): in-process where its code is, over HTTP from there.
    """
    if spec.venv is not None and not is_current(spec.venv):
        return _checks_in_venv(spec, only)
    return [run_check(spec, name) for name in only or CHECKS]


def _checks_in_venv(spec: EnvSpec, only: list[str] | None) -> list[CheckResult]:
    python = str(python_of(spec.venv or ""))
    cmd = [python, "-m", "envhub.authoring.selfcheck", spec.model_dump_json(), *(only or ())]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    except OSError as e:
        return [CheckResult("venv", FAILED, f"{spec.venv}: cannot run its Python ({e})")]
    if done.returncode != 0:
        return [CheckResult("venv", FAILED, f"in {spec.venv}: {done.stderr.strip()[-2000:]}")]
    return [CheckResult(**row) for row in json.loads(done.stdout.strip().splitlines()[-1])]


def main(argv: list[str]) -> None:
    """``python -m envhub.authoring.selfcheck SPEC_JSON [CHECK...]``: the results as JSON."""
    spec = EnvSpec.model_validate_json(argv[0])
    results = run_checks(spec, argv[1:] or None)
    print(json.dumps([asdict(r) for r in results]))


def table(spec: EnvSpec, results: list[CheckResult]) -> str:
    """The results as a plain-text table."""
    lines = [f"envhub check {spec.id}", f"{'check':<12} {'result':<8} detail"]
    for r in results:
        lines.append(f"{r.name:<12} {r.outcome:<8} {r.detail}")
    failed = sum(r.outcome == FAILED for r in results)
    lines.append(f"{len(results) - failed}/{len(results)} passed or skipped, {failed} failed")
    return "\n".join(lines)


if __name__ == "__main__":
    main(sys.argv[1:])
