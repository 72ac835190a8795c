"""verifiers' own score of completions: ``python vf_parity.py`` reads JSON lines
``{"task_id", "completion"}`` on stdin and prints ``{"reward"}`` per line, each the reward that
verifiers' ``Task.score`` gives the rollout (the vf_arith taskset, n=4). Runs in the venv that
has verifiers.
"""

from __future__ import annotations

import asyncio
import json
import sys

import verifiers.v1 as vf
from verifiers.v1.trace import AgentInfo, TraceTask
from vf_arith import ArithConfig, ArithTaskset


def verifiers_reward(task: vf.Task, completion: str) -> float:
    data = task.data
    nodes = [
        vf.MessageNode(message=vf.SystemMessage(content=data.system_prompt)),
        vf.MessageNode(parent=0, message=vf.UserMessage(content=data.prompt)),
        vf.MessageNode(parent=1, message=vf.AssistantMessage(content=completion), sampled=True),
    ]
    trace = vf.Trace(
        task=TraceTask(type=type(task).__name__, data=data),
        agent=AgentInfo(config=vf.AgentConfig()),
        nodes=nodes,
    )
    asyncio.run(task.score(trace))
    return trace.reward


if __name__ == "__main__":
    tasks = {t.data.id: t for t in ArithTaskset(ArithConfig(id="vf_arith", n=4))}
    for line in sys.stdin:
        row = json.loads(line)
        print(json.dumps({"reward": verifiers_reward(tasks[row["task_id"]], row["completion"])}))
