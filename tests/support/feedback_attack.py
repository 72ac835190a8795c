"""A policy with no algorithm that hard-codes what multi-turn code feedback reveals.

It answers each HumanEval-style task with a lookup table: every ``assert candidate(ARGS) ==
EXPECTED`` that the feedback shows as the first failing test becomes one entry, and the
program prints its arguments so that the feedback's program output reveals every input the
tests call it with. Against feedback drawn from the grading tests it earns reward without
solving anything (issue 17, point 9); against held-out grading it must earn ~0.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from envhub.core import Env
from envhub.types import StepResult

_PROGRAM = """```python
_TABLE = {table!r}

def _plain(x):
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {{k: _plain(v) for k, v in x.items()}}
    return x

def {entry}(*args):
    key = repr(_plain(list(args)))
    print("called with", key)
    return _TABLE.get(key)
```"""


def _plain(x: Any) -> Any:
    if isinstance(x, (list, tuple)):
        return [_plain(v) for v in x]
    if isinstance(x, dict):
        return {k: _plain(v) for k, v in x.items()}
    return x


def program(entry: str, table: dict[str, Any]) -> str:
    """The answer: ``entry`` looks its arguments up in ``table``."""
    return _PROGRAM.format(table=table, entry=entry)


def _expected(test: ast.expr) -> tuple[ast.Call, Any] | None:
    """``candidate(...) == X`` (either side), ``candidate(...)`` or ``not candidate(...)``."""
    if isinstance(test, ast.Call):
        return test, True
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _expected(test.operand)
        return (inner[0], not inner[1]) if inner else None
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        if isinstance(test.ops[0], (ast.Eq, ast.Is)):
            left, right = test.left, test.comparators[0]
            for call, other in ((left, right), (right, left)):
                if isinstance(call, ast.Call):
                    try:
                        return call, ast.literal_eval(other)
                    except (ValueError, SyntaxError, TypeError):
                        return None
    return None


def learn(feedback: str, table: dict[str, Any]) -> None:
    """Add the failing test shown in ``feedback`` to ``table`` (when it is a plain assert)."""
    match = re.search(r"First failing test:\n(.*?)\n\nError:", feedback, re.S)
    if not match:
        return
    try:
        tree = ast.parse(match.group(1))
    except SyntaxError:
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assert):
            continue
        found = _expected(node.test)
        if found is None:
            continue
        call, value = found
        try:
            args = [ast.literal_eval(a) for a in call.args]
        except (ValueError, SyntaxError, TypeError):
            continue
        table[repr(_plain(args))] = value


def play(env: Env, task_id: str, entry: str) -> StepResult:
    """One episode of the attack; returns the last step."""
    env.reset(task_id=task_id)
    table: dict[str, Any] = {}
    while True:
        result = env.step(program(entry, table))
        if result.done:
            return result
        learn(result.messages[0].content, table)
