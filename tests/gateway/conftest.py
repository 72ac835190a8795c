"""Shared fixtures: the tiny engine behind a gateway on a loopback port, with a spy on the engine."""

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("fastapi")

from gateway_support import SpyEngine


@pytest.fixture(scope="module")
def spy(engine):
    return SpyEngine(engine)


@pytest.fixture(scope="module")
def served(spy):
    """(gateway, server) over the tiny engine; calls default to 8 tokens."""
    from envhub.gateway.backends import EngineBackend
    from envhub.gateway.server import GatewayServer
    from envhub.gateway.service import Gateway

    gateway = Gateway(EngineBackend(spy, "tiny"), default_max_tokens=8)
    with GatewayServer(gateway) as server:
        yield gateway, server
