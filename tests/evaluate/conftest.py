"""Fixtures of the evaluation tests."""

import pytest
from eval_fakes import register_fakes

import envhub


@pytest.fixture()
def home(tmp_path, monkeypatch):
    """A private ENVHUB_HOME with the fake environments registered; yields its path."""
    monkeypatch.setenv("ENVHUB_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    register_fakes(tmp_path / "home")
    yield tmp_path / "home"
    envhub.reset_registry()
