"""Reading another ecosystem's server: one deadline for the whole reply, and a bounded body.

An HTTP client's timeout bounds each read, not the reply: a server that trickles its answer
at 2 bytes a second never trips it, and one that sends 100 MB is read whole. Here the
deadline covers connecting, the headers and every byte of the body (:func:`post_json`), and
a body over :func:`~envhub.client.reading.reply_limit` is refused unread (the bound and the
bounded read are :mod:`envhub.client.reading`'s, the same for envhub's own runners). Whose
fault each outcome is follows the bridges' one rule (``envhub/interop/README.md``): no whole
answer in time (a slow server, or one that trickles its headers or its body), an unreachable
server, a 5xx or a 429 (refused for capacity) is ``infra_error``; another 4xx, a body over
the bound, or one that is not the JSON object asked for is ``env_error``. None is the
model's (``invalid_action``, ``timeout``).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from envhub.client.reading import body_within, reply_limit
from envhub.deadline import DeadlineExceeded, call_within
from envhub.errors import EpisodeError, InfraError


def post_json(url: str, body: dict[str, Any], timeout_s: float) -> dict[str, Any]:
    """POST ``body`` to ``url``; the JSON object it answers, read whole within ``timeout_s``.

    Raises:
        InfraError: No whole answer within ``timeout_s`` (a trickle too), the server cannot
            be reached, or it answers 5xx or 429 (refused for capacity).
        EpisodeError: It answers another 4xx (or 3xx), over
            :func:`~envhub.client.reading.reply_limit`, or not a JSON object.
    """
    content = json.dumps(body).encode()
    deadline = time.monotonic() + timeout_s
    try:
        status, raw = call_within(lambda: _read(url, content, deadline, timeout_s), timeout_s)
    except (DeadlineExceeded, httpx.TimeoutException) as e:  # the remote's delay, not the model's
        raise InfraError(f"{url} did not answer within {timeout_s:g} s (options.timeout_s)") from e
    except httpx.HTTPError as e:
        raise InfraError(f"cannot reach {url}: {e}") from e
    text = raw[:500].decode("utf-8", "replace")
    if status >= 500 or status == 429:  # failed, or refused for capacity: the machinery's
        raise InfraError(f"{url} failed ({status}): {text}")
    if status != 200:
        raise EpisodeError(f"{url} rejected the request ({status}): {text}")
    return json_object(url, raw)


def _read(url: str, content: bytes, deadline: float, timeout_s: float) -> tuple[int, bytes]:
    """The status and body, read to the deadline and the size bound."""
    headers = {"content-type": "application/json"}
    with httpx.stream("POST", url, content=content, headers=headers, timeout=timeout_s) as resp:
        return resp.status_code, body_within(resp, reply_limit(len(content)), deadline, url)


def json_object(who: str, raw: str | bytes) -> dict[str, Any]:
    """``raw`` read as a JSON object; anything else is ``who``'s fault (``EpisodeError``)."""
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError) as e:
        raise EpisodeError(f"{who} answered with no JSON: {raw[:200]!r}") from e
    if not isinstance(value, dict):
        raise EpisodeError(f"{who} answered a {type(value).__name__}, not a JSON object")
    return value


def finite_number(url: str, reply: dict[str, Any], field: str) -> float:
    """``reply[field]`` as a finite number; a missing or other value is the server's fault."""
    value = reply.get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise EpisodeError(f"{url} answered {field}={value!r}, not a number")
    try:
        number = float(value)
    except OverflowError:  # an int of 400 digits
        raise EpisodeError(f"{url} answered {field}={repr(value)[:40]}, not a float") from None
    if number in (float("inf"), float("-inf")):
        raise EpisodeError(f"{url} answered {field}={value!r}, not a finite number")
    return number
