"""An OpenEnv server that misbehaves on purpose, one way per path (issue 33, item 5).

``HostileOpenEnv()`` serves OpenEnv's WebSocket protocol on 127.0.0.1; a client of
``{url}/<mode>`` (its ``/ws`` under it) meets the mode's misbehaviour (:data:`MODES`). Resets
answer well unless the mode is about the reset; steps answer as the mode says.
"""

from __future__ import annotations

import json
import threading
import time

from websockets.exceptions import ConnectionClosed
from websockets.sync.server import serve

GOOD = {"observation": {"feedback": "guess"}, "reward": None, "done": False}


def _answer(data: dict) -> str:
    return json.dumps({"type": "observation", "data": data})


def _late(answer: str, seconds: float = 3.0):
    """Send ``answer`` only after ``seconds``: past the client's deadline."""

    def send(connection) -> None:
        time.sleep(seconds)
        connection.send(answer)

    return send


def _trickled(answer: str, every_s: float = 0.3):
    """Send ``answer`` as a fragmented message, a fragment every ``every_s``: never whole."""

    def fragments():
        for i in range(0, len(answer), 4):
            time.sleep(every_s)
            yield answer[i : i + 4]

    return lambda connection: connection.send(fragments())


MODES = {
    "step-html": {"step": "<html>502 Bad Gateway</html>"},
    "step-done-string": {"step": _answer({**GOOD, "done": "false", "reward": 1.0})},
    "step-reward-string": {"step": _answer({**GOOD, "reward": "1"})},
    "step-binary": {"step": b'{"type": "observation"}'},
    "step-array": {"step": "[1, 2]"},
    "step-expired": {
        "step": json.dumps(
            {"type": "error", "data": {"code": "SESSION_ERROR", "message": "expired"}}
        )
    },
    "step-error-data-list": {"step": json.dumps({"type": "error", "data": [1, 2]})},
    "step-error-code-list": {
        "step": json.dumps(
            {"type": "error", "data": {"code": ["VALIDATION_ERROR"], "message": "x"}}
        )
    },
    "step-capacity": {  # openenv 0.10: refused for capacity, the frame then the close
        "step": json.dumps(
            {"type": "error", "data": {"code": "CAPACITY_REACHED", "message": "8 of 8"}}
        )
    },
    "step-validation-garbage": {  # a VALIDATION_ERROR whose 0.10 `errors` are nonsense
        "step": json.dumps(
            {
                "type": "error",
                "data": {
                    "code": "VALIDATION_ERROR",
                    "message": "Invalid message",
                    "errors": [{"loc": "word", "msg": 3}, 7, {"loc": [["x"]] * 99}] * 50,
                },
            }
        )
    },
    "reset-garbage": {"reset": "\x00garbage{"},
    "reset-observation-list": {"reset": _answer({**GOOD, "observation": [1]})},
    "fine": {"step": _answer({**GOOD, "reward": 1.0, "done": True})},
    # answers that are not an observation frame with an object for data: none may pay
    "step-no-type": {"step": json.dumps({"data": {**GOOD, "reward": 1.0, "done": True}})},
    "step-type-state": {"step": json.dumps({"type": "state", "data": {"step_count": 1}})},
    "step-type-list": {"step": json.dumps({"type": ["observation"], "data": GOOD})},
    "step-data-null": {"step": json.dumps({"type": "observation", "data": None})},
    "step-data-false": {"step": json.dumps({"type": "observation", "data": False})},
    "step-data-zero": {"step": json.dumps({"type": "observation", "data": 0})},
    "step-data-missing": {"step": json.dumps({"type": "observation"})},
    "step-reward-huge-int": {"step": _answer({**GOOD, "reward": 10**400, "done": True})},
    "reset-type-state": {"reset": json.dumps({"type": "state", "data": {"step_count": 0}})},
    "reset-data-null": {"reset": json.dumps({"type": "observation", "data": None})},
    "step-slow": {"step": _late(_answer({**GOOD, "reward": 1.0, "done": True}))},
    "step-trickle": {"step": _trickled(_answer({**GOOD, "reward": 1.0, "done": True}))},
    "reset-slow": {"reset": _late(_answer(GOOD))},
    "reset-trickle": {"reset": _trickled(_answer(GOOD))},
}
"""Each misbehaviour: what the server answers to a reset or a step (a good answer otherwise)."""


def _handler(connection) -> None:
    mode = MODES.get(connection.request.path.strip("/").split("/")[0], {})
    for raw in connection:
        kind = json.loads(raw).get("type")
        if kind == "close":
            return
        answer = mode.get(kind, _answer(GOOD))
        try:
            answer(connection) if callable(answer) else connection.send(answer)
        except ConnectionClosed:
            return  # the client gave up waiting, as it should


class HostileOpenEnv:
    """The server on a free port; :attr:`url` + ``/<mode>`` is one misbehaving base URL."""

    def __init__(self) -> None:
        self.server = serve(_handler, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.socket.getsockname()[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
