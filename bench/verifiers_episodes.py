"""Multi-turn verifiers episodes: verifiers' own run against the same games played through envhub.

Both sides play the higher/lower game of ``tests/support/vf_guess.py`` with the same scripted
replies (3 turns a game), in one process of the verifiers venv (made first if missing, as
``tests/interop`` makes it), interleaved round by round:

- **verifiers**: ``Env.run_episode`` with its model requests answered by envhub's scripted
  loopback endpoint (``ScriptedEndpoint``, as in ``tests/support/vf_guess_parity.py``);
- **envhub**: ``envhub.make`` of the same environment in-process (the bridge of
  ``envhub/interop/verifiers/bridge.py``), ``reset`` then ``step`` with the replies.

Prints seconds per game and per turn for each, and envhub's over verifiers'; every game must
earn the same reward on both sides. ``python bench/verifiers_episodes.py --games 6 --rounds 3``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUPPORT = ROOT / "tests" / "support"
GAME = ("g-0", ["5", "2", "3"])  # secret 3: found on the third guess, reward 1.25


def verifiers_side(games: int) -> float:
    """Seconds for ``games`` games played by verifiers itself."""
    from vf_guess_parity import Script, guess_env, model_context

    from envhub.evaluate.scripted import ScriptedEndpoint

    async def play() -> float:
        env, script = guess_env(), Script()
        task = next(t for t in env.taskset if t.data.id == GAME[0])
        with ScriptedEndpoint(script) as endpoint:
            ctx = model_context(endpoint)
            async with env.serving():
                start = time.perf_counter()
                for _ in range(games):
                    script.replies = list(GAME[1])
                    episode = await env.run_episode(task, ctx)
                    assert episode.traces[-1].reward == 1.25, episode.errors
                return time.perf_counter() - start

    return asyncio.run(play())


def envhub_side(env, games: int) -> float:
    """Seconds for ``games`` games played through envhub's bridge."""
    start = time.perf_counter()
    for _ in range(games):
        env.reset(task_id=GAME[0])
        for reply in GAME[1]:
            step = env.step(reply)
        assert step.terminated and step.reward == 1.25, step.info
    return time.perf_counter() - start


def measure(games: int, rounds: int) -> dict[str, float]:
    import envhub

    yaml = Path(os.environ["ENVHUB_HOME"]) / "vf-guess.yaml"
    yaml.write_text("name: vf-guess\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
                    "max_turns: 10\noptions: {environment: vf_guess, args: {n: 3}}\n")  # fmt: skip
    envhub.register(yaml, force=True)
    env = envhub.make("vf-guess")
    env.warmup()
    verifiers_side(1), envhub_side(env, 1)  # warm both: the chat program's environment, imports
    own, ours = [], []
    for _ in range(rounds):
        own.append(verifiers_side(games) / games)
        ours.append(envhub_side(env, games) / games)
    env.close()
    turns = len(GAME[1])
    v, e = statistics.median(own), statistics.median(ours)
    return {"verifiers_s_per_game": v, "envhub_s_per_game": e, "verifiers_s_per_turn": v / turns,
            "envhub_s_per_turn": e / turns, "envhub_over_verifiers": e / v}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    try:
        import verifiers  # noqa: F401
    except ImportError:  # run again in the venv envhub makes for verifiers
        from envhub.interop.verifiers.env import ensure_venv

        venvs = Path(os.environ.get("ENVHUB_TEST_VENVS", Path.home() / ".cache/envhub/test-venvs"))
        python = ensure_venv(venvs / "verifiers-0.4.0")
        path = os.pathsep.join([str(SUPPORT), str(ROOT), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, "PYTHONPATH": path}
        sys.exit(subprocess.call([str(python), __file__, *sys.argv[1:]], env=env))
    sys.path[:0] = [str(SUPPORT)]
    os.environ.setdefault(
        "ENVHUB_HOME", str(Path(os.environ.get("TMPDIR", "/tmp")) / "vf-bench-home")
    )
    Path(os.environ["ENVHUB_HOME"]).mkdir(parents=True, exist_ok=True)
    figures = measure(args.games, args.rounds)
    figures["load_average_1min"] = os.getloadavg()[0]
    for key, value in figures.items():
        print(f"{key:24} {value:.3f}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
