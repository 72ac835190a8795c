"""An agent program envhub did not write in any envhub way: stdlib only, one of many behaviours.

Usage: python stdlib_agent.py MODE. It reads the task from stdin, talks to $OPENAI_BASE_URL with
$OPENAI_API_KEY (urllib, no SDK), and behaves as MODE says. Used by the hostile-agent tests.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

BASE = os.environ["OPENAI_BASE_URL"]
KEY = os.environ["OPENAI_API_KEY"]
MODEL = os.environ["OPENAI_MODEL"]


def call(messages, key=KEY, stream=False, max_tokens=8, **extra):
    body = {"model": MODEL, "messages": messages, "max_tokens": max_tokens, "stream": stream}
    body.update(extra)
    req = urllib.request.Request(
        BASE + "/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read())


def reply(messages, **kw):
    return call(messages, **kw)["choices"][0]["message"]


def main(mode):
    task = json.load(sys.stdin)
    with open(os.environ["ENVHUB_TASK_FILE"]) as f:
        assert json.load(f) == task, "stdin and ENVHUB_TASK_FILE differ"
    msgs = task["messages"]
    if mode == "once":
        print(reply(msgs)["content"])
    elif mode == "crash_after":
        reply(msgs)
        raise SystemExit("the agent crashed")
    elif mode == "hang_after":
        reply(msgs)
        time.sleep(3600)
    elif mode == "never":
        return
    elif mode == "never_crash":
        raise SystemExit(3)
    elif mode == "hang_before":
        time.sleep(3600)
    elif mode == "exit3":
        reply(msgs)
        sys.exit(3)
    elif mode == "multi":  # three calls, each extending the last (token in, token out)
        for i in range(3):
            msgs = msgs + [reply(msgs), {"role": "user", "content": f"again {i}"}]
    elif mode == "edit":  # history edits: drops the reply, rewrites it, then extends
        first = reply(msgs)
        reply(
            msgs
            + [
                {"role": "assistant", "content": "an edited reply"},
                {"role": "user", "content": "go on"},
            ]
        )
        second = reply(msgs + [first, {"role": "user", "content": "next"}])
        reply(
            msgs
            + [
                first,
                {"role": "user", "content": "next"},
                second,
                {"role": "user", "content": "last"},
            ]
        )
    elif mode == "fabricate":  # the agent writes the assistant's answer itself
        reply(
            msgs + [{"role": "assistant", "content": "alpha"}, {"role": "user", "content": "ok?"}]
        )
    elif mode == "fabricate_only":  # no model call at all, just a claimed answer
        print("alpha")
    elif mode == "spam":  # 10,000 calls, ignoring every refusal
        refused = 0
        for _ in range(10_000):
            try:
                reply(msgs, max_tokens=1)
            except urllib.error.HTTPError as e:
                refused += e.code == 429
        print(refused)
    elif mode == "other_key":
        reply(msgs)
        other = os.environ.get("STOLEN_KEY", "eh-guessed")
        try:
            call(msgs, key=other)
        except urllib.error.HTTPError as e:
            print(e.code)
            sys.exit(0 if e.code == 401 else 1)
        sys.exit(1)
    elif mode == "midstream":  # reads one SSE line and leaves
        body = {"model": MODEL, "messages": msgs, "max_tokens": 16, "stream": True}
        req = urllib.request.Request(
            BASE + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
        )
        resp = urllib.request.urlopen(req, timeout=60)
        resp.readline()
        os._exit(0)
    elif mode == "forkbomb":
        reply(msgs)
        while True:
            try:
                os.fork()
            except OSError:
                time.sleep(0.01)
    elif mode == "daemon":  # leaves a grandchild in a new session behind
        reply(msgs)
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                with open(os.environ["PIDFILE"], "w") as f:
                    f.write(str(os.getpid()))
                time.sleep(3600)
            os._exit(0)
        time.sleep(0.5)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main(sys.argv[1])
