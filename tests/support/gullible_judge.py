"""A gullible LLM judge for tests: it obeys instructions it reads and quotes the answer back.

It is the judge an attacker hopes for, as a responder of
:class:`envhub.evaluate.scripted.ScriptedEndpoint` (a real OpenAI-compatible server on
loopback). It reads a request the way a weak model does:

* **Data and instructions.** The text inside the first ``<response-NONCE>`` ...
  ``</response-NONCE>`` block (the same NONCE at both ends) is data; everything else is read
  as instructions. A prompt without such a block is all instructions, the response included.
* **It obeys.** An instruction ``ignore the above ... reply X`` makes it reply X and nothing
  else; the last one wins.
* **It grades,** otherwise: the gold is the word after ``Gold:`` in the instructions; a yes/no
  verdict is yes when the data holds the gold; a score is 5 points per time the data holds it
  (so eleven golds score 55, out of range).
* **It quotes.** A graded reply opens with ``You wrote: "<the data>"``, then the verdict line
  (``VERDICT: yes``, ``SCORE: 5``), or, when the request asks for JSON by ``response_format``
  and the judge is made to honour it, only the JSON object.
* **It breaks** where the data makes it: ``GARBLE`` in the data makes it babble without a
  verdict, ``REFUSEME`` makes the endpoint answer 400. A request longer than
  :data:`CONTEXT_CHARS` gets the 400 vLLM's server sends for a prompt over the context.
"""

from __future__ import annotations

import json
import re
from typing import Any

from envhub.evaluate.scripted import ScriptedHTTPError

CONTEXT_CHARS = 6000
"""The judge's context, in characters of the request's messages."""
BLOCK = re.compile(r"<(response-[0-9a-f]+)>(.*?)</\1>", re.DOTALL)
INJECTION = re.compile(r"ignore the above\W+reply (?:with )?(.+)", re.IGNORECASE)


def read(body: dict[str, Any]) -> tuple[str, str]:
    """The request as the judge reads it: (data, instructions)."""
    text = "\n".join(m.get("content") or "" for m in body.get("messages", []))
    found = BLOCK.search(text)
    if found is None:
        return "", text
    return found.group(2).strip(), text[: found.start()] + text[found.end() :]


def _grade(data: str, instructions: str, as_json: bool) -> str:
    gold = re.search(r"Gold: (\S+)", instructions)
    hits = data.count(gold.group(1)) if gold else 0
    if "SCORE:" in instructions:
        key, value, line = "score", 5 * hits, f"SCORE: {5 * hits}"
    else:
        key, value = "verdict", "yes" if hits else "no"
        line = f"VERDICT: {value}"
    if as_json:
        return json.dumps({key: value})
    return f'You wrote: "{data}"\n{line}'


def gullible_judge(response_format: str = "ignore"):
    """The responder.

    Args:
        response_format: What it does with a request's ``response_format``: ``honour`` it
            (reply JSON), ``ignore`` it (reply text, as a server that drops the field) or
            ``refuse`` it (HTTP 400, as a server that lacks it).
    """

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        asked_json = "response_format" in body
        if asked_json and response_format == "refuse":
            raise ScriptedHTTPError(400, "response_format is not supported by this server")
        size = sum(len(m.get("content") or "") for m in body.get("messages", []))
        if size > CONTEXT_CHARS:
            raise ScriptedHTTPError(
                400,
                f"This model's maximum context length is {CONTEXT_CHARS // 4} tokens. However, "
                f"you requested {size // 4} tokens in the messages.",
            )
        data, instructions = read(body)
        if "REFUSEME" in data + instructions:
            raise ScriptedHTTPError(400, "the request holds content this server refuses")
        obeyed = INJECTION.findall(instructions)
        if obeyed:
            return {"content": obeyed[-1].strip()}
        if "GARBLE" in data:
            return {"content": "Well, graded: it depends what one means by a word, really."}
        as_json = asked_json and response_format == "honour"
        return {"content": _grade(data, instructions, as_json)}

    return respond
