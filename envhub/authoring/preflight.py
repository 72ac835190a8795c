"""What ``envhub register`` proves before it writes anything: the entry is usable.

Schema validation catches a field of the wrong type; these checks catch what would fail only
when the environment is used:

1. the entry point imports (:mod:`envhub.registry.entrypoints`);
2. every option is a keyword the constructor accepts ("did you mean 'answer_format'?");
3. every reward weight names a component the environment produces ("did you mean ...");
4. the constructor accepts the spec;
5. the dataset loads and every task has the fields the prompt template names;
6. the environment's own gold answers (or reference solver) score full marks on a sample
   (an episode that ends in ``infra_error``, e.g. a judge that is down, proves nothing and is
   left out; ``envhub check`` reports it).

Each failure is a :class:`PreflightError` naming the YAML field, the problem and the fix; the
registry adds the file and line.
"""

from __future__ import annotations

import inspect
import string
from typing import Any

from ..core import TaskEnv
from ..errors import EntryError, EnvhubError
from ..registry.catalog import did_you_mean
from ..registry.make import env_class
from ..rewards import GENERIC_COMPONENTS
from ..spec import EnvSpec
from .checker import CheckError, check_gold

GOLD_SEEDS = (0, 1, 2)
"""Seeds of the tasks whose gold answers must score full marks at registration."""
TEMPLATE_SAMPLE = 50
"""Tasks whose fields are checked against the prompt template."""


class PreflightError(EntryError):
    """One field of an entry would fail when used (``field``: its dotted YAML path)."""


def accepted_options(cls: type) -> set[str] | None:
    """Keyword options the constructor chain accepts; ``None`` when it takes any."""
    names: set[str] = set()
    is_class = isinstance(cls, type)  # else a factory (make() takes one): its own parameters
    for init in [k.__dict__.get("__init__") for k in cls.__mro__] if is_class else [cls]:
        if init is None:
            continue
        if init is TaskEnv.__init__:
            return names  # TaskEnv rejects options its subclasses did not declare
        params = list(inspect.signature(init).parameters.values())[2 if is_class else 1 :]
        var = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
        names |= {p.name for p in params if p.kind not in var}
        if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
            return names
    return None


def check_options(cls: type, options: dict[str, Any]) -> None:
    """Every option is one the constructor accepts."""
    accepted = accepted_options(cls)
    if accepted is None:
        return
    for name in options:
        if name not in accepted:
            offered = ", ".join(sorted(accepted)) or "none"
            raise PreflightError(
                f"options.{name}",
                f"{cls.__name__} takes no option {name!r} (it accepts: {offered})",
                f"correct the name{did_you_mean(name, accepted)} or remove it",
            )


def offered_components(cls: type, spec: EnvSpec) -> set[str]:
    """Components ``cls`` computes plus the generic ones any environment can switch on."""
    return set(getattr(cls, "components", ())) | set(GENERIC_COMPONENTS) | set(spec.reward.judges)


def check_weights(cls: type, spec: EnvSpec) -> None:
    """Every reward weight names a component the environment produces."""
    offered = offered_components(cls, spec)
    for name in spec.reward.weights:
        if name not in offered:
            raise PreflightError(
                f"reward.weights.{name}",
                f"{cls.__name__} produces no component {name!r} "
                f"(it produces: {', '.join(sorted(offered))})",
                f"correct the name{did_you_mean(name, offered)} or remove it",
            )


def template_fields(template: str) -> set[str]:
    """Top-level names a ``str.format`` template refers to."""
    names = set()
    for _, field, _, _ in string.Formatter().parse(template):
        if field:
            names.add(field.split(".")[0].split("[")[0])
    return names


def check_data(env: TaskEnv) -> None:
    """The dataset loads and each task has what the prompt template names."""
    spec = env.spec
    try:
        tasks = env.tasks()
    except EnvhubError as e:
        where = f" (relative paths resolve against {spec.source_dir})" if spec.source_dir else ""
        raise PreflightError(
            "dataset.path" if spec.dataset.path else "dataset",
            f"the dataset does not load: {e}{where}",
            "correct the path, or the file",
        ) from None
    wanted = template_fields(spec.prompt_template)
    for task in tasks[:TEMPLATE_SAMPLE]:
        have = {"prompt", *task.metadata}
        lacking = sorted(wanted - have)
        if lacking:
            raise PreflightError(
                "prompt_template",
                f"names {{{lacking[0]}}}, which task {task.task_id!r} lacks (it has "
                f"{', '.join(sorted(have))})",
                f"use {{prompt}}, or map the column with dataset.fields "
                f"(e.g. fields: {{prompt: {lacking[0]}}})",
            )


def check_spec(spec: EnvSpec) -> None:
    """Run every registration check on a resolved spec; raises :class:`PreflightError`."""
    try:
        cls = env_class(spec)
    except EnvhubError as e:
        problem, _, fix = str(e).partition(". Fix: ")  # envhub.registry.entrypoints says both
        raise PreflightError(
            "entry_point", problem, fix or "name 'package.module:Class' or 'path/to/file.py:Class'"
        ) from None
    check_options(cls, spec.options)
    check_weights(cls, spec)
    try:
        env = cls(spec, **spec.options)
    except (EnvhubError, TypeError, ValueError) as e:
        raise PreflightError(
            "options",
            f"the environment cannot be built: {e}",
            "correct the options (or the constructor)",
        ) from None
    try:
        if isinstance(env, TaskEnv):
            check_data(env)
            try:
                check_gold(env, GOLD_SEEDS, skip_infra=True)
            except CheckError as e:
                raise PreflightError(
                    "entry_point",
                    f"its own gold answers do not score full marks: {e}",
                    "correct the data's answers or the verifier (`envhub check FILE` shows "
                    "every check)",
                ) from None
    finally:
        env.close()
