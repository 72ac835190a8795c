"""A two-call agent for a single-turn environment: draft an answer, then check it.

It knows nothing of envhub: it uses only the ``openai`` SDK, which reads ``OPENAI_BASE_URL``
and ``OPENAI_API_KEY`` from the environment, and takes the model name from ``OPENAI_MODEL``.
The task comes as JSON on stdin (``{"messages": [...], ...}``). Run it against any catalog
environment with the model behind envhub's gateway::

    envhub eval --agent "python examples/agents/draft_and_check.py" --model smollm2 --env gsm8k

The second call extends the first (its messages are the first call's plus the reply plus a
user turn), so the gateway reuses the ids it recorded: both replies are trained on exactly as
sampled. The environment scores the last reply: the checked answer.
"""

import json
import os
import sys

from openai import OpenAI

CHECK = (
    "Check your answer step by step. If it is wrong, correct it. "
    "Then give the final answer in the same format as asked."
)


def main() -> None:
    """Read the task, draft, check, print the final answer."""
    task = json.load(sys.stdin)
    client = OpenAI()
    model = os.environ.get("OPENAI_MODEL", "model")
    messages = list(task["messages"])
    draft = client.chat.completions.create(model=model, messages=messages)
    reply = draft.choices[0].message
    messages += [
        {"role": "assistant", "content": reply.content or ""},
        {"role": "user", "content": CHECK},
    ]
    final = client.chat.completions.create(model=model, messages=messages)
    print(final.choices[0].message.content)


if __name__ == "__main__":
    main()
