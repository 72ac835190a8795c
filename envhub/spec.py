"""EnvSpec: the validated form of one catalog entry (``registry.yaml`` or a user's YAML file).

Also :class:`Knob`, the declaration of one difficulty knob of an environment (a setting of the
entry's ``options`` or ``dataset.options``), which ``envhub info`` lists.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from .errors import ConfigError
from .rewards import check_weight

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9_.]*(-[a-z0-9_.]+)*$")
VERSIONED_RE = re.compile(r"^(?P<name>.+)-v(?P<version>\d+)$")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DatasetSpec(_Strict):
    """Where an environment's tasks come from."""

    kind: Literal["builtin", "jsonl", "parquet", "hf"] = "builtin"
    """``builtin``: the environment's own offline data or generator; ``jsonl``/``parquet``: a
    local file; ``hf``: a dataset name loaded through the ``datasets`` library."""
    path: str | None = None
    """File path (may contain ``{split}``) or, for ``hf``, the dataset name."""
    config: str | None = None
    """``hf`` only: the dataset configuration (e.g. ``main`` for ``openai/gsm8k``)."""
    generator: str | None = None
    """``builtin`` only: which generator or packaged set to use."""
    size: int | None = Field(default=None, ge=1)
    """Number of tasks per split (generators) or a cap on rows read (files)."""
    seed: int = 0
    """Seed of procedural generators; the test split uses a disjoint seed stream."""
    fields: dict[str, str] = Field(default_factory=dict)
    """Map from task field (``task_id``, ``prompt``, ``answer``) to the row's column name."""
    options: dict[str, Any] = Field(default_factory=dict)
    """Generator-specific settings (difficulty and the like)."""


class VerdictSpec(_Strict):
    """How a judge's answer becomes a component value in [0, 1] (see :mod:`envhub.judge`)."""

    kind: Literal["yes_no", "score"] = "yes_no"
    """``yes_no``: the reply's last line ``VERDICT: yes`` gives 1, ``VERDICT: no`` 0;
    ``score``: its last line ``SCORE: <number>`` gives the number over ``max``."""
    max: float = Field(default=10.0, gt=0)
    """``score`` only: the number that means full marks (numbers outside 0..max are refused)."""


class JudgeSpec(_Strict):
    """An LLM judge as a reward component (see :mod:`envhub.judge`)."""

    base_url: str
    """OpenAI-compatible endpoint, e.g. ``http://127.0.0.1:8000/v1``."""
    model: str
    prompt: str
    """Template with ``{task}``, ``{response}``, ``{gold}`` and the task's metadata keys;
    ``{response}`` becomes the delimited, bounded response (see :mod:`envhub.judge`)."""
    system_prompt: str | None = None
    verdict: VerdictSpec = Field(default_factory=VerdictSpec)
    timeout_s: float = Field(default=60.0, gt=0)
    max_concurrency: int = Field(default=4, ge=1)
    """Judge requests in flight at once, per process."""
    max_tokens: int = Field(default=256, ge=1)
    max_response_chars: int = Field(default=8000, ge=1)
    """Characters of the response the judge reads; a longer one is cut there, and the judge
    is told how long it was (the response cannot overflow the judge's context)."""
    structured_output: bool = True
    """Ask for the verdict as JSON (``response_format`` with a JSON schema); an endpoint that
    refuses it is asked in plain text instead, and not asked for JSON again."""
    api_key_env: str | None = None
    """Environment variable holding the API key (sent as a bearer token), if any."""


class RewardSpec(_Strict):
    """Weights of the named reward components; absent components do not count."""

    weights: dict[str, Annotated[float, AfterValidator(check_weight)]] = Field(default_factory=dict)
    """Weight of each component: finite, at most :data:`envhub.rewards.MAX_WEIGHT` either way."""
    length_limit: int = Field(default=2000, ge=1)
    """Characters before the generic ``length`` component grows (give it a negative weight)."""
    judges: dict[str, JudgeSpec] = Field(default_factory=dict)
    """LLM-judge components by name; weight them in ``weights`` like any other component."""


class DockerSpec(_Strict):
    """How the Docker runner starts this environment's container."""

    network: bool = False
    """Give the container a network (off: ``--network none``)."""
    memory_mb: int = Field(default=1024, ge=64)
    pids_limit: int = Field(default=256, ge=16)
    extras: list[str] = Field(default_factory=list)
    """Extra pip extras of envhub the image needs for this environment (e.g. ``code``)."""


class EnvSpec(_Strict):
    """One registered environment."""

    name: str
    """Catalog name, lower case; ``NAME`` and ``NAME-vVERSION`` both find it."""
    version: int = Field(default=1, ge=1)
    family: str = "custom"
    description: str = ""
    entry_point: str | None = None
    """``package.module:Class`` or ``path/to/file.py:Class`` (relative to the YAML's folder) of
    the environment; taken from ``base`` when composing. See :mod:`envhub.registry.entrypoints`."""
    base: str | None = None
    """Compose from an existing environment: inherit its entry point and settings, then
    override with the fields given here."""
    dataset: DatasetSpec = Field(default_factory=DatasetSpec)
    split: str = "train"
    """Split that ``reset`` draws from."""
    system_prompt: str | None = None
    prompt_template: str = "{prompt}"
    """Python format string; ``{prompt}`` and the task's metadata keys are available."""
    reward: RewardSpec = Field(default_factory=RewardSpec)
    max_turns: int = Field(default=1, ge=1)
    runner: Literal["local", "http", "docker"] = "local"
    """Runner used by ``make`` when none is given."""
    tags: list[str] = Field(default_factory=list)
    options: dict[str, Any] = Field(default_factory=dict)
    """Environment-specific constructor options."""
    docker: DockerSpec = Field(default_factory=DockerSpec)
    venv: str | None = None
    """A virtual environment of its own that holds this environment's code and dependencies
    (``envhub pull --venv DIR`` sets it): ``make`` serves it from there, ``envhub serve`` run by
    that venv's Python over HTTP, whatever the runner; only that venv's own processes build it
    in-process. ``None``: this Python holds it."""
    source: str | None = Field(default=None, exclude=True)
    """File this entry was read from (set by the loader, for error messages)."""
    base_dir: str | None = None
    """Folder that relative paths (data files, databases, corpora) resolve against; set by
    ``envhub register`` to the registered file's folder. Default: the YAML file's folder."""

    @field_validator("name")
    @classmethod
    def _check_name(cls, v: str) -> str:
        if not NAME_RE.match(v):
            raise ValueError("must be lower case letters, digits, '_', '.', '-'")
        if VERSIONED_RE.match(v):
            raise ValueError("must not end in -vN; put the version in the 'version' field")
        return v

    @field_validator("entry_point")
    @classmethod
    def _check_entry_point(cls, v: str | None) -> str | None:
        if v is not None and not re.match(r"^[^:\s]+:[\w.]+$", v):
            raise ValueError("must look like 'package.module:ClassName' or 'file.py:ClassName'")
        return v

    @property
    def id(self) -> str:
        """Versioned id, ``NAME-vVERSION``."""
        return f"{self.name}-v{self.version}"

    @property
    def source_dir(self) -> Path | None:
        """Folder of the YAML file this entry came from (relative data paths resolve here)."""
        if self.base_dir:
            return Path(self.base_dir)
        return Path(self.source).parent if self.source else None


def fill_template(template: str, fields: dict[str, Any], where: str, owner: str) -> str:
    """``template.format(**fields)``, one error form for every template envhub fills.

    Raises:
        ConfigError: the template names a field ``fields`` lacks; the message names ``where``
            (e.g. ``gsm8k: prompt_template``), ``owner`` (e.g. ``task 'train/3'``) and the
            fields there are.
    """
    try:
        return template.format(**fields)
    except (KeyError, IndexError) as e:
        raise ConfigError(
            f"{where} refers to {e}, which {owner} lacks (available: {', '.join(fields)})"
        ) from e


KnobPlace = Literal["options", "dataset.options"]


@dataclass(frozen=True)
class Knob:
    """One difficulty knob of an environment: a setting that makes its tasks easier or harder.

    Environments declare theirs (:meth:`envhub.core.Env.difficulty_knobs`); ``envhub info``
    lists them, and :meth:`check` refuses a value outside them. A knob changes which tasks
    there are or how the opponent plays, never what a reward component means.
    """

    name: str
    """The setting's name in YAML."""
    place: KnobPlace
    """Where it is set: the entry's ``options`` or its ``dataset.options``."""
    about: str
    """What it does, in one sentence."""
    default: Any
    kind: str
    """``int``, ``float``, ``choice`` (one of :attr:`choices`), ``choices`` (a list of them),
    or a short description of a composite form (``"[min, max] of ints"``)."""
    harder: str
    """Which direction is harder: ``higher``, ``lower``, or a sentence."""
    low: float | None = None
    """Least allowed value (numbers, and each end of a range)."""
    high: float | None = None
    """Greatest allowed value."""
    choices: tuple[Any, ...] = ()
    """Allowed values of a ``choice`` knob, or of each item of a ``choices`` knob."""

    def allowed(self) -> str:
        """The allowed values, as an error message names them."""
        if self.choices:
            return f"one of {list(self.choices)}"
        if self.low is not None and self.high is not None:
            return f"from {self.low:g} to {self.high:g}"
        return f"at least {self.low:g}" if self.low is not None else self.kind

    def check(self, env: str, value: Any) -> Any:
        """``value`` if this knob allows it (numbers, ranges, choices); else a ConfigError.

        Raises:
            ConfigError: naming the environment, the knob, the value and what is allowed.
        """
        if self.kind == "choices":
            ok = isinstance(value, list) and bool(value) and all(map(self._fits, value))
        else:
            ok = self._fits(value)
        if not ok:
            raise ConfigError(
                f"{env}: {self.place}.{self.name} = {value!r} is not allowed; "
                f"it takes {self._shape()} {self.allowed()} (default {self.default!r})"
            )
        return value

    def _shape(self) -> str:
        shapes = {"choices": "a non-empty list, each item", "int": "an integer"}
        return {**shapes, "float": "a number"}.get(self.kind, "a value")

    def _fits(self, value: Any) -> bool:
        if self.choices:
            return any(value == c and type(value) is type(c) for c in self.choices)
        if self.kind not in ("int", "float"):
            return True
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        if self.kind == "int" and not isinstance(value, int):
            return False
        low_ok = self.low is None or value >= self.low
        return low_ok and (self.high is None or value <= self.high)

    def as_dict(self, value: Any = None) -> dict[str, Any]:
        """The knob as JSON data for ``envhub info``; ``value`` is the entry's setting."""
        out = {k: v for k, v in asdict(self).items() if v is not None and v != ()}
        if self.choices:
            out["choices"] = list(self.choices)
        out["value"] = self.default if value is None else value
        return out


def knob_value(spec: EnvSpec, knob: Knob) -> Any:
    """The entry's setting of ``knob`` (its default when the entry does not set it)."""
    where = spec.options if knob.place == "options" else spec.dataset.options
    return where.get(knob.name, knob.default)


def check_dataset_knobs(spec: EnvSpec, knobs: tuple[Knob, ...]) -> None:
    """Refuse ``dataset.options`` that are not among ``knobs``, and values they do not allow.

    Raises:
        ConfigError: an unknown key (with the knobs there are) or a value out of range.
    """
    known = {k.name: k for k in knobs if k.place == "dataset.options"}
    for key, value in spec.dataset.options.items():
        if key not in known:
            raise ConfigError(
                f"{spec.name}: unknown dataset.options.{key}; the knobs there are "
                f"{sorted(known) or 'none'} (see `envhub info {spec.name}`)"
            )
        known[key].check(spec.name, value)
