"""The difficulty knobs' declaration (envhub.spec.Knob) and their listing in `envhub info`."""

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from envhub.cli import app
from envhub.envs.sql.env import SqlEnv
from envhub.errors import ConfigError
from envhub.registry.catalog import spec
from envhub.spec import EnvSpec, Knob, check_dataset_knobs

DEPTH = Knob("depth", "options", "Plies searched.", 2, "int", "higher", low=0, high=8)
RATE = Knob("rate", "options", "A probability.", 0.1, "float", "lower", low=0.0, high=1.0)
KINDS = Knob("kinds", "dataset.options", "Kinds.", ["a"], "choices", "none", choices=("a", "b"))


@pytest.mark.parametrize("value", [0, 8, 3])
def test_values_in_range_pass(value):
    assert DEPTH.check("env", value) == value


@pytest.mark.parametrize("value", [-1, 9, 2.5, True, "2", None])
def test_values_out_of_range_or_of_another_type_are_refused(value):
    with pytest.raises(ConfigError) as err:
        DEPTH.check("env", value)
    assert str(err.value) == (
        f"env: options.depth = {value!r} is not allowed; it takes an integer from 0 to 8 "
        "(default 2)"
    )


def test_floats_take_integers_and_choices_take_lists_of_them():
    assert RATE.check("env", 1) == 1
    with pytest.raises(ConfigError, match=r"rate = 1.5 .* a number from 0 to 1"):
        RATE.check("env", 1.5)
    assert KINDS.check("env", ["b", "a"]) == ["b", "a"]
    for bad in (["c"], [], "a"):
        with pytest.raises(ConfigError, match=r"a non-empty list, each item one of \['a', 'b'\]"):
            KINDS.check("env", bad)


def test_dataset_options_must_be_knobs():
    entry = EnvSpec(name="e", dataset={"options": {"kind": ["a"]}})
    with pytest.raises(ConfigError, match=r"unknown dataset.options.kind; .*\['kinds'\]"):
        check_dataset_knobs(entry, (KINDS, DEPTH))
    check_dataset_knobs(EnvSpec(name="e", dataset={"options": {"kinds": ["b"]}}), (KINDS,))


def test_an_environment_without_knobs_says_so():
    assert SqlEnv.difficulty_knobs(spec("sql")) == () and SqlEnv.task_difficulty == ""
    card = json.loads(CliRunner().invoke(app, ["info", "sql"]).output)["card"]
    assert card["difficulty"]["knobs"] == []
    assert card["difficulty"]["per_task"].startswith("none")


def test_info_lists_the_knobs_with_the_entrys_settings():
    card = json.loads(CliRunner().invoke(app, ["info", "wordle"]).output)["card"]
    knobs = {k["name"]: k for k in card["difficulty"]["knobs"]}
    assert set(knobs) == {"answers", "hints", "max_guesses"}
    assert knobs["hints"] == {
        "name": "hints",
        "place": "options",
        "about": knobs["hints"]["about"],
        "default": 0,
        "kind": "int",
        "harder": "lower",
        "low": 0,
        "high": 4,
        "value": 0,
    }
    assert "rarity" in card["difficulty"]["per_task"]
    text = CliRunner().invoke(app, ["info", "sokoban", "--text"]).output
    assert "difficulty  per task: the length of the level's shortest solution" in text
    assert "  dataset.options.min_moves = 8 (int, low 1, high 60; harder: higher)" in text


def test_info_lists_reasoning_gyms_knobs_without_importing_it():
    code = (
        "import sys, json; from envhub.authoring.cli import card_of; "
        "from envhub.registry.catalog import spec; "
        "d = card_of(spec('rg-basic_arithmetic'))['difficulty']; "
        "print(json.dumps([[k['name'], k['value'], k['harder']] for k in d['knobs']]), "
        "'reasoning_gym' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    knobs, imported = out.stdout.rsplit(" ", 1)
    listed = {name: (value, harder) for name, value, harder in json.loads(knobs)}
    assert imported.strip() == "False"
    assert listed["max_digits"] == (
        4,
        "higher (reasoning-gym's curriculum levels, easiest first: [1, 2, 3, 4])",
    )
    assert listed["operators"][1].startswith("not declared by reasoning-gym")


def test_reasoning_gym_refuses_unknown_knobs_naming_them():
    entry = spec("rg-basic_arithmetic").model_copy(deep=True)
    entry.dataset.options["max_digit"] = 3
    from envhub.envs.reasoning_gym.env import ReasoningGymEnv

    env = ReasoningGymEnv(entry, generator="basic_arithmetic")
    with pytest.raises(ConfigError, match=r"unknown knob 'max_digit'.*'max_digits'"):
        env.tasks()


def test_listing_imports_no_environment_module():
    code = (
        "import sys; from envhub.cli import app; from typer.testing import CliRunner; "
        "CliRunner().invoke(app, ['list']); "
        "print(sorted(m for m in sys.modules if m.startswith('envhub.envs.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    # the rg- entries' catalog (its snapshot) only: no environment class, no generator
    assert (
        out.stdout.strip() == "['envhub.envs.reasoning_gym', 'envhub.envs.reasoning_gym.catalog']"
    )
