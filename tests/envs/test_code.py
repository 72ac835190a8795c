"""The code environments: HumanEval offline, user task formats, statuses, rewards."""

import json
import random
import re
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
from bwrap import needs_bwrap

import envhub
from envhub.core import Episode
from envhub.envs.code.env import CodeEnv
from envhub.envs.code.extract import build_program, extract_code
from envhub.envs.code.tasks import load_humaneval, row_to_code_task
from envhub.errors import ConfigError, DependencyMissing
from envhub.install import install_command
from envhub.spec import EnvSpec
from envhub.types import Status, Task


@pytest.fixture(scope="module")
def env():
    e = envhub.make("humaneval")
    yield e
    e.close()


def gold(env, task):
    episode = Episode(task=task, seed=0, rng=random.Random(0), messages=[])
    return env.reference_action(episode)


# --------------------------------------------------------------------------- data


def test_humaneval_has_164_tasks_offline():
    tasks = load_humaneval()
    assert [t.task_id for t in tasks] == [f"HumanEval/{i}" for i in range(164)]
    first = tasks[0]
    assert first.metadata["entry_point"] == "has_close_elements"
    assert "def check(candidate)" in first.metadata["check"]
    assert first.answer.startswith(first.prompt)


def test_humaneval_only_has_a_test_split(env):
    with pytest.raises(ConfigError, match="only a 'test' split"):
        env.tasks("train")


def test_prompt_shows_the_signature(env):
    reset = env.reset(task_id="HumanEval/2")
    text = reset.messages[-1].content
    assert "def truncate_number(number: float) -> float:" in text and "```python" in text


def test_extract_code_takes_the_last_python_block():
    text = "Plan:\n```python\nx = 1\n```\nand\n```bash\nls\n```\n```py\ny = 2\n```\nDone."
    assert extract_code(text) == ("y = 2\n", True)
    assert extract_code("def f():\n    return 1") == ("def f():\n    return 1", False)
    assert extract_code("```python\ndef f():\n    return 1")[0] == "def f():\n    return 1"


def test_build_program_handles_full_functions_and_bodies():
    prefix = 'def f(x):\n    """Double."""\n'
    assert build_program("    return 2 * x\n", prefix, "f") == prefix + "    return 2 * x\n"
    full = build_program("def f(x):\n    return 2 * x\n", prefix, "f")
    assert full.startswith(prefix) and full.endswith("def f(x):\n    return 2 * x\n")
    bare = build_program("def f(x):\n    return 2 * x\n", "def f(x):\n", "f")
    compile(bare, "bare", "exec")


# --------------------------------------------------------------------------- verification


@needs_bwrap
def test_gold_wrong_partial_and_crashing_answers(env):
    task = env.get_task("HumanEval/0")
    score = env.verify(task, gold(env, task))
    assert score.status is Status.OK and score.components["correctness"] == 1.0
    assert score.reward == pytest.approx(1.5) and score.info["passed"] == score.info["total"]
    partial = "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"
    score = env.verify(task, partial)
    assert score.status is Status.OK and score.components["correctness"] == 0.0
    assert 0 < score.components["pass_fraction"] < 1
    assert score.reward == pytest.approx(0.5 * score.components["pass_fraction"])
    assert score.info["failures"][0]["test"].startswith("assert candidate(")
    crash = env.verify(task, "```python\nimport os\nos._exit(0)\n```")
    assert crash.status is Status.OK and crash.reward == 0.0


@needs_bwrap
def test_completion_style_answers_work(env):
    task = env.get_task("HumanEval/2")
    assert env.verify(task, "    return number % 1.0\n").components["correctness"] == 1.0


@needs_bwrap
def test_a_hanging_program_is_a_timeout_not_a_zero():
    spec = envhub.spec("humaneval").model_copy(update={"options": {"test_timeout_s": 1}})
    with CodeEnv(spec, **spec.options) as env:
        score = env.verify("HumanEval/2", "def truncate_number(n):\n    while True: pass\n")
    assert score.status is Status.TIMEOUT and "deadline" in score.error


def test_no_sandbox_is_an_infra_error(monkeypatch):
    monkeypatch.setattr(shutil, "which", lambda *a, **k: None)
    monkeypatch.delenv("ENVHUB_SANDBOX", raising=False)
    with envhub.make("humaneval") as env:
        task = env.get_task("HumanEval/0")
        score = env.verify(task, gold(env, task))
        assert score.status is Status.INFRA_ERROR and "bubblewrap" in score.error
        env.reset(task_id="HumanEval/0")
        step = env.step(gold(env, task))
        assert step.info.status is Status.INFRA_ERROR


@needs_bwrap
def test_gold_passes_on_a_sample(env):
    tasks = env.tasks()
    sample = [tasks[i] for i in range(0, 164, 16)]
    scores = [env.verify(t, gold(env, t)) for t in sample]
    assert all(s.components["correctness"] == 1.0 for s in scores), scores


@needs_bwrap
def test_verify_batch_runs_in_parallel_and_keeps_order(env):
    tasks = env.tasks()[:6]
    items = [(t, gold(env, t) if i % 2 == 0 else "def nope(): pass") for i, t in enumerate(tasks)]
    scores = env.verify_batch(items)
    assert [s.components["correctness"] for s in scores] == [1.0, 0.0] * 3


@pytest.mark.slow
@needs_bwrap
def test_gold_passes_all_164(env):
    tasks = env.tasks()
    with ThreadPoolExecutor(4) as pool:
        scores = list(pool.map(lambda t: env.verify(t, gold(env, t)), tasks))
    pairs = zip(tasks, scores, strict=True)
    failed = [(t.task_id, s) for t, s in pairs if s.components.get("correctness") != 1]
    assert not failed


# --------------------------------------------------------------------------- multi-turn


@needs_bwrap
def test_multiturn_shows_the_failing_test_then_accepts_a_fix():
    with envhub.make("humaneval-multiturn") as env:
        env.reset(task_id="HumanEval/2")
        first = env.step("```python\ndef truncate_number(number):\n    return 0.0\n```")
        assert not first.done and first.reward == 0.0 and first.info.status is Status.OK
        feedback = first.messages[0].content
        assert first.messages[0].role == "user"
        # HumanEval/2 has 3 tests: the 2nd is shown, the 1st and 3rd grade (held)
        assert "passed 0 of the 1 tests shown" in feedback
        assert "assert abs(candidate(1.33) - 0.33) < 1e-6" in feedback
        assert "3.5" not in feedback and "123.456" not in feedback
        second = env.step("```python\ndef truncate_number(number):\n    return number % 1.0\n```")
        assert second.terminated and second.info.components["correctness"] == 1.0
        assert second.reward == pytest.approx(1.5)


@needs_bwrap
def test_multiturn_out_of_turns_pays_the_last_attempt():
    with envhub.make("humaneval-multiturn") as env:
        env.reset(task_id="HumanEval/2")
        wrong = "```python\ndef truncate_number(number):\n    return 0.5\n```"
        results = [env.step(wrong) for _ in range(3)]
        assert [r.done for r in results] == [False, False, True]
        last = results[-1]
        assert last.truncated and not last.messages
        # a truncation pays every component at its worst; the held grade is reported
        assert last.info.components == {"correctness": 0.0, "pass_fraction": 0.0, "format": 0.0}
        assert last.reward == 0.0
        # 0.5 passes the held 3.5 -> 0.5 test, fails 123.456 -> 0.456
        assert last.info.measured["pass_fraction"] == 0.5


# --------------------------------------------------------------------------- user tasks


USER_ROWS = [
    {
        "task_id": "mine/add",
        "prompt": "Write add(a, b).",
        "tests": ["assert add(1, 2) == 3", "assert add(-1, 1) == 0"],
        "solution": "def add(a, b):\n    return a + b\n",
        "difficulty": "easy",
    },
    {
        "task_id": "mine/sq",
        "prompt": "Write sq(x).",
        "entry_point": "sq",
        "check": "def check(c):\n    assert c(3) == 9\n    assert c(0) == 0",
        "solution": "def sq(x):\n    return x * x\n",
    },
    {
        "task_id": "mine/echo-sum",
        "prompt": "Read two integers and print their sum.",
        "io_tests": [{"input": "1 2\n", "output": "3\n"}, {"input": "5 5\n", "output": "10"}],
        "solution": "a, b = map(int, input().split())\nprint(a + b)\n",
    },
]


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def user_env(tmp_path, rows, **extra):
    data = _jsonl(tmp_path / "tasks.jsonl", rows)
    spec = EnvSpec(
        name="my-code",
        entry_point="envhub.envs.code.env:CodeEnv",
        dataset={"kind": "jsonl", "path": str(data)},
        reward={"weights": {"correctness": 1.0, "pass_fraction": 0.5}},
        **extra,
    )
    return CodeEnv(spec, **spec.options)


def test_user_rows_normalise():
    add, sq, io = (row_to_code_task(r, i, "train") for i, r in enumerate(USER_ROWS))
    assert add.metadata["entry_point"] == "add" and add.metadata["difficulty"] == "easy"
    assert sq.metadata["check"].startswith("def check") and io.metadata["kind"] == "io"
    with pytest.raises(ConfigError, match="not a code task"):
        row_to_code_task({"prompt": "x"}, 0, "train")
    with pytest.raises(ConfigError, match="needs 'entry_point'"):
        row_to_code_task({"prompt": "x", "check": "def check(c): assert c(1)"}, 0, "train")


@needs_bwrap
def test_user_jsonl_tasks_verify(tmp_path):
    with user_env(tmp_path, USER_ROWS) as env:
        for task in env.tasks():
            assert env.verify(task, gold(env, task)).components["correctness"] == 1.0
        io_wrong = env.verify("mine/echo-sum", "print('all passed')")
        assert io_wrong.components["correctness"] == 0.0 and io_wrong.status is Status.OK


@needs_bwrap
def test_user_io_task_that_hangs_is_a_timeout(tmp_path):
    with user_env(tmp_path, USER_ROWS[2:], options={"test_timeout_s": 1}) as env:
        score = env.verify("mine/echo-sum", "```python\nwhile True:\n    pass\n```")
    assert score.status is Status.TIMEOUT


@needs_bwrap
def test_mbpp_rows_from_a_local_jsonl(tmp_path):
    row = {
        "task_id": 2,
        "text": "Write a function to find the shared elements from the given two lists.",
        "code": "def similar_elements(a, b):\n    return tuple(set(a) & set(b))",
        "test_list": [
            "assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))",
            "assert set(similar_elements((1, 2, 3, 4),(5, 4, 3, 7))) == set((3, 4))",
        ],
        "test_setup_code": "",
        "challenge_test_list": [],
    }
    with user_env(tmp_path, [row], prompt_template="{prompt}\n{tests_text}") as env:
        task = env.get_task("Mbpp/2")
        assert task.metadata["entry_point"] == "similar_elements"
        assert "similar_elements((3, 4, 5, 6)" in env.reset(task_id="Mbpp/2").messages[-1].content
        assert env.verify(task, gold(env, task)).components["correctness"] == 1.0


def test_mbpp_from_the_hub_fails_clearly_offline():
    with envhub.make("mbpp") as env:
        # Without `datasets`: the extra to install; with it but offline: the local-file fix.
        hint = re.escape(install_command(["data"]))
        with pytest.raises((ConfigError, DependencyMissing), match=rf"{hint}|local jsonl"):
            env.tasks()


def test_verify_by_gold_is_refused_with_the_fix(env):
    from envhub.errors import NotSupported

    with pytest.raises(NotSupported, match="--task-id"):
        env.task_from_gold("def f(): pass")


def test_unknown_sandbox_option_is_a_config_error():
    spec = envhub.spec("humaneval")
    with pytest.raises(ConfigError, match="auto, bwrap or rlimit"):
        CodeEnv(spec, sandbox="none")


def test_task_metadata_is_json_safe():
    task = load_humaneval(3)[2]
    assert Task.model_validate_json(task.model_dump_json()) == task


@needs_bwrap
def test_forks_share_one_sandbox_and_closing_one_breaks_nothing():
    with envhub.make("humaneval") as env:
        env.warmup()
        a, b = env.fork(), env.fork()
        assert a.sandbox is b.sandbox is env.sandbox
        a.close()
        task = env.get_task("HumanEval/2")
        assert b.verify(task, gold(b, task)).components["correctness"] == 1.0
        assert env.verify(task, gold(env, task)).components["correctness"] == 1.0
