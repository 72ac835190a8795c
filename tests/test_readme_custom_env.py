"""The docs' custom environment in code (docs/authoring.md) works as written: register, list, play, verify, check.

The two files are taken from docs/authoring.md verbatim. Their folder goes on ``sys.path`` here (as for
an installed module); resolving ``sums_env`` from the YAML's own folder is the registry's job.
"""

import re
from pathlib import Path

import pytest

import envhub
from envhub.authoring.checker import check_env

README = Path(__file__).resolve().parents[1] / "docs" / "authoring.md"


def _block(first_line: str) -> str:
    blocks = re.findall(r"```(?:python|yaml)\n(.*?)```", README.read_text(), flags=re.S)
    found = [b for b in blocks if b.startswith(first_line + "\n")]
    assert len(found) == 1, f"docs/authoring.md has no single block starting with {first_line!r}"
    return found[0]


@pytest.fixture
def sums(tmp_path, monkeypatch):
    (tmp_path / "sums_env.py").write_text(_block("# sums_env.py"))
    (tmp_path / "sums.yaml").write_text(_block("# sums.yaml"))
    monkeypatch.syspath_prepend(str(tmp_path))
    envhub.reset_registry()
    envhub.register(tmp_path / "sums.yaml")
    yield "sums"
    for p in envhub.registry.catalog.user_registry_dir().glob("*.yaml"):
        p.unlink()
    envhub.reset_registry()


def test_the_readme_environment_registers_plays_and_verifies(sums):
    assert "sums" in envhub.catalog().names()
    with envhub.make(sums) as env:
        first = env.reset(seed=0)
        task = env.get_task(first.info.task_id)
        assert first.messages[-1].content == task.prompt
        result = env.step(f"ANSWER: {task.answer}")
        assert result.reward == 1.0 and result.terminated and result.info.status == "ok"
        hedge = env.verify(task.task_id, f"ANSWER: {task.answer} or {int(task.answer) + 1}")
        assert hedge.reward == 0.0
        assert env.tasks("train")[0].task_id == "train/0"
        assert {t.prompt for t in env.tasks("train")} != {t.prompt for t in env.tasks("test")}
    check_env(envhub.make(sums))
