"""The bridge's bookkeeping after games end, abandoned or played out: ``python
vf_bridge_probe.py HOME`` plays vf_guess in-process (the Python that has verifiers) and prints
``{"rewards", "plays_left"}``. Runs in the venv that has verifiers.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import envhub

if __name__ == "__main__":
    yaml = Path(sys.argv[1]) / "guess.yaml"
    yaml.write_text("name: vf-guess\nentry_point: envhub.interop.verifiers:VerifiersEnv\n"
                    "max_turns: 10\noptions: {environment: vf_guess, args: {n: 3}}\n")  # fmt: skip
    envhub.register(yaml)
    env = envhub.make("vf-guess")
    rewards = []
    for replies in (["4"], ["1"], ["5", "3"]):  # played out, abandoned by reset, played out
        env.reset(task_id="g-0" if replies != ["4"] else "g-1")
        for reply in replies:
            step = env.step(reply)
        rewards.append(step.reward if step.terminated else None)
    env.reset(task_id="g-2")
    env.step("1")
    env.finish()  # abandoned by finish
    bridge = env._shared["bridge"]
    first, second = envhub.make("vf-guess"), envhub.make("vf-guess")
    first.warmup(), second.warmup()  # two bridges in this process, both open before any play
    first.reset(task_id="g-1"), second.reset(task_id="g-1")
    both = [first.step("4").reward, second.step("4").reward]
    print(json.dumps({"rewards": rewards, "plays_left": len(bridge.plays), "both": both}))
    for opened in (env, first, second):
        opened.close()
