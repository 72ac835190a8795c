"""An agent written only against the ``openai`` SDK (no envhub import): calls, extends, edits.

Usage: python sdk_agent.py. Five calls: the opening; an extension (reply + a user turn); a
history edit (the reply replaced by the agent's own words); an extension of the edited branch;
a streamed extension of that. Prints the last reply.
"""

import json
import os
import sys

from openai import OpenAI

client = OpenAI(max_retries=0)  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
model = os.environ["OPENAI_MODEL"]
task = json.load(sys.stdin)
msgs = task["messages"]


def ask(messages, **kw):
    r = client.chat.completions.create(model=model, messages=messages, max_tokens=6, **kw)
    return r.choices[0].message.model_dump(exclude_none=True)


first = ask(msgs)
msgs = msgs + [first, {"role": "user", "content": "Are you sure?"}]
second = ask(msgs)
edited = msgs[:-2] + [
    {"role": "assistant", "content": "I rewrote this."},
    {"role": "user", "content": "Go on."},
]
third = ask(edited)
edited = edited + [third, {"role": "user", "content": "Once more."}]
fourth = ask(edited)
edited = edited + [fourth, {"role": "user", "content": "Stream it."}]
stream = client.chat.completions.create(model=model, messages=edited, max_tokens=6, stream=True)
print("".join(c.choices[0].delta.content or "" for c in stream if c.choices))
