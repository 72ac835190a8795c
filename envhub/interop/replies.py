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
model's (``invalid_action``, ``timeout``), but for one refusal: a request too large for the
server (413, or over a bound the entry states) that is mostly the model's own text is the
model's ``invalid_action``, as a step over ``envhub serve``'s body limit is (:func:`too_large`).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from envhub.client.reading import body_within, reply_limit
from envhub.deadline import DeadlineExceeded, call_within
from envhub.errors import EpisodeError, InfraError, InvalidAction


def post_json(
    url: str,
    body: dict[str, Any],
    timeout_s: float,
    action: str = "",
    max_body: int | None = None,
) -> dict[str, Any]:
    """POST ``body`` to ``url``; the JSON object it answers, read whole within ``timeout_s``.

    ``action`` is the model's text that ``body`` carries (JSON-encoded once in it), so that a
    body too large, sent (413) or not (over ``max_body`` bytes), is charged as
    :func:`too_large` says.

    Raises:
        InfraError: No whole answer within ``timeout_s`` (a trickle too), the server cannot
            be reached, or it answers 5xx or 429 (refused for capacity).
        InvalidAction: The body is too large, and mostly ``action``.
        EpisodeError: It answers another 4xx (or 3xx), over
            :func:`~envhub.client.reading.reply_limit`, or not a JSON object.
    """
    content = json.dumps(body).encode()
    if max_body is not None and len(content) > max_body:  # not sent: it cannot be read
        raise too_large(
            url, len(content), action, f"the {max_body} bytes of options.max_body_bytes"
        )
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
    if status == 413:
        raise too_large(url, len(content), action, f"what it reads (413: {text[:200]})")
    if status != 200:
        raise EpisodeError(f"{url} rejected the request ({status}): {text}")
    return json_object(url, raw)


def too_large(url: str, size: int, action: str, limit: str) -> EpisodeError:
    """Whose a request of ``size`` bytes, over ``limit``, is: the model's if ``action`` is most.

    The rest of the body (the task's row) goes with every answer, so when it is the smaller
    part, the answer's length made the request too large: the model's ``invalid_action``,
    scored as a truncation, as a step over ``envhub serve``'s body limit is. When the row is
    most of it, a short answer would be refused too: the environment's (its data, or a server
    that reads less than its own rows), ``env_error``. A request with no model text in it
    (``action`` empty) is always the environment's.
    """
    action_bytes = len(json.dumps(action).encode()) if action else 0
    if 2 * action_bytes > size:
        return InvalidAction(
            f"the answer is {action_bytes} bytes as JSON, which makes the request to {url} "
            f"{size} bytes, over {limit}; answer in a shorter message"
        )
    return EpisodeError(
        f"the request to {url} is {size} bytes, {action_bytes} of them the model's answer, "
        f"over {limit}: the rest of it (the task's row) is too large for the server"
    )


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
