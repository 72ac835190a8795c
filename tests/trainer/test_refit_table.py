"""Refit as objects: one table of combinations, one pair per transport, actors that hold them.

- The table decides every combination of the refit's settings, and ``Config`` refuses exactly
  what the table refuses, with the table's message; every row is reached.
- Every supported combination builds its pair (sender and receiver, as the actors do in their
  constructors), and each pair moves weights from a sender to a receiver: in process, through
  a payload (what Ray's object store carries), and over a real gloo group of two threads.
- The actors expose send, receive and close for refit, and nothing in ``workers/`` or
  ``refit/`` probes its own attributes with ``getattr(self, ...)``.
"""

import ast
import itertools
import threading
from dataclasses import fields
from pathlib import Path

import pytest
import torch

from envhub.trainer.config import Config, TrainConfigError, load_config
from envhub.trainer.refit import build
from envhub.trainer.refit.base import Loaded, Push
from envhub.trainer.refit.collective_pair import (
    CollectiveReceiver,
    CollectiveSender,
    Host,
    Join,
    Resend,
)
from envhub.trainer.refit.state import (
    AdapterReceiver,
    AdapterSender,
    InProcessSender,
    StateReceiver,
    StateSender,
)
from envhub.trainer.refit.table import TABLE, Setting, UnsupportedRefit, pair_for
from envhub.trainer.refit.vllm_transfer import VLLMTransferReceiver, VLLMTransferSender

ROOT = Path(__file__).resolve().parents[2]
VALUES = {
    "engine": ("transformers", "vllm"),
    "placement": ("colocated", "split"),
    "transport": ("object_store", "gloo", "nccl"),
    "weight_transfer": ("envhub", "vllm"),
    "lora": (False, True),
    "gpus": (False, True),
    "verify": (False, True),
}
SETTINGS = [Setting(*v) for v in itertools.product(*(VALUES[f.name] for f in fields(Setting)))]


def as_config(s: Setting) -> dict:
    gpus = 1 if s.gpus else 0
    return {
        "model": {"lora": {"rank": 8 if s.lora else 0}},
        "cluster": {"engine": s.engine, "placement": s.placement, "gpus_per_worker": gpus},
        "generation": {
            "transport": s.transport,
            "weight_transfer": s.weight_transfer,
            "gpus_per_engine": gpus,
            "verify_refit": s.verify,
        },
    }


def outcome(s: Setting) -> str:
    try:
        return pair_for(s)
    except UnsupportedRefit as e:
        return f"error: {e}"


@pytest.mark.parametrize("setting", SETTINGS, ids=str)
def test_the_config_refuses_exactly_what_the_table_refuses(setting):
    want = outcome(setting)
    if want.startswith("error: "):
        with pytest.raises(ValueError) as e:
            Config.model_validate(as_config(setting))
        assert want.removeprefix("error: ") in str(e.value)
    else:
        cfg = Config.model_validate(as_config(setting))
        assert cfg.refit_setting == setting and cfg.refit_pair == want
        # engines are actors of their own exactly when vLLM runs them or placement splits
        assert cfg.separate_engines == (setting.engine == "vllm" or setting.placement == "split")


def test_every_row_of_the_table_decides_some_combination():
    first = {id(next(r for r in TABLE if r.matches(s))) for s in SETTINGS}
    assert first == {id(r) for r in TABLE}
    assert all(r.pair in build.PAIRS for r in TABLE if r.pair is not None)


def test_a_refusal_names_the_setting_to_change():
    with pytest.raises(TrainConfigError, match="set cluster.placement=split"):
        load_config(None, ["generation.transport=gloo"])
    with pytest.raises(UnsupportedRefit, match="replaces generation.transport=gloo"):
        pair_for(Setting("vllm", "split", "gloo", "vllm", False, True, False))


ROLES = {
    "in_process": (InProcessSender, StateReceiver),
    "object_store": (StateSender, StateReceiver),
    "adapter": (AdapterSender, AdapterReceiver),
    "collective": (CollectiveSender, CollectiveReceiver),
    "vllm": (VLLMTransferSender, VLLMTransferReceiver),
}


@pytest.mark.parametrize("setting", [s for s in SETTINGS if "error" not in outcome(s)], ids=str)
def test_every_supported_combination_builds_its_pair(setting):
    cfg = Config.model_validate(as_config(setting))
    sender, receiver = build.sender(cfg), build.receiver(cfg, 3)
    assert (type(sender), type(receiver)) == ROLES[cfg.refit_pair]
    sender.close()
    receiver.close()


class FakeSource:
    """A policy rank: its weights, its adapter files, maybe a colocated engine."""

    def __init__(self, state, rank=0, engine=None):
        self.weights, self.rank, self.colocated = state, rank, engine

    def state(self):
        return dict(self.weights)

    def adapter(self):
        return {"adapter_config.json": b"{}"} if self.rank == 0 else None

    def engine(self):
        return self.colocated


class FakeEngine:
    def __init__(self):
        self.state, self.adapters = None, []

    def load_state_dict(self, state):
        self.state = {k: v.clone() for k, v in state.items()}

    def load_adapter(self, folder, adapter_id):
        self.adapters.append((Path(folder).name, (Path(folder) / "adapter_config.json").exists()))


def weights(seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"a.weight": torch.randn(4, 3, generator=g), "b.bias": torch.randn(5, generator=g)}


def test_the_in_process_pair_loads_into_the_colocated_engine():
    engine = FakeEngine()
    seconds = InProcessSender().send(FakeSource(weights(), engine=engine), Push(1))
    assert seconds >= 0 and torch.equal(engine.state["a.weight"], weights()["a.weight"])


def test_the_object_store_pair_moves_rank_0s_copy():
    assert StateSender().send(FakeSource(weights(), rank=1), Push(1)) is None
    payload = StateSender().send(FakeSource(weights()), Push(1))
    engine = FakeEngine()
    got = StateReceiver().receive(engine, Push(7), payload)
    assert isinstance(got, Loaded) and got.version == 7
    assert torch.equal(engine.state["b.bias"], weights()["b.bias"])


def test_the_adapter_pair_gives_each_version_its_own_folder():
    receiver, engine = AdapterReceiver(), FakeEngine()
    for version in (1, 2):
        files = AdapterSender().send(FakeSource(weights()), Push(version))
        assert receiver.receive(engine, Push(version), files).version == version
    assert engine.adapters == [("v1", True), ("v2", True)]
    assert not (Path(receiver.root) / "v1").exists()  # the previous version is removed


def test_a_role_names_an_order_it_has_no_handler_for():
    with pytest.raises(TypeError, match="StateReceiver has no handler for Resend"):
        StateReceiver().receive(FakeEngine(), Resend())


def test_the_collective_pair_over_a_gloo_group_of_two_threads():
    sender = CollectiveSender("gloo", timeout_s=20, bucket_mb=1, keep=True)
    receiver, engine = CollectiveReceiver(0, "gloo", timeout_s=20), FakeEngine()
    source = FakeSource(weights())
    host, port = sender.send(source, Host())
    got = {}

    def engine_side(order):
        got["answer"] = receiver.receive(engine, order)

    def both(send_order, receive_order):
        t = threading.Thread(target=engine_side, args=(receive_order,))
        t.start()
        answer = sender.send(source, send_order)
        t.join(30)
        return answer, got["answer"]

    joined = both(Join(host, port, 2), Join(host, port, 2, rank=1))
    assert joined[0] is True and isinstance(joined[1], int)  # the engine's pid
    sent, loaded = both(Push(1), Push(1))
    assert "transfer_s" in sent and loaded.version == 1
    assert torch.equal(engine.state["a.weight"], weights()["a.weight"])
    source.weights = weights(1)  # the policy trains on; a resend is the kept copy
    _, again = both(Resend(), Push(1))
    assert torch.equal(engine.state["a.weight"], weights()["a.weight"])
    assert again.version == 1
    sender.close()
    receiver.close()


# ------------------------------------------------------------------ the actors' surface


def public_methods(path: str, cls: str) -> set[str]:
    tree = ast.parse((ROOT / path).read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    return {f.name for f in node.body if isinstance(f, ast.FunctionDef) and f.name[0] != "_"}


REFIT_WORDS = ("refit", "weight", "adapter", "gather", "transfer", "group")


@pytest.mark.parametrize(
    ("path", "cls", "refit"),
    [
        ("envhub/trainer/workers/cluster.py", "PolicyWorker", {"send", "close"}),
        ("envhub/trainer/workers/generation.py", "GenerationWorker", {"receive", "close"}),
    ],
)
def test_an_actor_exposes_only_send_receive_and_close_for_refit(path, cls, refit):
    methods = public_methods(path, cls)
    assert refit <= methods
    assert [m for m in methods if any(w in m for w in REFIT_WORDS)] == []


def test_no_actor_or_refit_role_probes_its_own_attributes_or_what_it_holds():
    found = []
    for folder in ("workers", "refit"):
        for path in (ROOT / "envhub" / "trainer" / folder).glob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if (
                    isinstance(node, ast.Call)
                    and getattr(node.func, "id", None) in ("getattr", "hasattr")
                    and ast.unparse(node.args[0]).split(".")[0] == "self"
                ):
                    found.append(f"{path.name}:{node.lineno}")
    assert found == []
