"""The README is short and its two set-up blocks stand alone; the docs site's hooks
(``scripts/mkdocs_hooks.py``) turn links into the source tree into paths and keep the rest
(issue 35, point 1). ``mkdocs build --strict`` itself runs in ``.ci/run``.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_is_short_and_each_setup_block_has_its_venv_step():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 200
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    serve = next(b for b in blocks if "envhub serve gsm8k" in b and "pip install" in b)
    tests = next(b for b in blocks if ".ci/run" in b)
    for block in (serve, tests):
        assert block.startswith("python3 -m venv .venv && . .venv/bin/activate\n"), block
    assert serve != tests


@pytest.fixture
def hooks(monkeypatch):
    pytest.importorskip("mkdocs")
    monkeypatch.syspath_prepend(str(REPO / "scripts"))
    import mkdocs_hooks

    yield mkdocs_hooks
    sys.modules.pop("mkdocs_hooks", None)


def _page(hooks, uri: str, markdown: str) -> str:
    page = SimpleNamespace(file=SimpleNamespace(src_uri=uri))
    return hooks.on_page_markdown(markdown, page, {"docs_dir": str(REPO / "docs")}, None)


def test_links_into_the_source_tree_become_paths_and_the_rest_stay(hooks):
    text = (
        "See [`envhub/core.py`](../envhub/core.py), [the sandbox](../envhub/sandbox/README.md),\n"
        "[Data](environments/index.md#data), [gone](../envhub/nowhere.py), "
        "[web](https://example.org) and `[code](../envhub/core.py)`.\n"
        "```\n[fenced](../envhub/core.py)\n```\n"
    )
    out = _page(hooks, "contract.md", text)
    assert "See `envhub/core.py`, the sandbox (`envhub/sandbox/README.md`)," in out
    assert "[Data](environments/index.md#data)" in out
    assert "[gone](../envhub/nowhere.py)" in out  # left for the strict build to refuse
    assert "[web](https://example.org)" in out and "`[code](../envhub/core.py)`" in out
    assert "[fenced](../envhub/core.py)" in out


def test_an_included_readme_links_from_where_it_lives(hooks):
    hooks._sources["training/trainer.md"] = REPO / "envhub/trainer/README.md"
    hooks._sources["interop/details.md"] = REPO / "envhub/interop/README.md"
    out = _page(hooks, "training/trainer.md", "[i](../interop/README.md) [e](../engines/README.md)")
    assert out == "[i](../interop/details.md) e (`envhub/engines/README.md`)"
