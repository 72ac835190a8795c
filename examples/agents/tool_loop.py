"""A tool-calling agent for environments with tools (``search``), using only the ``openai`` SDK.

The model calls the environment's tools (given in the task's ``tools``, OpenAI form); the agent
sends each reply to its episode's environment through the episode URL that envhub gives it
(``POST /episode/step`` on the same base URL and key, with the SDK's own ``client.post``) and
appends the tool results, until the environment ends the episode::

    envhub eval --agent "python examples/agents/tool_loop.py" --model smollm2 --env search

Only replies the model gave can step the environment (the gateway checks), and the environment
scores the episode itself: the final ``<answer>...</answer>`` reply included.
"""

import json
import os
import sys

from openai import OpenAI

MAX_TURNS = 10


def main() -> None:
    """Read the task, loop model -> environment until the episode ends, print the last reply."""
    task = json.load(sys.stdin)
    client = OpenAI()
    model = os.environ.get("OPENAI_MODEL", "model")
    messages = list(task["messages"])
    tools = task.get("tools") or None
    reply = {}
    for _ in range(MAX_TURNS):
        r = client.chat.completions.create(model=model, messages=messages, tools=tools)
        reply = r.choices[0].message.model_dump(exclude_none=True)
        messages.append(reply)
        if "episode_url" not in task:  # no environment to answer through: the reply stands
            break
        step = client.post("/episode/step", body={"message": reply}, cast_to=object)
        messages += step["messages"]
        if step["terminated"] or step["truncated"]:
            break
    print(reply.get("content") or "")


if __name__ == "__main__":
    main()
