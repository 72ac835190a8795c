"""The pathological-message corpus (issue 17; issue 22 added calls paired with a good one).

Huge numbers, deep nesting, lone surrogates, NULs, 20k unclosed tags, a megabyte of text,
mixed scripts and tool calls of every wrong shape. ``tests/test_hostile_messages.py`` sends it
to every catalog entry over every runner; ``tests/trainer/test_rollout_parity.py`` sends its
text through the trainer's rollout and ``envhub eval``'s episode loop and compares the two.
Every message must be answered with a status the model owns (:data:`MODEL_OWNED`).
"""

from __future__ import annotations

import json

from envhub.types import FunctionCall, Message, Status, ToolCall

MODEL_OWNED = frozenset({Status.OK, Status.INVALID_ACTION, Status.TIMEOUT})
"""The statuses a model's message may earn; ``env_error`` and ``infra_error`` drop a sample."""
DEEP = "[" * 50_000 + "]" * 50_000
TAGS = ("move", "moves", "column", "guess", "answer", "think", "tool_call")


def _call(name: str, arguments: str, i: int = 0) -> ToolCall:
    return ToolCall(id=f"c{i}", function=FunctionCall(name=name, arguments=arguments))


def _structured(*calls: ToolCall, content: str = "") -> Message:
    return Message(role="assistant", content=content, tool_calls=list(calls))


def _wrong_calls(tool: str) -> list[tuple[str, Message | str]]:
    """Tool calls of every wrong shape, to ``tool`` (one of the env's, or a made-up one)."""
    bad_args = ["[]", "null", "123", '"text"', "{bad", '{"query": 5}', '{"query": ""}',
                '{"query": "x", "extra": 1}', '{"k": "ten"}', DEEP, "9" * 5000,
                '{"query": "\\ud800", "doc_id": "\\udc00"}']  # fmt: skip
    text_shapes = ["[]", "null", '{"name": 5}', '{"arguments": {}}', '[{"name": "x"}, 1]',
                   f'{{"name": "{tool}", "arguments": {DEEP}}}',
                   json.dumps([{"name": tool, "arguments": {}}] * 2000),
                   f'{{"name": "{tool}", "arguments": {{"query": "\\ud800"}}}}']  # fmt: skip
    return [
        (f"structured {tool} args", _structured(*(_call(tool, a, i) for i, a in enumerate(bad_args)))),
        ("structured unknown tool", _structured(_call("rm_rf", "{}"), _call("", "{}", 1))),
        ("structured 500 calls", _structured(*(_call(tool, "{}", i) for i in range(500)))),
        (f"text {tool} shapes", "".join(f"<tool_call>{b}</tool_call>" for b in text_shapes)),
        ("text closing before opening", "</tool_call><tool_call></tool_call>" * 100),
        (f"text {tool} bad calls beside a good one", beside_a_good_call(tool)),
    ]  # fmt: skip


def beside_a_good_call(tool: str) -> str:
    """Malformed calls sent with a well-formed one: each malformed one must still count.

    The trainer's own parser once kept the good call and dropped the rest unseen, so pairing
    bad calls with a good one shed their penalty in training (issue 22).
    """
    good = json.dumps({"name": tool, "arguments": {"query": "capital of Vandoria"}})
    bad = ["{bad", f'{{"name": "{tool}", "arguments": {DEEP}}}', '{"arguments": {}}']
    return "".join(f"<tool_call>{body}</tool_call>" for body in [good, *bad])


def corpus(tools: list[str]) -> list[tuple[str, Message | str]]:
    """The pathological messages, named; tool calls target ``tools`` (and unknown tools)."""
    messages: list[tuple[str, Message | str]] = [
        ("huge numbers", "<move>" + "9" * 5000 + "</move> " + "7" * 5000 + " \\boxed{" + "9" * 5000 + "}"),
        ("huge code expression", "```python\nx = " + "+".join(["1"] * 100_000) + "\n```"),
        ("deep code expression", "```python\nx = " + "+".join(["1"] * 30_000) + "\n```"),
        ("deep parentheses", "```sql\nSELECT " + "(" * 20_000 + "1" + ")" * 20_000 + "\n```"
         " \\boxed{" + "(" * 20_000 + "}"),
        ("deep json", f"<tool_call>{DEEP}</tool_call> <answer>{DEEP}</answer>"),
        ("lone surrogates", "\ud800 <answer>\udfff</answer> <guess>\ud800</guess> "
         "```sql\nSELECT '\ud800'\n``` \\boxed{\ud800}"),
        ("NULs", "\x00" * 1000 + "<answer>\x00</answer><move>\x004</move>"
         "```python\n\x00\n```\n```sql\nSELECT '\x00'\n```\n#### 4\x00"),
        ("megabyte of text", "a" * 1_000_000),
        ("megabyte of code", "```python\n" + "x = 1\n" * 170_000 + "```"),
        ("mixed scripts", "Ответ: <answer>東京 مرحبا 🙂 ẞ İ</answer> <move>٤</move> "
         "<guess>ＣＲＡＮＥ</guess> <moves>↑↓←→</moves> \\boxed{٤٢} #### ४२"),
        ("unclosed fences", "```python\n" * 20_000),
        ("20k unclosed boxes", "\\boxed{" * 20_000 + " #### " * 20_000),
        ("towers and factorials", "\\boxed{10^{10^{10^{10}}}} \\boxed{100000!} #### 9^9^9^9"),
        ("nested fractions", "\\boxed{" + "\\frac{1}{" * 3000 + "2" + "}" * 3001),
    ]  # fmt: skip
    messages += [(f"20k unclosed <{t}>", f"<{t}>" * 20_000) for t in TAGS]
    messages.append(("20k mixed unclosed tags", "".join(f"<{t}>" for t in TAGS) * 3000))
    for tool in [*tools, "search"][:2]:
        messages += _wrong_calls(tool)
    return messages


SAMPLE = (
    "huge numbers",
    "huge code expression",
    "deep json",
    "lone surrogates",
    "NULs",
    "megabyte of text",
    "20k mixed unclosed tags",
    "20k unclosed <tool_call>",
    "20k unclosed boxes",
)
"""The messages every runner gets; the in-process runner (and HTTP for multi-turn) get all."""
