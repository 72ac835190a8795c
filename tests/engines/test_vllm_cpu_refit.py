"""The CPU refit's weight assembly (envhub.engines.vllm_cpu_refit) on plain tensors, without vLLM.

The end-to-end refits (A -> B -> A -> B against transformers, flat buffers, partial state
dicts) are in test_vllm_engine.py.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from envhub.engines.vllm_cpu_refit import _assemble, _back_to_back, _Recorder  # noqa: E402

K = 8


def qkv_layer(**kw):
    """A stand-in for vLLM's QKVParallelLinear on one rank: q 16 rows, k and v 4 rows each."""
    fields = {
        "output_partition_sizes": [16, 4, 4],
        "input_size": K,
        "params_dtype": torch.float32,
        "tp_size": 1,
        "prefix": "model.layers.0.self_attn.qkv_proj",
    }
    return SimpleNamespace(**{**fields, **kw})


def shards(flat: bool):
    q, k, v = (torch.randn(n, K) for n in (16, 4, 4))
    if flat:  # as a collective transport delivers them: views of one buffer, back to back
        buf = torch.cat([q, k, v]).reshape(-1)
        q, k, v = (
            buf[: 16 * K].view(16, K),
            buf[16 * K : 20 * K].view(4, K),
            buf[20 * K :].view(4, K),
        )
    return q, k, v


def test_back_to_back_shards_are_packed_from_the_senders_memory():
    q, k, v = shards(flat=True)
    weight, owned = _assemble(qkv_layer(), [("q", q), ("k", k), ("v", v)], keep_plain=True)
    assert not owned and weight.data_ptr() == q.data_ptr()
    assert torch.equal(weight, torch.cat([q, k, v]))


def test_separate_shards_are_concatenated_in_shard_order_into_a_kept_buffer():
    q, k, v = shards(flat=False)
    layer = qkv_layer()
    weight, owned = _assemble(layer, [("v", v), ("q", q), ("k", k)], keep_plain=True)
    assert owned and torch.equal(weight, torch.cat([q, k, v]))
    again, _ = _assemble(layer, [("q", q + 1), ("k", k), ("v", v)], keep_plain=True)
    assert again.data_ptr() == weight.data_ptr()  # the buffer is reused, not reallocated
    _, _ = _assemble(fresh := qkv_layer(), [("q", q), ("k", k), ("v", v)], keep_plain=False)
    assert "_envhub_concat_buffer" not in fresh.__dict__


def test_a_whole_weight_is_used_as_given():
    w = torch.randn(24, K)
    layer = SimpleNamespace(
        output_partition_sizes=[24], input_size=K, params_dtype=torch.float32, tp_size=1
    )
    weight, owned = _assemble(layer, [(None, w)], keep_plain=True)
    assert weight is w and not owned


def test_a_missing_shard_is_refused_with_the_layers_name():
    q, k, _ = shards(flat=True)
    with pytest.raises(ValueError, match=r"qkv_proj shards \[0, 1\] of 3 \(missing \[2\]\)"):
        _assemble(qkv_layer(), [("q", q), ("k", k)], keep_plain=True)


@pytest.mark.parametrize(
    "layer, parts",
    [
        (qkv_layer(tp_size=2), None),  # tensor-parallel shards: the layer's own loader narrows
        (qkv_layer(), "bf16"),  # another dtype: the layer's own loader converts
        (qkv_layer(), "shape"),  # a wrong shape: the layer's own loader names it
        (qkv_layer(), "tuple"),  # a fused shard id vLLM routes itself
    ],
)
def test_what_the_fast_path_cannot_take_goes_to_the_layers_own_loader(layer, parts):
    q, k, v = shards(flat=True)
    given = [("q", q), ("k", k), ("v", v)]
    if parts == "bf16":
        given = [(s, t.bfloat16()) for s, t in given]
    elif parts == "shape":
        given[0] = ("q", torch.randn(15, K))
    elif parts == "tuple":
        given = [((0, 1), torch.cat([q, k])), ("v", v)]
    assert _assemble(layer, given, keep_plain=True) == (None, False)


def test_back_to_back_needs_one_storage_in_order():
    q, k, v = shards(flat=True)
    assert _back_to_back([q, k, v]) is not None
    assert _back_to_back([k, q, v]) is None
    assert _back_to_back([q, k.clone(), v]) is None
    assert _back_to_back([q, v]) is None  # a gap


def test_the_recorder_keeps_shard_ids_given_either_way():
    rec, t = _Recorder(), torch.zeros(1)
    rec(None, t)
    rec(None, t, "q")
    rec(None, t, loaded_shard_id=1)
    assert [s for s, _ in rec.parts] == [None, "q", 1]
