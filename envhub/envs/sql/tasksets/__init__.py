"""The built-in task set: question templates over the built-in databases."""

from __future__ import annotations

from .base import Template
from .flights import FLIGHTS
from .library import LIBRARY
from .store import STORE
from .university import UNIVERSITY

TEMPLATES: list[Template] = [*STORE, *UNIVERSITY, *FLIGHTS, *LIBRARY]
"""Every template, in a fixed order (task ids and splits depend on it)."""

__all__ = ["TEMPLATES", "Template"]
