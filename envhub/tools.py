"""Tool calls: definitions, the two call forms a model may use, and argument validation.

Any environment that offers tools builds a :class:`ToolSet` from :class:`Tool` definitions and
gets, from one place:

* the tool definitions in the OpenAI convention (``{"type": "function", "function": {...}}``
  with a JSON-schema ``parameters`` object), for ``tools()`` and chat APIs;
* parsing of the calls in an assistant :class:`~envhub.types.Message`, in either form:

  - **structured**: ``message.tool_calls`` as OpenAI-compatible servers return them
    (``function.arguments`` is a JSON-encoded object);
  - **text** (for models and servers without native tool calling), the Hermes/Qwen form, one
    block per call anywhere in ``message.content``::

        <tool_call>{"name": "search", "arguments": {"query": "capital of Vandoria"}}</tool_call>

    ``"parameters"`` is accepted as a synonym of ``"arguments"``, ``arguments`` may itself be
    a JSON-encoded string, and a block may hold a JSON list of such objects. When a message
    carries structured calls, its text is not searched for calls.

* validation of each call's arguments against the schema, with an
  :class:`~envhub.errors.InvalidAction` that says what was wrong and how to fix it (bad JSON,
  unknown tool, missing, unexpected or wrongly typed arguments);
* the messages that carry the results back: one ``role="tool"`` message per structured call
  (with its ``tool_call_id``), and for text calls one ``role="user"`` message holding a
  ``<tool_response>`` block per call, which every chat template can render;
* the tool loop itself, :class:`ToolEnv`: a multi-turn :class:`~envhub.core.TaskEnv` that
  parses each message's calls, counts them, answers a bad one with its error (the step's status
  ``invalid_action``, the episode goes on) and the others with what the environment's
  :meth:`ToolEnv.call_tool` returns, and hands a message without calls to
  :meth:`ToolEnv.answer`.

The argument checker covers the JSON-schema subset tools need: the types ``string``,
``integer``, ``number``, ``boolean``, ``array`` and ``object``, ``enum``, ``minimum``,
``maximum``, ``minLength`` and ``maxLength``. Defaults of optional parameters are filled in.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from .core import Episode, Feedback, TaskEnv
from .errors import ConfigError, InvalidAction, VerifierTimeout
from .tags import block_text, tag_blocks
from .types import Message, Status, Task

JsonType = Literal["string", "integer", "number", "boolean", "array", "object"]

TEXT_CALL_TAG = "tool_call"
"""The tag of a text-form call; the body is a JSON object with ``name`` and ``arguments``."""

TEXT_CALL_EXAMPLE = '<tool_call>{"name": "NAME", "arguments": {...}}</tool_call>'

_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}


@dataclass(frozen=True)
class Param:
    """One parameter of a tool."""

    name: str
    type: JsonType
    description: str
    required: bool = True
    default: Any = None
    """Value filled in when an optional parameter is left out."""
    enum: tuple[Any, ...] | None = None
    minimum: float | None = None
    maximum: float | None = None
    min_length: int | None = None
    """Strings only: the fewest characters allowed (after stripping blanks)."""
    max_length: int | None = None
    """Strings only: the most characters allowed (bounds the work a call can ask for)."""

    def schema(self) -> dict[str, Any]:
        """This parameter as a JSON-schema property."""
        out: dict[str, Any] = {"type": self.type, "description": self.description}
        for key, value in (
            ("enum", list(self.enum) if self.enum is not None else None),
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("minLength", self.min_length),
            ("maxLength", self.max_length),
            ("default", None if self.required else self.default),
        ):
            if value is not None:
                out[key] = value
        return out

    def check(self, tool: str, value: Any) -> Any:
        """Return ``value`` if it fits this parameter, else raise :class:`InvalidAction`."""
        where = f"argument {self.name!r} of {tool!r}"
        is_bool = isinstance(value, bool)
        fits = isinstance(value, _PY_TYPES[self.type]) and (self.type == "boolean") == is_bool
        if self.type == "integer" and isinstance(value, float) and value.is_integer():
            value, fits = int(value), True
        if not fits:
            raise InvalidAction(
                f"{where} must be of type {self.type}, got {_json_type(value)} "
                f"({json.dumps(value)[:60]}): {self.description}"
            )
        if self.enum is not None and value not in self.enum:
            raise InvalidAction(f"{where} must be one of {list(self.enum)}, got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise InvalidAction(f"{where} must be at least {self.minimum}, got {value}")
        if self.maximum is not None and value > self.maximum:
            raise InvalidAction(f"{where} must be at most {self.maximum}, got {value}")
        if (
            self.min_length is not None
            and isinstance(value, str)
            and (len(value.strip()) < self.min_length)
        ):
            raise InvalidAction(
                f"{where} must have at least {self.min_length} non-blank character(s)"
            )
        if self.max_length is not None and isinstance(value, str) and len(value) > self.max_length:
            raise InvalidAction(
                f"{where} is {len(value)} characters long; at most {self.max_length} are allowed"
            )
        return value


@dataclass(frozen=True)
class Tool:
    """A tool offered to the model: a name, a description and typed parameters."""

    name: str
    description: str
    params: tuple[Param, ...] = ()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]{0,63}", self.name):
            raise ConfigError(f"tool name {self.name!r} must match [A-Za-z_][A-Za-z0-9_-]*")
        names = [p.name for p in self.params]
        if len(set(names)) != len(names):
            raise ConfigError(f"tool {self.name!r} declares a parameter twice: {names}")

    def schema(self) -> dict[str, Any]:
        """The OpenAI function definition of this tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": {
                    "type": "object",
                    "properties": {p.name: p.schema() for p in self.params},
                    "required": [p.name for p in self.params if p.required],
                    "additionalProperties": False,
                },
            },
        }

    def validate(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """Checked arguments with defaults filled in; raises :class:`InvalidAction`."""
        known = {p.name: p for p in self.params}
        extra = sorted(set(arguments) - set(known))
        if extra:
            raise InvalidAction(
                f"{self.name!r} got unexpected argument(s) {extra}; it takes "
                f"{sorted(known) or 'no arguments'}"
            )
        out: dict[str, Any] = {}
        for p in self.params:
            if p.name in arguments:
                out[p.name] = p.check(self.name, arguments[p.name])
            elif p.required:
                raise InvalidAction(
                    f"{self.name!r} is missing the required argument {p.name!r} "
                    f"({p.type}: {p.description})"
                )
            elif p.default is not None:
                out[p.name] = p.default
        return out


@dataclass(frozen=True)
class ParsedCall:
    """One tool call read from an assistant message, valid or not."""

    id: str
    """The call's id: the structured call's own, or ``call_N`` for text calls."""
    name: str | None
    """The tool's name; ``None`` when the call was too malformed to tell."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """Validated arguments, defaults filled in (empty when the call is invalid)."""
    structured: bool = True
    """True for ``message.tool_calls``, False for a text ``<tool_call>`` block."""
    error: str | None = None
    """Why the call cannot be run (the text of its :class:`InvalidAction`)."""

    @property
    def ok(self) -> bool:
        """The call is well-formed and may be run."""
        return self.error is None


class ToolSet:
    """The tools of an environment: their definitions, and parsing of calls to them."""

    def __init__(self, tools: Sequence[Tool], max_calls: int = 8) -> None:
        """Build from tool definitions; ``max_calls`` caps the calls read from one message."""
        names = [t.name for t in tools]
        if len(set(names)) != len(names):
            raise ConfigError(f"tool names must be unique, got {names}")
        self.tools = {t.name: t for t in tools}
        self.max_calls = max_calls

    def schemas(self) -> list[dict[str, Any]]:
        """OpenAI function definitions of every tool (for ``Env.tools()``)."""
        return [t.schema() for t in self.tools.values()]

    def describe(self) -> str:
        """A plain-text description of the tools and how to call them, for a system prompt."""
        defs = "\n".join(json.dumps(t.schema()["function"]) for t in self.tools.values())
        return (
            "You can call these tools (JSON schema):\n"
            f"{defs}\n"
            "To call a tool, write one block per call:\n"
            f"{TEXT_CALL_EXAMPLE}\n"
            "Results come back in <tool_response> blocks."
        )

    @staticmethod
    def has_calls(message: Message) -> bool:
        """True when the message tries to call a tool (in either form), well-formed or not."""
        return bool(message.tool_calls) or "<tool_call>" in message.content

    def parse(self, message: Message) -> list[ParsedCall]:
        """Every call in ``message``; malformed ones carry an ``error`` instead of raising."""
        if message.tool_calls:
            raw = [
                (c.id or f"call_{i}", c.function.name, c.function.arguments, True)
                for i, c in enumerate(message.tool_calls)
            ]
            calls = [self._checked(*r) for r in raw]
        else:
            envelopes = [env for body in _text_blocks(message) for env in _envelopes(body)]
            calls = [self._from_text(f"call_{i}", env) for i, env in enumerate(envelopes)]
        for i, call in enumerate(calls[self.max_calls :], start=self.max_calls):
            calls[i] = ParsedCall(
                id=call.id,
                name=call.name,
                structured=call.structured,
                error=f"too many tool calls in one message (at most {self.max_calls}); "
                "this one was not run",
            )
        return calls

    def parse_strict(self, message: Message) -> list[ParsedCall]:
        """Every call in ``message``; raises :class:`InvalidAction` for the first bad one."""
        calls = self.parse(message)
        for call in calls:
            if call.error is not None:
                raise InvalidAction(call.error)
        return calls

    def validate(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Checked arguments of a call to ``name``; raises :class:`InvalidAction`."""
        tool = self.tools.get(name)
        if tool is None:
            close = difflib.get_close_matches(name, list(self.tools), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise InvalidAction(
                f"unknown tool {name!r}{hint}; available tools: {', '.join(self.tools)}"
            )
        return tool.validate(arguments)

    def _checked(self, call_id: str, name: str, arguments: Any, structured: bool) -> ParsedCall:
        try:
            args = _decode_arguments(name, arguments)
            args = self.validate(name, args)
        except InvalidAction as e:
            return ParsedCall(id=call_id, name=name, structured=structured, error=str(e))
        return ParsedCall(id=call_id, name=name, arguments=args, structured=structured)

    def _from_text(self, call_id: str, envelope: Any) -> ParsedCall:
        if isinstance(envelope, InvalidAction):
            return _bad(call_id, str(envelope))
        if not isinstance(envelope, dict) or not isinstance(envelope.get("name"), str):
            return _bad(
                call_id,
                "a <tool_call> block must hold a JSON object with a string 'name' and an "
                f"'arguments' object: {TEXT_CALL_EXAMPLE}",
            )
        unexpected = sorted(set(envelope) - {"name", "arguments", "parameters", "id"})
        if unexpected:
            return _bad(
                call_id,
                f"unexpected key(s) {unexpected} in <tool_call>; use only 'name' and 'arguments'",
                envelope["name"],
            )
        args = envelope.get("arguments", envelope.get("parameters", {}))
        return self._checked(call_id, envelope["name"], args, structured=False)


def tool_result_messages(results: Sequence[tuple[ParsedCall, str]]) -> list[Message]:
    """Messages carrying tool results (or errors) back to the model.

    Structured calls are answered with one ``role="tool"`` message each, referring to the call
    by ``tool_call_id``; text calls with a single ``role="user"`` message of
    ``<tool_response>`` blocks, in call order.
    """
    out: list[Message] = []
    text_blocks: list[str] = []
    for call, content in results:
        if call.structured:
            out.append(Message(role="tool", content=content, tool_call_id=call.id, name=call.name))
        else:
            text_blocks.append(f"<tool_response>\n{content}\n</tool_response>")
    if text_blocks:
        out.append(Message(role="user", content="\n".join(text_blocks)))
    return out


def _text_blocks(message: Message) -> list[str | None]:
    """Bodies of the ``<tool_call>`` blocks of a message; ``None`` for an unclosed one."""
    text = message.content
    found = tag_blocks(text, TEXT_CALL_TAG, ignore_case=False)
    blocks: list[str | None] = [block_text(text, b).strip() for b in found if b.closed]
    if any(not b.closed for b in found):
        blocks.append(None)
    return blocks


def _envelopes(body: str | None) -> list[Any]:
    """The call objects of one ``<tool_call>`` block, or the :class:`InvalidAction` it earns.

    A block normally holds one object; a JSON list of objects (as some small models write)
    counts as one call per element.
    """
    if body is None:
        return [InvalidAction("a <tool_call> block is not closed: end it with </tool_call>")]
    try:
        decoded = _loads(body, "the <tool_call> block", f"write {TEXT_CALL_EXAMPLE}")
    except InvalidAction as e:
        return [e]
    if isinstance(decoded, list) and decoded and all(isinstance(d, dict) for d in decoded):
        return decoded
    return [decoded]


def _decode_arguments(name: str, arguments: Any) -> dict[str, Any]:
    """The arguments as a dict: a JSON-encoded object (or an object) is accepted."""
    if isinstance(arguments, str):
        if not arguments.strip():
            return {}
        arguments = _loads(
            arguments,
            f"the arguments of {name!r}",
            'send a JSON object such as {"param": "value"}',
        )
    else:
        _check_unicode(arguments, f"the arguments of {name!r}")
    if not isinstance(arguments, dict):
        raise InvalidAction(
            f"the arguments of {name!r} must be a JSON object, got {_json_type(arguments)}"
        )
    return arguments


def _loads(text: str, what: str, fix: str) -> Any:
    r"""Decode model-written JSON; every way it can fail is the model's :class:`InvalidAction`.

    Besides malformed JSON: nesting deeper than the interpreter's recursion limit
    (``RecursionError``), integers over Python's digit limit (``ValueError``), and escapes
    of lone surrogates (``"\\ud800"``), which decode to a string no encoder or server can
    write back.
    """
    try:
        decoded = json.loads(text)
    except json.JSONDecodeError as e:
        raise InvalidAction(f"{what} is not valid JSON ({e.msg} at char {e.pos}); {fix}") from e
    except RecursionError as e:
        raise InvalidAction(f"{what} is JSON nested too deeply to read; {fix}") from e
    except (ValueError, MemoryError) as e:
        raise InvalidAction(f"{what} is JSON that cannot be read ({str(e)[:80]}); {fix}") from e
    _check_unicode(decoded, what)
    return decoded


def _check_unicode(value: Any, what: str) -> None:
    """Raise :class:`InvalidAction` unless every string in ``value`` is valid Unicode."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as e:
        raise InvalidAction(
            f"{what} holds a lone surrogate ({e.object[e.start : e.end]!a}), which is not "
            "valid Unicode; send text only"
        ) from e
    except (TypeError, ValueError, RecursionError) as e:
        raise InvalidAction(f"{what} is not plain JSON data ({type(e).__name__})") from e


def _bad(call_id: str, error: str, name: str | None = None) -> ParsedCall:
    return ParsedCall(id=call_id, name=name, structured=False, error=error)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    for name in ("integer", "number", "string", "array", "object"):
        if isinstance(value, _PY_TYPES[name]):
            return name
    return type(value).__name__


def with_system_prompt(
    messages: Sequence[Message], system: str, toolset: ToolSet | None = None
) -> list[Message]:
    """``messages`` opening with ``system`` instead of their own system message.

    With ``toolset``, its text description follows the prompt (for models that read tools from
    the prompt rather than from the request's ``tools``).
    """
    if toolset is not None:
        system = f"{system}\n\n{toolset.describe()}"
    rest = list(messages[1:] if messages and messages[0].role == "system" else messages)
    return [Message(role="system", content=system), *rest]


# ---------------------------------------------------------------- the tool loop

NOT_RUN = "Error: not run: an earlier call of this message timed out"


@dataclass
class ToolCounts:
    """The tallies of one tool episode (a tool environment's state, or the base of it)."""

    calls: int = 0
    """Calls tried, valid or not (a call not run after a time-out is not counted)."""
    invalid: int = 0
    """The model's bad calls: malformed, refused, or timed out."""

    def components(self) -> dict[str, float]:
        """The tallies as reward components (the environment pays those in its counters)."""
        return {"tool_calls": float(self.calls), "invalid_calls": float(self.invalid)}


class ToolEnv(TaskEnv):
    """A multi-turn environment where the model acts by calling tools: the tool loop, once.

    Each assistant message either calls tools (in either form, see :class:`ToolSet`) or not.
    Its calls are parsed by :attr:`toolset` and run in order; each is counted. A call the model
    got wrong (malformed, unknown tool, bad arguments, or refused by :meth:`call_tool` with
    :class:`~envhub.errors.InvalidAction`) is answered with ``Error: ...`` in place of a result
    and makes the step ``invalid_action``; a call :meth:`call_tool` reports as too slow
    (:class:`~envhub.errors.VerifierTimeout`) makes it ``timeout`` and the message's later calls
    are not run. Either way the episode goes on. Any other error is the machinery's and ends
    the episode at the core's boundary. A message without calls goes to :meth:`answer`.

    Subclasses set :attr:`toolset` and implement :meth:`call_tool`; they may override
    :meth:`answer` (by default the message is the final answer, scored by :meth:`score` and
    paid with the tallies) and :meth:`init_state` (a :class:`ToolCounts`, or a subclass of it).
    The tallies named in :attr:`~envhub.core.TaskEnv.counters` (``tool_calls``,
    ``invalid_calls``, ...) are paid on the answering step and on truncation.
    """

    toolset: ToolSet
    """The tools offered (an attribute or a property)."""
    async_steps: ClassVar[bool] = False
    """Set for a subclass that writes :meth:`acall_tool` (or another async hook)."""
    async_hooks: ClassVar[frozenset[str]] = TaskEnv.async_hooks | {"acall_tool"}
    default_system_prompt: ClassVar[str | None] = None
    """The system prompt when the YAML gives none; ``None`` keeps the task env's opening."""
    tools_in_prompt: bool = False
    """Describe the tools and the text call form in the system prompt (for models without
    native tool calling); only with a system prompt."""

    def call_tool(self, episode: Episode, call: ParsedCall) -> str | Feedback:
        """Run one well-formed call: its result as the text the model reads.

        Raise :class:`~envhub.errors.InvalidAction` for a call the model got wrong and
        :class:`~envhub.errors.VerifierTimeout` for one that ran past its deadline. Return a
        :class:`~envhub.core.Feedback` instead to end the turn there (a submitted answer):
        the message's later calls are not run.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement call_tool")

    def answer(self, episode: Episode, message: Message) -> Feedback:
        """A message without tool calls: the final answer, scored and paid with the tallies."""
        components, details = self.score(episode.task, message)
        return Feedback(done=True, components={**components, **self.tallies(episode)}, info=details)

    def tallies(self, episode: Episode) -> dict[str, float]:
        """The episode's tallies that this environment pays (its counters)."""
        state: ToolCounts = episode.state
        return {k: v for k, v in state.components().items() if k in self.counters}

    def tools(self) -> list[dict[str, Any]]:
        """The tools as OpenAI function definitions."""
        return self.toolset.schemas()

    def opening_messages(self, task: Task) -> list[Message]:
        """The task env's opening under the system prompt (with the tools, if asked)."""
        opening = super().opening_messages(task)
        system = self.spec.system_prompt or self.default_system_prompt
        if system is None:
            return opening
        return with_system_prompt(opening, system, self.toolset if self.tools_in_prompt else None)

    def init_state(self, episode: Episode) -> ToolCounts:
        """Fresh tallies."""
        return ToolCounts()

    async def acall_tool(self, episode: Episode, call: ParsedCall) -> str | Feedback:
        """:meth:`call_tool` for a tool that awaits I/O (an API, an MCP server, a sandbox).

        Write this instead of :meth:`call_tool` and the environment's steps are async
        (:attr:`~envhub.core.Env.async_steps`): a server awaits them on its event loop, and a
        step waiting on a tool holds no thread. Same contract as :meth:`call_tool`; never
        block in it.
        """
        return self.call_tool(episode, call)

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Run the message's tool calls, or hand it to :meth:`answer`."""
        if not ToolSet.has_calls(message):
            return self.answer(episode, message)
        turn = self._turn(episode, message)
        try:
            call = next(turn)
            while True:
                try:
                    out = self.call_tool(episode, call)
                except (InvalidAction, VerifierTimeout) as e:
                    call = turn.throw(e)
                else:
                    call = turn.send(out)
        except StopIteration as end:
            return end.value

    async def aenv_response(self, episode: Episode, message: Message) -> Feedback:
        """:meth:`env_response` with :meth:`acall_tool` awaited (the same tool loop)."""
        if not ToolSet.has_calls(message):
            return self.answer(episode, message)
        turn = self._turn(episode, message)
        try:
            call = next(turn)
            while True:
                try:
                    out = await self.acall_tool(episode, call)
                except (InvalidAction, VerifierTimeout) as e:
                    call = turn.throw(e)
                else:
                    call = turn.send(out)
        except StopIteration as end:
            return end.value

    def _turn(
        self, episode: Episode, message: Message
    ) -> Generator[ParsedCall, str | Feedback, Feedback]:
        """The tool loop, once, for :meth:`env_response` and :meth:`aenv_response`.

        Yields each call to run, is sent its result (or thrown the model's error:
        ``InvalidAction``, ``VerifierTimeout``) and returns the turn's feedback.
        """
        state: ToolCounts = episode.state
        results: list[tuple[ParsedCall, str]] = []
        errors: list[str] = []
        status = Status.OK
        for call in self.toolset.parse(message):
            if status is Status.TIMEOUT:  # a slow call spent the turn: the rest are not run
                results.append((call, NOT_RUN))
                continue
            state.calls += 1
            try:
                if call.error is not None:
                    raise InvalidAction(call.error)
                out = yield call
            except (InvalidAction, VerifierTimeout) as e:
                state.invalid += 1
                errors.append(str(e))
                results.append((call, f"Error: {e}"))
                status = e.status
                continue
            if isinstance(out, Feedback):
                return out
            results.append((call, out))
        return Feedback(
            messages=tool_result_messages(results),
            status=status,
            error="; ".join(errors) or None,
            info={"tool_calls": state.calls},
        )

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """No answer within the turn budget: outcomes at 0, the tallies as counted."""
        worst = {name: 0.0 for name in self.components - self.counters}
        return {**worst, **self.tallies(episode)}
