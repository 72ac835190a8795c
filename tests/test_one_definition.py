"""Each shared concept is defined once (issue 13, point 2).

Generation engines are one part (``envhub.engines``) used by ``envhub eval`` and the trainer:
one ``SamplingParams``, one ``Generation``, one engine protocol, one episode record, one model
resolver, one loss config. The scan reads every source file of the packages (not tests,
benchmarks or docs), so a copy added anywhere, under any folder, fails here.
"""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("envhub",)
"""Top-level packages scanned (those that exist: parts may move under ``envhub/``)."""

ONE_DEFINITION = {
    "SamplingParams": "envhub/engines/types.py",
    "Generation": "envhub/engines/types.py",
    "GenerationEngine": "envhub/engines/types.py",
    "EpisodeResult": "envhub/types.py",
    "LossConfig": "envhub/trainer/algo/grpo.py",
    "resolve_model": "envhub/engines/weights.py",
}
"""Concept name -> the one file that defines it (moved folders keep the file's tail)."""

RETIRED = ("LossSettings", "ModelGeneration", "EvalGeneration", "EngineParams")
"""Names of former duplicates: defining them again brings the duplicate back."""


def _definitions() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for package in PACKAGES:
        if not (ROOT / package).is_dir():
            continue
        for path in sorted((ROOT / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                    found.setdefault(node.name, []).append(path.relative_to(ROOT).as_posix())
    return found


def test_each_concept_is_defined_once():
    found = _definitions()
    for name, home in ONE_DEFINITION.items():
        where = found.get(name, [])
        assert len(where) == 1, f"{name} is defined {len(where)} times: {where}; keep one"
        assert where[0].endswith(home.split("/", 1)[1]), f"{name} lives in {where[0]}"
    for name in RETIRED:
        assert name not in found, f"{name} is back in {found[name]}; use the one definition"


def test_episode_records_of_eval_and_trainer_extend_the_core_record():
    from envhub.evaluate.store import EpisodeRecord
    from envhub.trainer.episodes.rollout import TrainingEpisode
    from envhub.types import EpisodeResult

    for record in (EpisodeRecord, TrainingEpisode):
        assert issubclass(record, EpisodeResult)
        shared = set(EpisodeResult.model_fields)
        redefined = {
            n for n in shared if n in record.__annotations__ and n != "task_id"
        }  # task_id: the evaluator requires it
        assert not redefined, f"{record.__name__} redefines {sorted(redefined)}"


def test_trainer_settings_are_typed_from_config_to_policy():
    pytest.importorskip("torch")
    import inspect

    from envhub.trainer.algo import grpo
    from envhub.trainer.config import Config, OptimConfig
    from envhub.trainer.workers import policy

    assert Config.model_fields["loss"].annotation is grpo.LossConfig
    assert Config.model_fields["optim"].annotation is OptimConfig
    params = inspect.signature(policy.Policy.__init__).parameters
    assert params["optim"].annotation == "OptimConfig"
    assert params["loss"].annotation == "LossConfig"
    for name in ("dtype", "seed", "pack", "fused"):  # the config's defaults are the only ones
        assert params[name].default is inspect.Parameter.empty, f"Policy repeats {name}'s default"
    trainer = Path(policy.__file__).parents[1]
    for path in trainer.rglob("*.py"):  # no dict-of-strings on the way
        assert "optim.model_dump()" not in path.read_text(), path


def test_sampling_defaults_are_the_engines_own():
    pytest.importorskip("torch")
    from envhub.engines.types import SamplingParams
    from envhub.trainer import config as trainer_config

    tree = ast.parse(Path(trainer_config.__file__).read_text())
    [section] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "SamplingConfig"]
    for stmt in section.body:
        if isinstance(stmt, ast.AnnAssign) and stmt.target.id in ("temperature", "top_p", "top_k"):
            [default] = [k.value for k in stmt.value.keywords if k.arg == "default"]
            assert not isinstance(default, ast.Constant), (
                f"SamplingConfig.{stmt.target.id} repeats a default of the engine"
            )
    params = trainer_config.Config().rollout.sampling.params(seed=3)
    assert isinstance(params, SamplingParams) and params.seed == 3


def test_the_one_loss_config_keeps_the_config_validation():
    pytest.importorskip("torch")
    from envhub.trainer.config import TrainConfigError, load_config

    with pytest.raises(TrainConfigError, match="aggregation"):
        load_config(None, ["loss.aggregation=sum"])


def test_importing_the_engines_part_loads_no_heavy_library():
    code = (
        "import sys, envhub.engines, envhub.engines.chat, envhub.engines.weights; "
        "print(sorted(m for m in ('torch', 'vllm', 'transformers') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert out.stdout.strip() == "[]"
