"""No function over 60 lines in the packages (issue 13, point 5): a reader holds it in mind.

Every function and method of ``envhub/``, ``envhub/envs/``, ``envhub/server/``, ``envhub/trainer/`` and
``scripts/`` is measured with ``ast`` (``end_lineno - lineno + 1``, decorators excluded,
docstring included). ``tests/`` and ``bench/`` are not measured.
"""

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("envhub", "scripts")
MAX_LINES = 60

ALLOWED: set[str] = set()
"""Functions allowed over the limit, each with its reason (none today)."""
"""Functions still over the limit, each with its reason. The test fails when an entry is no
longer over it, so the list cannot go stale."""


def _functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, lines) of every function under ``tree``, methods as ``Class.name``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield f"{prefix}{node.name}", node.end_lineno - node.lineno + 1
            yield from _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, f"{prefix}{node.name}.")
        else:
            yield from _functions(node, prefix)


def measure() -> dict[str, int]:
    """``path:qualname`` -> lines, for every function of the packages."""
    out = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            rel = path.relative_to(REPO).as_posix()
            for name, lines in _functions(ast.parse(path.read_text(), filename=rel)):
                out[f"{rel}:{name}"] = lines
    return out


def test_no_function_is_over_60_lines():
    sizes = measure()
    assert len(sizes) > 500, "the scan found too few functions: is REPO right?"
    long = {name: n for name, n in sizes.items() if n > MAX_LINES and name not in ALLOWED}
    assert not long, (
        f"functions over {MAX_LINES} lines (split them into named steps, or a table of small "
        "functions):\n" + "\n".join(f"  {name}: {n} lines" for name, n in sorted(long.items()))
    )


def test_the_allow_list_is_not_stale():
    sizes = measure()
    stale = sorted(name for name in ALLOWED if sizes.get(name, 0) <= MAX_LINES)
    assert not stale, (
        "allow-listed functions no longer over the limit (or gone): remove them from "
        f"ALLOWED in {Path(__file__).name}: {stale}"
    )


def test_the_measure_sees_nested_functions_and_methods():
    tree = ast.parse(
        "class A:\n    def m(self):\n        def inner():\n            pass\n"
        "async def f():\n    return 1\n"
    )
    assert dict(_functions(tree)) == {"A.m": 3, "A.m.inner": 2, "f": 2}
