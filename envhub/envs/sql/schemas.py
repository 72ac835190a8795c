"""The built-in databases: each one's DDL (a ``.sql`` file) and the seeded generator of its rows.

The DDL lives in ``data/schemas/<db_id>.sql``. Comments inside ``CREATE TABLE`` are kept by
sqlite and shown to the model as part of the schema: they say what codes and units mean
(comments outside a statement are not stored). The rows come from :mod:`envhub.envs.sql.generators`.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import generators
from .generators import Rows

SCHEMA_DIR = Path(__file__).parent / "data" / "schemas"
"""Where the ``<db_id>.sql`` files live."""


@dataclass(frozen=True)
class Schema:
    """One built-in database: its DDL and the generator of its rows."""

    db_id: str
    description: str
    generate: Callable[[random.Random], Rows]
    seed: int

    @property
    def ddl_path(self) -> Path:
        """The ``.sql`` file holding this database's ``CREATE TABLE`` statements."""
        return SCHEMA_DIR / f"{self.db_id}.sql"

    @property
    def ddl(self) -> str:
        """The ``CREATE TABLE`` statements, read from :attr:`ddl_path`."""
        return self.ddl_path.read_text(encoding="utf-8")


SCHEMAS: dict[str, Schema] = {
    s.db_id: s
    for s in (
        Schema(
            "store", "an online shop: products, customers, orders, reviews", generators.store, 1101
        ),
        Schema(
            "university",
            "departments, instructors, students, courses, grades",
            generators.university,
            2202,
        ),
        Schema(
            "flights", "airports, airlines, flights, passengers, bookings", generators.flights, 3303
        ),
        Schema(
            "library", "authors, books, branches, copies, members, loans", generators.library, 4404
        ),
    )
}
"""The built-in databases by id."""
