"""Catalog entries generated from an installed library rather than written in YAML.

A provider is a ``module:function`` returning catalog entries as mappings (the form of one
``registry.yaml`` entry); :data:`PROVIDERS` lists them. The catalog adds their entries after
``registry.yaml`` and before the user's registrations. Providers must be cheap: ``envhub list``
calls them. reasoning-gym's generators are the one provider today (``rg-<dataset>``).
"""

from __future__ import annotations

import importlib
from typing import Any

PROVIDERS = ("envhub.envs.reasoning_gym.catalog:entries",)
"""``module:function`` of each provider of generated entries."""


def provider_entries(provider: str) -> tuple[str, list[dict[str, Any]]]:
    """The source (the provider's module file) and the entries of one provider."""
    module_name, _, attr = provider.partition(":")
    module = importlib.import_module(module_name)
    return str(module.__file__), getattr(module, attr)()


def generated_entries() -> list[tuple[str, dict[str, Any]]]:
    """Every provider's entries, each with its source."""
    out = []
    for provider in PROVIDERS:
        source, found = provider_entries(provider)
        out += [(source, raw) for raw in found]
    return out
