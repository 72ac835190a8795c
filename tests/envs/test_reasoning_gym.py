"""The ``rg-<dataset>`` entries: every reasoning-gym generator, from one generic class.

``envhub check``'s in-process checks run over every entry on a few tasks each (all but a
sample marked slow); the HTTP parity check (a server per entry) runs on a sample. Splits are shown disjoint by question text
on every entry; the scorer's exceptions are the model's 0, never a machine fault.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from typer.testing import CliRunner

import envhub
from envhub.authoring.selfcheck import FAILED, run_check
from envhub.cli import app
from envhub.envs.reasoning_gym import catalog, scoring, tasks, worker
from envhub.errors import ConfigError
from envhub.registry.make import apply_overrides
from envhub.types import Status

RG_IDS = [i for i in envhub.catalog().ids() if i.startswith(catalog.PREFIX)]
IN_PROCESS = ("determinism", "bad_inputs", "gold", "gymnasium")
QUICK_SIZE = 3
ALWAYS = {
    f"{catalog.PREFIX}{name}-v1"
    for name in ("basic_arithmetic", "composite", "arc_agi", "aiw", "emoji_mystery", "word_sorting")
}
"""Entries swept on every run; the rest are marked slow (the sweep over all of them takes ~2
min on an idle 2-core machine, 14 min at load 30). Each was once broken: tuple metadata
(arc_agi), enum knobs (aiw, word_sorting), text beyond the BMP (emoji_mystery)."""


def _sweep() -> list:
    return [i if i in ALWAYS else pytest.param(i, marks=pytest.mark.slow) for i in RG_IDS]


def quick(env_id: str, size: int = QUICK_SIZE):
    """The entry's spec with ``size`` tasks per split."""
    spec = envhub.catalog().spec(env_id)
    return apply_overrides(spec, {"dataset": {**spec.dataset.model_dump(), "size": size}})


def test_every_generator_of_the_installed_library_is_an_entry():
    from reasoning_gym.factory import DATASETS

    names = {i.removeprefix(catalog.PREFIX).removesuffix("-v1") for i in RG_IDS}
    assert names == set(DATASETS) - set(catalog.EXCLUDED)
    assert len(RG_IDS) >= 90
    specs = [envhub.catalog().spec(i) for i in RG_IDS]
    assert {s.family for s in specs} == {"reasoning-gym"}
    assert {s.entry_point for s in specs} == {catalog.ENTRY_POINT}


def test_the_snapshot_is_the_installed_library():
    assert json.loads(catalog.SNAPSHOT.read_text()) == catalog.live_generators(), (
        "reasoning-gym changed: `python -m envhub.envs.reasoning_gym.catalog`"
    )


NO_GOLD = set(catalog.EXCLUDED) - set(catalog.WRONG_BUT_FULL) - set(catalog.HASH_DEPENDENT)
DIGESTS = r"""
import hashlib, json, sys
from envhub.envs.reasoning_gym import catalog, tasks
names, size = json.loads(sys.argv[1]), int(sys.argv[2])
knobs = {n: a["knobs"] for n, a in catalog.generators()["datasets"].items()}
knobs.update((e["options"]["generator"], e["dataset"]["options"]) for e in catalog.entries())
out = {}
for name in names:
    size_ = min(size, 5) if name in ("knight_swap", *catalog.SIZES) else size
    got = [t.model_dump(mode="json") for t, _ in tasks.tasks(name, "train", size_, 0, knobs[name])]
    out[name] = hashlib.sha1(json.dumps(got).encode()).hexdigest()
print("\nDIGESTS", json.dumps(out))
"""


def _digests_under_two_hash_seeds(names: list[str], size: int) -> tuple[dict, dict]:
    """Digests of each generator's first ``size`` tasks in two processes (hash seeds 1, 2)."""
    argv = [sys.executable, "-c", DIGESTS, json.dumps(names), str(size)]
    procs = [
        subprocess.Popen(
            argv, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONHASHSEED": h}
        )
        for h in ("1", "2")
    ]
    # after the marker: some generators print as they go
    outs = (p.communicate(timeout=1200)[0] for p in procs)
    first, second = (json.loads(out.rsplit("\nDIGESTS ", 1)[1]) for out in outs)
    return first, second


@pytest.mark.slow
def test_tasks_are_the_same_in_every_process():
    names = [i.removeprefix(catalog.PREFIX).removesuffix("-v1") for i in RG_IDS]
    first, second = _digests_under_two_hash_seeds(names, 20)
    assert [n for n in names if first[n] != second[n]] == []


@pytest.mark.slow
def test_each_hash_dependent_generator_still_depends_on_it():
    first, second = _digests_under_two_hash_seeds(list(catalog.HASH_DEPENDENT), 40)
    same = [n for n in catalog.HASH_DEPENDENT if first[n] == second[n]]
    assert same == [], f"{same} no longer depend on the hash seed in 40 tasks: include them"


@pytest.mark.parametrize("name", sorted(NO_GOLD))
def test_each_excluded_generator_still_lacks_a_gold_answer(name):
    import reasoning_gym

    items = reasoning_gym.create_dataset(name, seed=0, size=3)
    assert all(items[i]["answer"] is None for i in range(3)), f"{name} has golds now: include it"


@pytest.mark.parametrize("name", sorted(catalog.WRONG_BUT_FULL))
def test_each_excluded_scorer_still_gives_full_marks_to_a_wrong_answer(name):
    import reasoning_gym

    items = reasoning_gym.create_dataset(name, seed=0, size=5)
    wrong = catalog.WRONG_BUT_FULL[name]
    for i in range(5):
        assert wrong != items[i]["answer"]
        assert items.score_answer(wrong, items[i]) == 1.0, f"{name}'s scorer is fixed: include it"


@pytest.mark.parametrize("env_id", _sweep())
def test_envhub_check_in_process(env_id):
    spec = quick(env_id)
    for check in IN_PROCESS:
        result = run_check(spec, check)
        assert result.outcome != FAILED, f"{env_id}: {check}: {result.detail}"


@pytest.mark.parametrize("env_id", ["rg-basic_arithmetic-v1", "rg-composite-v1"])
def test_envhub_check_over_http_on_a_sample(env_id):
    result = run_check(quick(env_id), "http")
    assert result.outcome != FAILED, result.detail


def _split_size(env_id: str) -> int:
    return 2 if env_id.removeprefix(catalog.PREFIX).removesuffix("-v1") in catalog.SIZES else 5


@pytest.mark.parametrize("env_id", _sweep())
def test_train_and_test_share_no_question(env_id):
    with envhub.make(
        env_id, dataset=quick(env_id, _split_size(env_id)).dataset.model_dump()
    ) as env:
        train = {t.prompt for t in env.tasks("train")}
        test = {t.prompt for t in env.tasks("test")}
    assert train and test
    assert not train & test
    assert {tasks.split_of(q) for q in train} == {"train"}


def test_a_repeated_question_is_kept_once(monkeypatch):
    items = [{"question": "same", "answer": "1", "metadata": {}}] * 50
    items += [{"question": f"q{i}", "answer": "2", "metadata": {}} for i in range(200)]
    monkeypatch.setattr(tasks, "_items", lambda *a: iter(items))
    got = tasks.tasks("chain_sum", tasks.split_of("same"), 5, 0, {})
    assert [t.prompt for t, _ in got].count("same") == 1


def test_a_scorer_that_raises_is_the_models_zero(monkeypatch):
    env = envhub.make(
        "rg-basic_arithmetic", dataset=quick("rg-basic_arithmetic").dataset.model_dump()
    )

    def explode(answer, entry):
        raise RecursionError(f"cannot read {answer!r}")

    monkeypatch.setattr(worker, "score", worker.judge)  # in this process, to reach the patch
    monkeypatch.setattr(worker, "scorer_for", lambda *a: explode)
    env.reset(seed=0)
    result = env.step("<answer>{{{{</answer>")
    assert result.info.status is Status.OK
    assert result.info.components["correctness"] == 0.0
    assert "RecursionError" in result.info.model_dump()["why"]


def test_real_scorers_that_raise_on_strange_answers_score_zero():
    env = envhub.make(
        "rg-prime_factorization", dataset=quick("rg-prime_factorization").dataset.model_dump()
    )
    env.reset(seed=0)
    result = env.step("<answer>\x00 x * * </answer>")
    assert result.info.status is Status.OK
    assert result.info.components["correctness"] == 0.0


def test_hedges_missing_answers_and_huge_answers_score_zero():
    env = envhub.make("rg-chain_sum", dataset=quick("rg-chain_sum").dataset.model_dump())
    env.reset(seed=0)
    gold = env._episode.task.answer
    cases = {
        f"<answer>{gold}</answer> or <answer>{gold}1</answer>": 0.0,
        f"The answer is {gold}.": 0.0,
        f"<answer>{gold}{' ' * 10}{'9' * scoring.MIN_ANSWER_LIMIT}</answer>": 0.0,
        f"<answer>{gold}</answer> again <answer> {gold} </answer>": 1.0,
        f"<think><answer>no</answer></think><answer>{gold}</answer>": 1.0,
    }
    for text, want in cases.items():
        env.reset(seed=0)
        result = env.step(text)
        assert result.info.status is Status.OK
        assert result.info.components["correctness"] == want, text[:60]


def test_knobs_pass_through_dataset_options():
    options = {"min_terms": 5, "max_terms": 5, "operators": ["+"]}
    with envhub.make("rg-basic_arithmetic", dataset={"size": 4, "options": options}) as env:
        for task in env.tasks():
            assert task.prompt.count("+") >= 4, task.prompt


@pytest.mark.parametrize(
    ("options", "says"),
    [({"min_termz": 2}, "unknown knob 'min_termz'"), ({"seed": 3}, "dataset.seed")],
)
def test_a_bad_knob_says_what_to_do(options, says):
    with pytest.raises(ConfigError, match=says):
        envhub.make("rg-basic_arithmetic", dataset={"size": 2, "options": options}).tasks()


def test_composite_is_a_mix_with_weights():
    mix = [
        {"name": "chain_sum", "weight": 20.0, "config": {}},
        {"name": "leg_counting", "weight": 1.0, "config": {}},
    ]
    with envhub.make("rg-composite", dataset={"size": 40, "options": {"datasets": mix}}) as env:
        sources = [t.metadata["rg"]["source_dataset"] for t in env.tasks()]
    assert set(sources) <= {"chain_sum", "leg_counting"}
    assert sources.count("chain_sum") > 3 * sources.count("leg_counting")
    bad = [{"name": "chain_sum", "weight": 0, "config": {}}]
    with pytest.raises(ConfigError, match="weight"):
        envhub.make("rg-composite", dataset={"size": 2, "options": {"datasets": bad}}).tasks()


def test_info_lists_the_knobs():
    res = CliRunner().invoke(app, ["info", "rg-basic_arithmetic"])
    assert res.exit_code == 0, res.output
    knobs = json.loads(res.output)["dataset"]["options"]
    assert {"min_terms", "max_terms", "operators"} <= set(knobs)


def test_list_by_family():
    res = CliRunner().invoke(app, ["list", "--family", "reasoning-gym"])
    lines = res.output.splitlines()
    assert len(lines) >= 90
    assert all(line.startswith(catalog.PREFIX) and " reasoning-gym " in line for line in lines)


def test_listing_imports_no_generator():
    code = (
        "import sys, envhub; envhub.catalog().spec('rg-chain_sum');"
        "print('reasoning_gym' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_family_table_is_generated_from_the_cards():
    from envhub.authoring.cards import README_BEGIN, README_END, table

    text = (catalog.SNAPSHOT.parent / "README.md").read_text()
    between = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip()
    specs = [envhub.catalog().spec(i) for i in RG_IDS]
    assert between == table(specs, summarise=()), (
        "run `envhub cards --family reasoning-gym --readme envhub/envs/reasoning_gym/README.md`"
    )
