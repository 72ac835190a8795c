"""Function tests run so that the program under test cannot forge the verdict.

A :class:`FunctionSuite` is trusted test code (from the dataset) cut into steps: setup
statements and tests. :func:`run_suite` ships the untrusted program and the suite to the
sandbox's runner (see :mod:`envhub.sandbox._runner`): the tests execute in the runner process,
the program in a separate worker process, and each call ``candidate(...)`` crosses between them
as plain data. Only the runner reports results, on a channel the program never holds, and the
parent counts them itself: a run passes when every test index it asked for came back passed.

How the fraction is computed: each top-level statement of the test code that contains an
``assert`` (other than ``assert <constant>``) is one test; the other statements are setup,
run in order in the same namespace. A loop of asserts is therefore one test. A setup statement
that fails makes every later test fail. After a test times out the rest are not run (they
count as failed) and the report is marked ``timed_out``.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..errors import ConfigError
from .errors import SandboxError
from .limits import Limits
from .parent import RunResult, Sandbox


@dataclass(frozen=True)
class Step:
    """One statement group of a suite: setup, or a test counted in the fraction."""

    code: str
    is_test: bool
    label: str = ""
    """Short text shown in reports (the test's source, shortened)."""


@dataclass(frozen=True)
class FunctionSuite:
    """Trusted tests of one or more functions the program must define."""

    functions: tuple[str, ...]
    """Names the program must define; the tests call them by name, and ``candidate`` is the
    first one."""
    steps: tuple[Step, ...]

    @property
    def tests(self) -> list[Step]:
        """The steps that count."""
        return [s for s in self.steps if s.is_test]

    @classmethod
    def from_check_function(
        cls, test_source: str, entry_point: str, setup: str = ""
    ) -> FunctionSuite:
        """A HumanEval-style suite: ``def check(candidate): assert ...`` is split by statement.

        Args:
            test_source: Module defining ``check(candidate)`` (and maybe constants).
            entry_point: The function under test.
            setup: Trusted code run first (e.g. the task's prompt: imports and helpers).
        """
        module = _parse(test_source, "test code")
        checks = [n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == "check"]
        if not checks:
            raise ConfigError("the test code defines no `check(candidate)` function")
        check = checks[0]
        if not check.args.args:
            raise ConfigError("`check` must take the function under test as its argument")
        arg = check.args.args[0].arg
        others = [n for n in module.body if n is not check]
        steps = [Step(setup, False, "setup")] if setup.strip() else []
        steps += [Step(_src(test_source, n), False, "setup") for n in others]
        if arg != "candidate":
            steps.append(Step(f"{arg} = candidate", False, "alias"))
        steps += [_step(test_source, n) for n in check.body]
        return cls._checked((entry_point,), steps)

    @classmethod
    def from_asserts(
        cls, asserts: Sequence[str], setup: str = "", functions: Sequence[str] = ()
    ) -> FunctionSuite:
        """An MBPP-style suite: a list of assert statements calling the functions by name.

        ``functions`` defaults to the names the asserts call that are neither builtins nor
        defined by ``setup``.
        """
        names = list(functions) or called_names(asserts, setup)
        if not names:
            raise ConfigError("cannot tell which function the tests call; give its name")
        steps = [Step(setup, False, "setup")] if setup.strip() else []
        for text in asserts:
            module = _parse(text, "test")
            steps += [_step(text, n) for n in module.body]
        return cls._checked(tuple(names), steps)

    @classmethod
    def _checked(cls, functions: tuple[str, ...], steps: list[Step]) -> FunctionSuite:
        if not any(s.is_test for s in steps):
            raise ConfigError("the test code has no assert that could fail: nothing to check")
        return cls(functions=functions, steps=tuple(steps))


def called_names(asserts: Sequence[str], setup: str = "") -> list[str]:
    """Functions called in ``asserts`` that are neither builtins nor defined in ``setup``."""
    defined = set(dir(builtins))
    if setup.strip():
        for node in ast.walk(_parse(setup, "setup")):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                defined.add(node.name)
            elif isinstance(node, ast.alias):
                defined.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                defined.add(node.id)
    names: list[str] = []
    for text in asserts:
        for node in ast.walk(_parse(text, "test")):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                name = node.func.id
                if name not in defined and name not in names:
                    names.append(name)
    return names


def _parse(text: str, what: str) -> ast.Module:
    try:
        return ast.parse(text)
    except SyntaxError as e:
        raise ConfigError(f"the {what} is not valid Python: {e}") from e


def _src(text: str, node: ast.stmt) -> str:
    segment = ast.get_source_segment(text, node)
    return segment if segment is not None else ast.unparse(node)


def _step(text: str, node: ast.stmt) -> Step:
    code = _src(text, node)
    code = _dedent_block(code, node.col_offset)
    is_test = any(
        isinstance(n, ast.Assert) and not isinstance(n.test, ast.Constant) for n in ast.walk(node)
    )
    label = " ".join(code.split())
    return Step(code, is_test, label if len(label) <= 160 else label[:157] + "...")


def _dedent_block(code: str, col: int) -> str:
    """``get_source_segment`` keeps the inner lines' indentation; strip the statement's own."""
    lines = code.splitlines()
    return "\n".join([lines[0]] + [ln[col:] if ln[:col].isspace() else ln for ln in lines[1:]])


@dataclass
class TestOutcome:
    """The result of one test, as reported by the trusted runner."""

    __test__ = False  # not a pytest class

    index: int
    label: str
    passed: bool
    error: str | None = None
    timed_out: bool = False


@dataclass
class SuiteReport:
    """The verdict on one program: counted by the parent from the runner's messages."""

    total: int
    passed: int
    outcomes: list[TestOutcome]
    timed_out: bool
    """A test (or the whole run) ran past its deadline."""
    finished: bool
    """The runner reported the end of the suite (it may be killed by the program)."""
    run: RunResult = field(repr=False)

    @property
    def all_passed(self) -> bool:
        """Every test passed: the only result that earns ``correctness``."""
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        """Passed tests over all tests."""
        return self.passed / self.total if self.total else 0.0

    def first_failure(self) -> TestOutcome | None:
        """The first test that did not pass, if any."""
        return next((o for o in self.outcomes if not o.passed), None)


def run_suite(
    sandbox: Sandbox,
    code: str,
    suite: FunctionSuite,
    *,
    test_timeout_s: float = 5.0,
    limits: Limits | None = None,
) -> SuiteReport:
    """Run ``suite`` against the untrusted ``code`` in ``sandbox``.

    Raises:
        SandboxUnavailable: no sandbox here (an infra error, never a reward of 0).
        SandboxError: the sandbox failed to start or its runner broke the protocol.
    """
    job = {
        "code": code,
        "functions": list(suite.functions),
        "steps": [{"code": s.code, "test": s.is_test, "label": s.label} for s in suite.steps],
        "test_timeout_s": test_timeout_s,
    }
    run = sandbox.launch("tests", job, limits=limits)
    return _report(suite, run)


def _report(suite: FunctionSuite, run: RunResult) -> SuiteReport:
    wanted = {i: s for i, s in enumerate(suite.steps) if s.is_test}
    seen: dict[int, TestOutcome] = {}
    finished = False
    for msg in run.messages:
        if msg.get("event") == "done":
            finished = True
        index = msg.get("index")
        if msg.get("event") != "test" or index not in wanted or index in seen:
            continue
        seen[index] = TestOutcome(
            index=index,
            label=wanted[index].label,
            passed=msg.get("passed") is True,
            error=_text(msg.get("error")),
            timed_out=bool(msg.get("timeout")),
        )
    _check_machinery(run)
    if run.timed_out:
        why = "the run timed out"
    else:
        code = run.exit_code
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        why = f"the test runner was stopped by the program ({how})"
    outcomes = [
        seen.get(i) or TestOutcome(i, step.label, False, f"not run: {why}")
        for i, step in wanted.items()
    ]
    passed = sum(o.passed for o in outcomes)
    return SuiteReport(
        total=len(outcomes),
        passed=passed,
        outcomes=outcomes,
        timed_out=run.timed_out or any(o.timed_out for o in outcomes),
        finished=finished,
        run=run,
    )


def _text(value: object) -> str | None:
    """Text the program shaped (its exceptions' messages) as valid UTF-8.

    A lone surrogate would make the score unserialisable: a server error instead of the
    program's own failure.
    """
    if value is None:
        return None
    return str(value).encode("utf-8", "replace").decode("utf-8")


def _check_machinery(run: RunResult) -> None:
    """Raise where the sandbox itself proved it failed; nothing else is the machinery's.

    Proof comes only from the machinery's own channels: no ``ready`` heartbeat (the program
    never ran, so it cannot be the cause), a ``crash`` the runner reported from its own exit
    path, or a runner that said it could not harden itself. A report that merely stops early or
    carries broken lines proves nothing (the program may have exhausted the run's memory or,
    in ``rlimit`` mode, killed the runner): its unreported tests count as failed.
    """
    if not run.started:
        when = "within the deadline" if run.timed_out else f"(exit code {run.exit_code})"
        raise SandboxError(
            f"the sandbox did not come up {when}: {run.stderr.strip()[-500:] or 'no output'}"
        )
    crash = next((m for m in run.messages if m.get("event") == "crash"), None)
    if crash is not None:
        raise SandboxError(f"the test runner failed: {str(crash.get('error'))[-1500:]}")
    if not run.hardened:
        # Without PR_SET_DUMPABLE=0 the program could reach the runner's descriptors through
        # /proc: no verdict from such a run can be trusted.
        raise SandboxError("the test runner could not make itself non-dumpable (prctl)")


def normalize_output(text: str) -> str:
    """Output as compared by :func:`run_io_tests`: trailing spaces and blank lines dropped."""
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines()).rstrip()


def run_io_tests(
    sandbox: Sandbox,
    code: str,
    cases: Sequence[tuple[str, str]],
    *,
    limits: Limits | None = None,
) -> SuiteReport:
    """Run a Python program once per ``(stdin, expected stdout)`` case, in a fresh sandbox.

    The parent compares the output itself (:func:`normalize_output` on both sides), so
    nothing the program prints about itself matters. After a case times out the remaining
    ones are not run.
    """
    outcomes: list[TestOutcome] = []
    last: RunResult | None = None
    timed_out = False
    for index, (stdin, expected) in enumerate(cases):
        label = f"stdin {stdin[:60]!r}"
        if timed_out:
            outcomes.append(TestOutcome(index, label, False, "not run: an earlier case timed out"))
            continue
        last = sandbox.run_python(code, stdin=stdin, limits=limits)
        if not last.started:
            raise SandboxError(
                f"the sandbox did not come up (exit code {last.exit_code}): "
                f"{last.stderr.strip()[-500:] or 'no output'}"
            )
        got = normalize_output(last.stdout)
        if last.timed_out:
            timed_out = True
            outcomes.append(TestOutcome(index, label, False, "timed out", timed_out=True))
        elif last.exit_code != 0:
            tail = last.stderr.strip().splitlines()[-1:] or [""]
            outcomes.append(
                TestOutcome(index, label, False, f"exit code {last.exit_code}: {tail[0][:300]}")
            )
        elif got != normalize_output(expected):
            outcomes.append(
                TestOutcome(
                    index, label, False, f"expected {expected[:200]!r}, got {last.stdout[:200]!r}"
                )
            )
        else:
            outcomes.append(TestOutcome(index, label, True))
    if last is None:
        raise ConfigError("an io task needs at least one case")
    passed = sum(o.passed for o in outcomes)
    return SuiteReport(len(outcomes), passed, outcomes, timed_out, True, last)
