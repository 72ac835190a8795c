"""An OpenEnv server that misbehaves on purpose, one way per path (issue 33, item 5).

``HostileOpenEnv()`` serves OpenEnv's WebSocket protocol on 127.0.0.1; a client of
``{url}/<mode>`` (its ``/ws`` under it) meets the mode's misbehaviour (:data:`MODES`). Resets
answer well unless the mode is about the reset; steps answer as the mode says.
"""

from __future__ import annotations

import json
import threading

from websockets.sync.server import serve

GOOD = {"observation": {"feedback": "guess"}, "reward": None, "done": False}


def _answer(data: dict) -> str:
    return json.dumps({"type": "observation", "data": data})


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
}
"""Each misbehaviour: what the server answers to a reset or a step (a good answer otherwise)."""


def _handler(connection) -> None:
    mode = MODES.get(connection.request.path.strip("/").split("/")[0], {})
    for raw in connection:
        kind = json.loads(raw).get("type")
        if kind == "close":
            return
        connection.send(mode.get(kind, _answer(GOOD)))


class HostileOpenEnv:
    """The server on a free port; :attr:`url` + ``/<mode>`` is one misbehaving base URL."""

    def __init__(self) -> None:
        self.server = serve(_handler, "127.0.0.1", 0)
        self.url = f"http://127.0.0.1:{self.server.socket.getsockname()[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
