"""The training config: YAML, key=value overrides, errors that name the key."""

from pathlib import Path

import pytest

from envhub.trainer.config import TrainConfigError, load_config

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "examples" / "tiny.yaml"


def test_example_loads_and_overrides_apply():
    cfg = load_config(
        REPO / "examples" / "tiny.yaml",
        ["train.steps=7", "loss.kl_beta=0.5", 'rollout.sampling.stop=["\\n"]'],
    )
    assert cfg.train.steps == 7 and cfg.loss.kl_beta == 0.5
    assert cfg.rollout.sampling.stop == ["\n"]
    # a relative dataset path is resolved against the config file's folder
    assert cfg.env.overrides["dataset"]["path"] == str(REPO / "examples" / "data" / "sums.jsonl")


def _example_configs() -> list[Path]:
    """The examples that are training or SFT configs (a ``model`` section; not the manifests)."""
    import yaml

    return [
        p
        for p in sorted((REPO / "examples").glob("*.yaml"))
        if any(isinstance(d, dict) and "model" in d for d in yaml.safe_load_all(p.read_text()))
    ]


@pytest.mark.parametrize("path", _example_configs(), ids=lambda p: p.name)
def test_every_example_config_loads(path):
    from envhub.trainer.sft import SFTConfig

    is_sft = "\nsft:" in path.read_text()
    cfg = load_config(path, [], SFTConfig) if is_sft else load_config(path, [])
    assert cfg.env.mix or cfg.env.name


def test_unknown_key_suggests_the_close_one():
    with pytest.raises(
        TrainConfigError, match="unknown config key 'rollout.group_sise'.*group_size"
    ):
        load_config(None, ["rollout.group_sise=4"])


def test_bad_value_names_the_dotted_key():
    with pytest.raises(TrainConfigError, match="rollout.group_size"):
        load_config(None, ["rollout.group_size=1"])
    with pytest.raises(TrainConfigError, match="loss.aggregation"):
        load_config(None, ["loss.aggregation=bogus"])
    with pytest.raises(TrainConfigError, match="key=value"):
        load_config(None, ["train.steps"])


def test_free_form_env_overrides_accept_any_key():
    cfg = load_config(None, ["env.overrides.max_turns=3", "env.overrides.reward.weights.length=-1"])
    assert cfg.env.overrides == {"max_turns": 3, "reward": {"weights": {"length": -1}}}


def test_off_policy_needs_split_placement():
    with pytest.raises(TrainConfigError, match="placement=split"):
        load_config(None, ["generation.one_step_off_policy=true"])
    cfg = load_config(None, ["cluster.placement=split", "generation.one_step_off_policy=true"])
    assert cfg.separate_engines and cfg.generation.kv_cache_gib == 1.0


def test_collective_transports_need_engine_actors():
    for transport in ("gloo", "nccl"):  # nccl is checked for CUDA when the group is made
        cfg = load_config(None, ["cluster.placement=split", f"generation.transport={transport}"])
        assert cfg.generation.transport == transport
    with pytest.raises(TrainConfigError, match="placement=split"):
        load_config(None, ["generation.transport=gloo"])  # colocated transformers engines
    with pytest.raises(TrainConfigError, match="transport"):
        load_config(None, ["cluster.placement=split", "generation.transport=mpi"])


def test_vllm_sleep_mode_needs_the_vllm_engine():
    with pytest.raises(TrainConfigError, match="sleep_while_training needs cluster.engine=vllm"):
        load_config(TINY, ["generation.sleep_while_training=true"])
    cfg = load_config(TINY, ["generation.sleep_while_training=true", "cluster.engine=vllm"])
    assert cfg.generation.sleep_while_training


def test_refit_check_is_refused_with_an_adapter_refit():
    split = ["cluster.placement=split", "cluster.engine=vllm", "model.lora.rank=8"]
    with pytest.raises(TrainConfigError, match="verify_refit"):
        load_config(TINY, [*split, "generation.verify_refit=true"])
    assert load_config(TINY, [*split, "generation.verify_refit=true", "generation.transport=gloo"])
    assert load_config(TINY, split).adapter_refit


def test_algorithm_switches_parse():
    cfg = load_config(
        TINY,
        [
            "loss.rollout_correction.mode=geo_mask",
            "loss.rollout_correction.low=0.99",
            "loss.rollout_correction.high=1.01",
            "loss.ratio_level=sequence",
            "model.lora.rank=8",
            "model.activation_checkpointing=true",
        ],
    )
    assert cfg.loss.rollout_correction.mode == "geo_mask" and cfg.model.lora.enabled
    assert "model.lora" in cfg.fingerprint()  # a LoRA checkpoint resumes only as LoRA
    with pytest.raises(TrainConfigError, match="loss.rollout_correction.mode"):
        load_config(TINY, ["loss.rollout_correction.mode=tis"])
    with pytest.raises(TrainConfigError, match="did you mean"):
        load_config(TINY, ["model.lora.rnak=8"])
