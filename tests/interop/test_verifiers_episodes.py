"""Multi-turn verifiers environments through envhub: the higher/lower game of
``tests/support/vf_guess.py`` (a ``vf.Env`` whose ``run`` answers each guess), played from the
virtual environment envhub makes for verifiers.

- Parity: envhub's rewards equal those verifiers itself gives the same games
  (``tests/support/vf_guess_parity.py`` answers verifiers' model requests with the same replies).
- The environment's messages between turns reach envhub's observations.
- Hostile messages, an environment that raises on a reply, envhub's turn budget, ``finish``
  and a new ``reset`` mid-game: every one ends with a status the model owns or a clean
  abandon, and the server plays the next episode.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import psutil
import pytest
from hostile_corpus import MODEL_OWNED, SAMPLE, corpus

import envhub
from envhub.errors import EnvhubError
from envhub.types import Status

SUPPORT = Path(__file__).parents[1] / "support"
GAMES = [  # (task, replies): secrets are 3, 4, 5
    ("g-0", ["5", "2", "3"]),  # found on the third guess
    ("g-1", ["4"]),  # found at once
    ("g-2", ["9", "1", "7", "6"]),  # never found: the game ends after 4 guesses
]


def _register(tmp_path: Path, venv_python: Path, max_turns: int = 10) -> str:
    (tmp_path / "guess.yaml").write_text(
        "name: vf-guess\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
        f"max_turns: {max_turns}\noptions: {{environment: vf_guess, args: {{n: 3}}, "
        f"venv: {str(venv_python.parents[1])!r}}}\n"
    )
    envhub.register(tmp_path / "guess.yaml")
    return "vf-guess"


@pytest.fixture(scope="module")
def guess(tmp_path_factory, venv_python):
    """One envhub server of the game (from the verifiers venv) for the module's tests."""
    from envhub.registry.catalog import user_registry_dir

    name = _register(tmp_path_factory.mktemp("guess"), venv_python)
    try:
        with envhub.make(name) as env:
            yield env
    finally:
        (user_registry_dir() / "guess.yaml").unlink(missing_ok=True)
        envhub.reset_registry()


def _play(env, task_id: str, replies: list[str]):
    opened = env.reset(task_id=task_id)
    steps = [env.step(r) for r in replies]
    return opened, steps


def _verifiers_games(python: Path) -> tuple[list[dict], str]:
    """verifiers' own run of ``GAMES``: a row per game (reward, ok, its errors), and its stderr."""
    lines = "".join(json.dumps({"task_id": t, "replies": r}) + "\n" for t, r in GAMES)
    # verifiers launches its chat program with `uv`: the venv's own, where PATH has none (as
    # envhub's bridge does; verifiers would otherwise try to download one)
    env = {**os.environ, "PATH": f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    out = subprocess.run([str(python), str(SUPPORT / "vf_guess_parity.py")], input=lines,
                         text=True, capture_output=True, timeout=600, cwd=SUPPORT, env=env)  # fmt: skip
    assert out.returncode == 0, f"verifiers' own run failed:\n{out.stderr[-3000:]}"
    return [json.loads(line) for line in out.stdout.splitlines()], out.stderr


def test_envhub_rewards_equal_verifiers_own_on_the_same_games(guess, venv_python):
    games, stderr = _verifiers_games(venv_python)
    expected = [g["reward"] for g in games]
    why = [(g["ok"], g["errors"]) for g in games]  # verifiers' own account when its side failed
    assert expected == [1.25, 1.5, 0.125], (  # found (weight 1) + quick (weight 0.5)
        f"verifiers' own run scored {expected}; its episodes (ok, errors): {why}; "
        f"its stderr ends:\n{stderr[-2000:]}"
    )
    assert guess.info()["weights"] == {"found": 1.0, "quick": 0.5}
    got = []
    for task_id, replies in GAMES:
        _, steps = _play(guess, task_id, replies)
        assert [s.terminated for s in steps] == [False] * (len(steps) - 1) + [True]
        assert all(s.info.status is Status.OK for s in steps)
        got.append(steps[-1].reward)
    assert got == pytest.approx(expected)


def test_the_environment_speaks_between_the_model_turns(guess):
    opened, steps = _play(guess, "g-0", ["5", "2", "3"])
    assert [(m.role, m.content) for m in opened.messages] == [
        ("system", "You play a guessing game."),
        ("user", "Guess my number (1-10). Reply with the number."),
    ]
    assert [[(m.role, m.content) for m in s.messages] for s in steps[:2]] == [
        [("user", "Lower.")],
        [("user", "Higher.")],
    ]
    assert steps[-1].info.components == {"found": 1.0, "quick": 0.5}


def test_an_environment_that_raises_on_a_reply_is_the_models_invalid_action(guess):
    _, steps = _play(guess, "g-0", ["7", "crash"])
    last = steps[-1]
    assert last.info.status is Status.INVALID_ACTION and last.reward == 0.0
    assert "the game's own bug" in last.info.error
    _, steps = _play(guess, "g-1", ["4"])  # the server plays on
    assert steps[-1].reward == 1.5


def test_verifiers_machinery_failing_is_infra_error_and_a_broken_reward_env_error(guess):
    """The fault rule of the interop README: the machinery's failure and a reward that is no
    number are never charged to the model, and the server plays on."""
    _, steps = _play(guess, "g-0", ["7", "provider-down"])
    assert steps[-1].info.status is Status.INFRA_ERROR, steps[-1].info
    assert "ProviderError" in steps[-1].info.error
    _, steps = _play(guess, "g-0", ["7", "nan"])
    assert steps[-1].info.status is Status.ENV_ERROR, steps[-1].info
    assert "quick" in steps[-1].info.error
    _, steps = _play(guess, "g-1", ["4"])
    assert steps[-1].reward == 1.5


def test_hostile_messages_earn_statuses_the_model_owns(guess):
    named = dict(corpus(["search"]))
    messages = [named[n] for n in SAMPLE] + [named["structured search args"]]
    for i in range(0, len(messages), 3):  # three wrong guesses a game, then the secret
        guess.reset(task_id="g-1")
        for message in messages[i : i + 3]:
            step = guess.step(message)
            assert step.info.status in MODEL_OWNED, (step.info.status, step.info.error)
            assert not step.terminated
        assert guess.step("4").info.components["found"] == 1.0


def test_resetting_or_finishing_mid_game_abandons_it_and_the_next_plays(guess):
    guess.reset(task_id="g-2")
    guess.step("1")
    guess.reset(task_id="g-1")  # abandons the game in flight
    assert guess.step("4").reward == 1.5
    guess.reset(task_id="g-2")
    guess.step("1")
    ended = guess.finish()
    assert ended.truncated and ended.reward == 0.0 and ended.info.status is Status.OK
    assert guess.reset(task_id="g-0").messages[-1].role == "user"


def test_envhubs_turn_budget_cuts_the_game_short(tmp_path, clean_user_registry, venv_python):
    name = _register(tmp_path, venv_python, max_turns=2)
    with envhub.make(name) as env:
        _, steps = _play(env, "g-2", ["1", "2"])
        assert steps[-1].truncated and steps[-1].reward == 0.0
        assert steps[-1].info.status is Status.OK
        _, steps = _play(env, "g-0", ["3"])
        assert steps[-1].terminated and steps[-1].reward == 1.5


def test_a_game_without_a_turn_budget_is_refused_naming_it(
    tmp_path, clean_user_registry, venv_python
):
    with pytest.raises(EnvhubError, match="max_turns") as err:
        _register(tmp_path, venv_python, max_turns=1)
    assert "multi-turn" in str(err.value)


def test_single_reply_verification_is_refused_with_the_reason(guess):
    with pytest.raises(EnvhubError, match="scores whole episodes"):
        guess.verify("g-0", "3")


def _chat_programs(server_pid: int) -> list[psutil.Process]:
    """verifiers' chat programs running under the envhub server (each turn launches one)."""
    kids = psutil.Process(server_pid).children(recursive=True)
    return [p for p in kids if any("vf-initial" in a or "--base-url" in a for a in _cmdline(p))]


def _cmdline(proc: psutil.Process) -> list[str]:
    try:
        return proc.cmdline()
    except psutil.Error:
        return []


def test_two_sessions_play_at_once_and_a_closed_one_leaves_no_program(guess):
    other = guess.fork()  # a second session on the same server
    guess.reset(task_id="g-0")
    other.reset(task_id="g-2")
    assert [m.content for m in guess.step("5").messages] == ["Lower."]
    assert [m.content for m in other.step("9").messages] == ["Lower."]
    assert guess.step("3").reward == 1.375  # found on the second guess
    server = guess._owner.proc.pid
    assert _chat_programs(server), "the second game's model turn should be waiting"
    other.close()  # mid-game: the server abandons the episode and stops its program
    deadline = time.monotonic() + 10
    while _chat_programs(server) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not _chat_programs(server)


def test_a_module_verifiers_cannot_import_is_refused_saying_where_to_install_it(
    tmp_path, clean_user_registry, venv_python
):
    (tmp_path / "missing.yaml").write_text(
        "name: vf-missing\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
        f"options: {{environment: no_such_env, venv: {str(venv_python.parents[1])!r}}}\n"
    )
    with pytest.raises(EnvhubError, match="no_such_env") as err:
        envhub.register(tmp_path / "missing.yaml")
    assert "pip install" in str(err.value) and str(venv_python.parents[1]) in str(err.value)


def test_in_process_the_bridge_forgets_ended_games_and_two_bridges_keep_their_keys(
    tmp_path, venv_python
):
    env = {**os.environ, "ENVHUB_HOME": str(tmp_path)}
    out = subprocess.run([str(venv_python), str(SUPPORT / "vf_bridge_probe.py"), str(tmp_path)],
                         capture_output=True, text=True, timeout=300, env=env, cwd=SUPPORT)  # fmt: skip
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.splitlines()[-1])
    assert got == {"rewards": [1.5, None, 1.375], "plays_left": 0, "both": [1.5, 1.5]}


def test_env_args_the_environment_refuses_are_refused_naming_the_field(
    tmp_path, clean_user_registry, venv_python
):
    (tmp_path / "bad.yaml").write_text(
        "name: vf-bad\nentry_point: envhub.interop.verifiers:VerifiersEnv\nmax_turns: 5\n"
        "options: {environment: vf_guess, env_args: {player: {max_turnz: 3}}, "
        f"venv: {str(venv_python.parents[1])!r}}}\n"
    )
    with pytest.raises(EnvhubError, match="max_turnz") as err:
        envhub.register(tmp_path / "bad.yaml")
    assert "GuessEnv" in str(err.value)
