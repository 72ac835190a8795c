"""The template type of the built-in task set.

Each template is a question and its gold query with ``{placeholders}``; ``params`` is a query
on the same database whose rows (named by their columns) fill them, so every instance asks
about values that exist. Values enter the gold SQL as quoted literals and the question as
plain text. Templates whose gold orders its result name the ``sort_key`` columns of the
result; instances whose sort key ties are dropped when tasks are built, so the expected order
is never ambiguous. Top-N questions take the count from a parameter named ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Template:
    """A question with its gold query, instantiated with values from the database."""

    db_id: str
    key: str
    question: str
    sql: str
    params: str | None = None
    """Query giving candidate parameter rows (columns named like the placeholders)."""
    limit: int = 8
    """Instances drawn at most."""
    sort_key: tuple[int, ...] = ()
    """For ordered golds: indexes of the result columns the order is defined by."""


def values(name: str, *items: object) -> str:
    """A parameter query listing fixed values: ``SELECT column1 AS name FROM (VALUES ...)``."""
    return (
        "SELECT column1 AS "
        + name
        + " FROM (VALUES "
        + ", ".join(f"({v!r})" if not isinstance(v, str) else f"('{v}')" for v in items)
        + ")"
    )
