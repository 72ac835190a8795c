"""Environment cards: what ``envhub info`` shows, and reference scores re-measured on demand."""

import json

from typer.testing import CliRunner

from envhub.cards import card, cards_dir, measure
from envhub.cli import app
from envhub.registry import spec


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
