"""NeMo Gym's side of the tests, run by a Python that has nemo-gym (it needs Python >= 3.12).

``python nemo_gym_probe.py body TEXT`` prints a verify request body built with nemo-gym's own
models (``BaseVerifyRequest``, ``NeMoGymResponse``); ``python nemo_gym_probe.py response`` reads a
``/verify`` answer on stdin and validates it as nemo-gym's ``BaseVerifyResponse``, printing its
reward; ``request`` validates a request body as ``BaseVerifyRequest``. The envhub tests run it where ENVHUB_NEMO_GYM_PYTHON names such a Python.
"""

from __future__ import annotations

import json
import sys

from nemo_gym.base_resources_server import BaseVerifyRequest, BaseVerifyResponse
from nemo_gym.openai_utils import (
    NeMoGymResponse,
    NeMoGymResponseCreateParamsNonStreaming,
    NeMoGymResponseOutputMessage,
    NeMoGymResponseOutputText,
)


def body(text: str) -> dict:
    params = NeMoGymResponseCreateParamsNonStreaming(
        input=[{"role": "user", "content": "What is 6 times 7?"}]
    )
    message = NeMoGymResponseOutputMessage(
        id="msg_1", content=[NeMoGymResponseOutputText(annotations=[], text=text)]
    )
    response = NeMoGymResponse(
        id="resp_1", created_at=0.0, model="policy", object="response", output=[message],
        parallel_tool_calls=True, tool_choice="auto", tools=[],
    )  # fmt: skip
    request = BaseVerifyRequest(responses_create_params=params, response=response)
    return request.model_dump(mode="json")


if __name__ == "__main__":
    if sys.argv[1] == "body":
        print(json.dumps(body(sys.argv[2])))
    elif sys.argv[1] == "request":
        BaseVerifyRequest.model_validate_json(sys.stdin.read())
        print(json.dumps({"valid": True}))
    else:
        print(
            json.dumps({"reward": BaseVerifyResponse.model_validate_json(sys.stdin.read()).reward})
        )
