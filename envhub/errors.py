"""The envhub error tree, and the one boundary where failures become data.

A bad rollout is data, not a crash: anything raised inside an environment's hooks is turned
into a :class:`~envhub.types.Status` by :func:`status_for` at exactly one place (the episode
boundary in :mod:`envhub.core`). Errors that already know their status carry it; anything
else, a raw ``TimeoutError`` included, is the environment's ``env_error`` (see
:func:`status_for` for why a model's ``timeout`` is only ever declared).

User-facing errors (a missing environment, a bad YAML file) are plain exceptions with a message
that names what was wrong and, where it can, the fix.
"""

from __future__ import annotations

from .install import install_command
from .types import Status


class EnvhubError(Exception):
    """Base class of every error envhub raises on purpose."""


# ---------------------------------------------------------------- catalog and configuration


class RegistryError(EnvhubError):
    """A catalog entry or user YAML file is invalid.

    The message names the file, the line, the environment and the field, says what is wrong
    and what to do (one form for all: see :func:`envhub.registry.catalog.catalog_error`).
    """


class EntryError(RegistryError):
    """One field of one catalog entry is wrong; the catalog adds the file and the line."""

    def __init__(self, field: str, problem: str, fix: str) -> None:
        """``field`` is the dotted YAML path (``reward.weights.corectness``)."""
        super().__init__(f"field '{field}': {problem}. Fix: {fix}")
        self.field = field
        self.problem = problem
        self.fix = fix


class EnvNotFound(EnvhubError, KeyError):
    """No environment is registered under the requested name."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class TaskNotFound(EnvhubError, KeyError):
    """The environment has no task with the requested id."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ConfigError(EnvhubError, ValueError):
    """An override or option does not fit the environment (unknown component, bad value)."""


class NotSupported(EnvhubError):
    """The environment does not offer this operation (for example ``verify`` on a game)."""


class EpisodeStateError(EnvhubError):
    """``step`` was called before ``reset`` or after the episode ended."""


class TransportError(EnvhubError):
    """A remote environment could not be reached or answered with a client error."""


class DependencyMissing(EnvhubError, ImportError):
    """An optional dependency is not installed; the message names the extra to install."""


# ---------------------------------------------------------------- episode failures (data)


class EpisodeError(EnvhubError):
    """A failure inside one episode. It becomes that episode's status, never a crash."""

    status: Status = Status.ENV_ERROR


class InvalidAction(EpisodeError):
    """The model's message cannot be acted on (malformed tool call, invalid guess)."""

    status = Status.INVALID_ACTION


class VerifierTimeout(EpisodeError, TimeoutError):
    """Verification (or the model's program) ran past its deadline."""

    status = Status.TIMEOUT


class InfraError(EpisodeError):
    """The infrastructure failed (sandbox down, container gone): never the model's fault."""

    status = Status.INFRA_ERROR


class GoldAnswerError(EpisodeError):
    """The task's gold answer cannot be parsed: an environment bug, never a reward of 0 or 1."""

    status = Status.ENV_ERROR


def status_for(exc: BaseException) -> Status:
    """Map an exception escaping environment code to the status reported for the episode.

    Whose fault a failure is, is declared, never guessed from an exception's type: an
    :class:`EpisodeError` carries its status, and anything else is the environment's own
    failure, ``env_error`` (logged with its traceback at the boundary, for its author).

    That includes a raw :class:`TimeoutError` (``socket.timeout``, ``asyncio.TimeoutError``,
    a library's wait). It says that some wait ran out, not whose: usually the machinery's (a
    database, a search index, a server that did not answer), and charging that to the model
    as its ``timeout`` would pay it 0 for the infrastructure. The model's ``timeout`` is
    :class:`VerifierTimeout`, raised where a deadline on the model's own work (its program,
    its query, its step) expires; an environment whose model-driven work can overrun says
    so with it.
    """
    if isinstance(exc, EpisodeError):
        return exc.status
    return Status.ENV_ERROR


CONTEXT_MARKERS = ("context_length_exceeded", "maximum context length")
"""How OpenAI (an error code) and vLLM's server (its message) say a prompt is too long."""


def context_overflow(status: int, body: str) -> bool:
    """True when an OpenAI-compatible server refused a request that does not fit its context."""
    return status == 400 and any(m in body for m in CONTEXT_MARKERS)


def missing(package: str, extra: str) -> DependencyMissing:
    """Build the error for an optional dependency that is not installed."""
    return DependencyMissing(
        f"{package!r} is not installed; install it with `{install_command([extra])}`"
    )
