"""Environment cards: what ``envhub info`` shows, and reference scores re-measured on demand."""

import json
from pathlib import Path

import pytest
from repo_scripts import load_script
from typer.testing import CliRunner

from envhub.authoring import cards
from envhub.authoring.cards import (
    README_BEGIN,
    README_END,
    SUMMARISED,
    card,
    cards_dir,
    measure,
    needs_data,
    reference_scores,
    render,
    table,
    write_readme,
)
from envhub.authoring.register import register
from envhub.cli import app
from envhub.errors import EnvhubError
from envhub.registry.catalog import BUILTIN_REGISTRY, Registry, spec


def test_card_fields_and_measured_scores(dummy_registry):
    s = spec("echo")
    (cards_dir() / f"{s.id}.json").unlink(missing_ok=True)
    c = card(s)
    assert c["turns"] == 1 and {"correctness", "format"} <= set(c["components"])
    assert c["data"]["offline"] and c["scores"] is None
    scores = measure(s, episodes=16)
    # gold answers solve every task; another task's answer solves one whenever it repeats
    assert scores["gold"]["solved"] == 1.0 and scores["gold"]["episodes"] == 16
    assert scores["random"]["solved"] < 0.5
    assert card(s)["scores"]["gold"] == scores["gold"]


def test_info_shows_the_card(dummy_registry):
    run = CliRunner().invoke(app, ["info", "count", "--measure", "--text"])
    assert run.exit_code == 0, run.output
    assert "turns       6" in run.output
    assert "gold        mean reward" in run.output and "offline" in run.output
    data = json.loads(CliRunner().invoke(app, ["info", "gsm8k"]).output)
    assert data["card"]["extras"] == ["math"] and data["reward"]["weights"]["correctness"] == 1.0


README = Path(__file__).resolve().parents[1] / "docs" / "environments" / "index.md"


def _catalog() -> list:
    reg = Registry.load([BUILTIN_REGISTRY])
    return [reg.spec(n) for n in reg.names()]


"""Offline envs whose SmolLM2 row must be stored (multi-turn rows: see the README's table)."""


def test_stored_cards_cover_the_catalog():
    """envhub/authoring/cards.json holds measured scores for every offline env, 'needs data' for others."""
    stored = reference_scores()
    for s in _catalog():
        entry = stored[s.id]
        if needs_data(s):
            assert entry == {"needs_data": True}, s.id
            continue
        assert entry["gold"]["solved"] == 1.0 and entry["gold"]["episodes"] >= 20, s.id
        assert entry["random"]["solved"] < 1.0, s.id
        assert entry["envhub_commit"] and entry["measured"], s.id
        if s.family in SUMMARISED and "smollm2" not in entry:
            continue  # ~100 generated entries: the model runs on a sample of them (below)
        model = entry["smollm2"]  # every offline environment, multi-turn ones included
        assert model["command"].startswith("envhub eval --model smollm2 --engine "), s.id
        assert f"--env {s.id}" in model["command"] and model["tasks"] >= 1, s.id
        assert 0.0 <= model["pass@1"] <= model[f"pass@{model['k']}"] <= 1.0, s.id
        assert model["scored"] == model["tasks"] * model["k"], s.id  # no machinery failures


def test_the_model_ran_on_a_sample_of_each_generated_family():
    stored = reference_scores()
    for family in SUMMARISED:
        members = [s for s in _catalog() if s.family == family]
        sampled = [s.id for s in members if "smollm2" in stored[s.id]]
        assert members and sampled, f"{family}: `envhub cards --measure` a few of its entries"


def test_readme_table_is_generated_from_the_cards():
    """The docs' environments table is `envhub cards` output: edit cards.json, not it."""
    text = README.read_text()
    assert README_BEGIN in text, "docs/environments/index.md lost the cards markers"
    between = text.split(README_BEGIN, 1)[1].split(README_END, 1)[0].strip()
    assert between == table(_catalog()), "run `envhub cards --readme docs/environments/index.md`"


def test_a_family_measured_with_several_k_averages_each_k_apart():
    """pass@2 and pass@4 are not one number: the family row gives a mean per k."""

    def entry(p1, pk, k):
        model = {"pass@1": p1, f"pass@{k}": pk, "k": k, "tasks": 20}
        return {"gold": {"solved": 1.0}, "random": {"solved": 0.1}, "smollm2": model}

    got = cards._family_cells(
        [entry(0.5, 1.0, 4), entry(0.2, 0.4, 2), entry(0.0, 0.0, 2)], "smollm2"
    )
    assert got[2] == "0.10 / 0.20 (k=2, mean of 2 entries); 0.50 / 1.00 (k=4, mean of 1 entries)"


def test_needs_data_envs_say_so(dummy_registry):
    c = card(spec("mbpp"))
    assert c["scores"] == {"needs_data": True} and not c["data"]["offline"]
    assert "needs data" in render(c)
    row = next(r for r in table([spec("mbpp")]).splitlines() if r.startswith("| `mbpp`"))
    assert "*needs data*" in row


def test_measure_cards_script_measures_with_envhub_eval(tmp_path, monkeypatch):
    """scripts/measure_cards.py writes gold, random and the model's pass@k through `envhub eval`."""
    import envhub.registry.catalog as reg

    measure_cards = load_script("measure_cards.py")
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))  # `envhub eval` runs as a command
    monkeypatch.setattr(reg, "_registry", None)  # restored after the test
    register(Path(__file__).parent / "support" / "dummy.yaml", link=True)
    store = tmp_path / "cards.json"
    monkeypatch.setattr(cards, "REFERENCE", store)
    run = measure_cards.ModelRun(model="tiny", tasks=2, multi_turn_tasks=1, k=2, max_tokens=4)
    got = measure_cards.measure_all([spec("echo")], episodes=4, run=run, echo=lambda _: None)
    entry = got["echo-v1"]
    assert json.loads(store.read_text())["environments"]["echo-v1"] == entry
    assert entry["gold"]["solved"] == 1.0 and entry["gold"]["episodes"] == 4
    tiny = entry["tiny"]  # a random tiny model: it solves nothing, and says how it was run
    assert tiny["pass@1"] == 0.0 and tiny["pass@2"] == 0.0 and tiny["tasks"] == 2
    assert tiny["command"] == (
        "envhub eval --model tiny --engine transformers --env echo-v1 --limit 2 -n 2 "
        "--max-tokens 4 --concurrency 4"
    )
    assert "tiny        pass@1 0.0, pass@2 0.0" in render(card(spec("echo")))


def test_a_re_measure_without_the_model_keeps_its_row_and_its_date(tmp_path, monkeypatch):
    """`--model none` re-measures gold and random; the stored model row stays, dated as it was."""
    measure_cards = load_script("measure_cards.py")
    store = tmp_path / "cards.json"
    monkeypatch.setattr(cards, "REFERENCE", store)
    monkeypatch.setattr(measure_cards, "envhub_commit", lambda: "new1234")
    model = {"pass@1": 0.25, "pass@4": 0.5, "mean_reward": 0.3, "tasks": 20, "k": 4,
             "split": "train", "command": "envhub eval --model smollm2 ..."}  # fmt: skip
    old = {"gold": {"mean_reward": 0.0, "solved": 0.0, "episodes": 1},
           "random": {"mean_reward": 0.0, "solved": 0.0, "episodes": 1}, "smollm2": model,
           "measured": "2026-01-01 00:00 UTC", "envhub_commit": "old5678", "seed": 0}  # fmt: skip
    other = {**old, "measured": "2026-02-02 00:00 UTC"}
    store.write_text(json.dumps({"environments": {"echo-v1": old, "other-v1": other}}))
    reg = Registry.load([BUILTIN_REGISTRY, Path(__file__).parent / "support" / "dummy.yaml"])

    measure_cards.measure_all([reg.spec("echo")], episodes=4, run=None, echo=lambda _: None)

    got = json.loads(store.read_text())["environments"]
    entry = got["echo-v1"]
    assert entry["gold"] == {"mean_reward": entry["gold"]["mean_reward"], "solved": 1.0,
                             "episodes": 4}  # fmt: skip
    assert entry["envhub_commit"] == "new1234" and entry["measured"] != old["measured"]
    assert entry["smollm2"] == {**model, "measured": old["measured"], "envhub_commit": "old5678"}
    assert got["other-v1"] == other  # entries not measured are untouched
    # a second re-measure keeps the row's own date, not the entry's of the first re-measure
    measure_cards.measure_all([reg.spec("echo")], episodes=4, run=None, echo=lambda _: None)
    again = json.loads(store.read_text())["environments"]["echo-v1"]
    assert again["smollm2"] == entry["smollm2"]
    # readers: the card shows the model row with its own date, the table its pass@k
    monkeypatch.setattr(cards, "scores_of", lambda s: again)
    text = render(card(reg.spec("echo")))
    assert "smollm2     pass@1 0.25, pass@4 0.5" in text and old["measured"] in text
    assert "0.25 / 0.50 (k=4, 20 tasks)" in table([reg.spec("echo")])


def test_write_readme_replaces_only_the_table(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{README_BEGIN}\nold\n{README_END}\nrest\n")
    assert write_readme(readme, "| new |")
    assert readme.read_text() == f"intro\n{README_BEGIN}\n| new |\n{README_END}\nrest\n"
    assert not write_readme(readme, "| new |")
    readme.write_text("no markers")
    with pytest.raises(EnvhubError, match="lacks the lines"):
        write_readme(readme, "| new |")
