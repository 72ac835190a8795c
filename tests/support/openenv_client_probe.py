"""OpenEnv's own client (``GenericEnvClient``) playing a server, run in an OpenEnv venv.

``python openenv_client_probe.py URL`` reads one JSON object on stdin, ``{"task_id": ...,
"actions": [{...}, ...]}``, plays one episode of that task per action (reset, then the
action), and prints one JSON line per episode: what the reset, the step and the state
answered, or the error OpenEnv's client raised. It imports nothing of envhub.
"""

from __future__ import annotations

import json
import sys

from openenv.core.generic_client import GenericEnvClient


def _result(result) -> dict:
    return {"observation": result.observation, "reward": result.reward, "done": result.done}


def main() -> None:
    job = json.load(sys.stdin)
    with GenericEnvClient(base_url=sys.argv[1]).sync() as client:
        for action in job["actions"]:
            opened = client.reset(task_id=job["task_id"])
            try:
                step = _result(client.step(action))
            except RuntimeError as e:  # OpenEnv's client raises server errors as this
                step = {"error": str(e)}
            print(json.dumps({"reset": _result(opened), "step": step, "state": client.state()}))


if __name__ == "__main__":
    main()
