"""``make``: one call that returns an environment on any runner.

``local`` builds the environment in this process; ``http`` connects to a running
``envhub serve`` (``url=``) or starts one on a free loopback port and stops it on ``close``;
``docker`` runs the same server in a container. All three return an :class:`~envhub.core.Env`
that behaves the same. The remote runners carry episodes over a WebSocket per handle and fall
back to HTTP where it is refused (``transport=``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..client.venv import is_current
from ..core import Env
from ..errors import ConfigError, DependencyMissing
from ..install import entry_points, install_command
from ..spec import EnvSpec
from .catalog import _merge
from .catalog import spec as lookup
from .entrypoints import load_entry_point


def apply_overrides(spec: EnvSpec, overrides: dict[str, Any]) -> EnvSpec:
    """Overlay overrides on a spec: spec fields by name (dicts merged), anything else to options.

    ``make("gsm8k", max_turns=2, reward={"weights": {"format": 0}}, difficulty=3)`` sets the
    turn budget, switches the format component off and passes ``difficulty=3`` to the env.
    """
    if not overrides:
        return spec
    fixed = {"name", "version", "source", "base", "entry_point", "venv"}
    fields = set(EnvSpec.model_fields) - fixed
    direct = {k: v for k, v in overrides.items() if k in fields}
    options = {k: v for k, v in overrides.items() if k not in fields}
    if options:
        direct["options"] = {**direct.get("options", {}), **options}
    data = _merge(spec.model_dump(exclude={"source"}), direct)
    try:
        return EnvSpec.model_validate({**data, "source": spec.source})
    except ValidationError as e:
        err = e.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(
            f"override {where!r} for {spec.name}: {err['msg'].removeprefix('Value error, ')}"
        ) from None


def env_class(spec: EnvSpec) -> Callable[..., Any]:
    """The class (or factory) ``spec`` names, extended by its LLM judges if it has any."""
    from ..judge import with_judges

    return with_judges(load_entry_point(spec.entry_point or "", spec.source_dir), spec)


def make_local(spec: EnvSpec, **_: Any) -> Env:
    """Build the environment in this process.

    One that lives in a venv of its own (``spec.venv``, another Python's) is served from there
    instead (:func:`make_http`), and behaves the same.
    """
    if spec.venv is not None and not is_current(spec.venv):
        return make_http(spec)
    cls = env_class(spec)
    try:
        return cls(spec, **spec.options)
    except TypeError as e:
        raise ConfigError(f"{spec.name}: bad options {sorted(spec.options)}: {e}") from e


def make_http(spec: EnvSpec, url: str | None = None, **kwargs: Any) -> Env:
    """Connect to ``url``, or start ``envhub serve`` for this spec and own it."""
    from ..client.child_server import spawn_server
    from ..client.remote_env import RemoteEnv

    if url is not None:
        return RemoteEnv(url, **kwargs)
    server = spawn_server(spec)
    try:
        return RemoteEnv(server.url, owner=server, **kwargs)
    except BaseException:
        server.close()
        raise


RUNNERS: dict[str, Callable[..., Env]] = {
    "local": make_local,
    "http": make_http,
}
"""The core's own runners. Parts add theirs under the entry-point group ``envhub.runners``
(``docker = "envhub.docker:make_env"``): a callable ``(spec, url=None, **kwargs) -> Env``."""

RUNNER_GROUP = "envhub.runners"


def _plugin_runners() -> dict[str, Any]:
    """The entry points of :data:`RUNNER_GROUP`, by name (not loaded).

    From the checkout's own ``pyproject.toml`` when envhub runs from one (its install metadata
    may be older).
    """
    return entry_points(RUNNER_GROUP)


def runner_for(name: str) -> Callable[..., Env]:
    """The runner called ``name``: the core's own, else the part registered under that name.

    Raises:
        ConfigError: no runner has that name.
        DependencyMissing: the runner's part is registered but its extra is not installed.
    """
    if name in RUNNERS:
        return RUNNERS[name]
    plugins = _plugin_runners()
    ep = plugins.get(name)
    if ep is None:
        known = sorted({*RUNNERS, *plugins})
        raise ConfigError(
            f"unknown runner {name!r}; choose one of {known}. A runner of an installed part "
            f"that is missing here means envhub's install metadata is stale: `{install_command()}`"
        )
    return _load_part(ep, f"runner {name!r}")


def _load_part(ep: Any, what: str) -> Any:
    """Load a part's entry point; an absent extra is a :class:`DependencyMissing` naming it."""
    try:
        return ep.load()
    except ImportError as e:
        extras = ep.extras or [ep.name]
        raise DependencyMissing(
            f"{what} needs envhub's {','.join(extras)!r} extra: `{install_command(extras)}` ({e})"
        ) from e


def make(
    name: str,
    runner: str | None = None,
    *,
    url: str | None = None,
    timeout: float | None = None,
    transport: str | None = None,
    **overrides: Any,
) -> Env:
    """Return the environment ``name`` (or ``name-vN``) on a runner.

    Args:
        name: A registered name; ``gsm8k`` is the latest version, ``gsm8k-v1`` a fixed one.
        runner: ``local``, ``http`` or ``docker``; the spec's default runner when omitted.
        url: For ``http``: the URL of a running ``envhub serve``.
        timeout: For ``http``/``docker``: the deadline of every call in seconds (default 60).
        transport: For ``http``/``docker``: ``auto`` (the default: a WebSocket per episode
            handle, HTTP where the handshake is refused), ``ws`` or ``http``.
        **overrides: Spec fields (``max_turns``, ``split``, ``reward``, ``dataset``...) or
            environment options.
    """
    if url is not None and overrides:
        raise ConfigError(
            f"overrides {sorted(overrides)} cannot change a running server at {url}; "
            "start it with them instead, or omit url= to let make() start one"
        )
    spec_ = apply_overrides(lookup(name), overrides)
    runner = runner or spec_.runner
    if spec_.venv is not None and runner not in RUNNERS:
        raise ConfigError(
            f"{name} lives in the venv {spec_.venv}, which the {runner!r} runner cannot "
            "reach; play it with runner='local' or 'http' (both serve it from that venv)"
        )
    run = runner_for(runner)
    if url is not None and runner != "http":
        raise ConfigError("url= is only for runner='http'")
    given = {"timeout": timeout, "transport": transport}
    extra = {k: v for k, v in given.items() if v is not None}
    if runner == "local":
        return make_local(spec_)
    return run(spec_, url=url, **extra)
