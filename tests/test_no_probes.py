"""Callers use the :class:`envhub.core.Env` contract; they never probe an env for what it has.

Every attribute a caller may rely on (``primary_component``, ``tools()``, ``get_task``,
``opening_messages``, ``fork``, ``spec``) is on ``Env`` with an honest default, so a
``getattr(env, ...)``/``hasattr(env, ...)`` in the parts that drive environments is a sign
that the contract is thinner than its callers again.
"""

import re
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "envhub"
CALLERS = ["evaluate", "server", "trainer", "cli.py"]
PROBE = re.compile(r"\b(?:getattr|hasattr)\(\s*[\w.]*(?:env|episodes\.env|probe)\b\s*,")


def test_no_env_probes_in_the_callers():
    found = []
    for part in CALLERS:
        files = [PKG / part] if part.endswith(".py") else sorted((PKG / part).rglob("*.py"))
        for path in files:
            for n, line in enumerate(path.read_text().splitlines(), 1):
                if PROBE.search(line):
                    found.append(f"{path.relative_to(PKG.parent)}:{n}: {line.strip()}")
    assert not found, "probes of an Env (use the contract instead):\n" + "\n".join(found)


def test_the_pattern_finds_a_probe():
    assert PROBE.search('name = getattr(env, "primary_component", None)')
    assert PROBE.search('if hasattr(episodes.env, "tools")')
    assert not PROBE.search('getattr(self.engine, "close", None)')
