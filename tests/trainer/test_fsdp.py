"""FSDP2 on 2 gloo processes computes the same update as one unsharded process."""

import socket

import pytest
import torch
import torch.multiprocessing as mp

from envhub.trainer.algo.batch import Sample, assign_weights, shard
from envhub.trainer.algo.grpo import LossConfig
from envhub.trainer.config import OptimConfig

OPTIM = OptimConfig(lr=1e-3)


def make_samples(n=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(n):
        length = 8 + i
        tokens = torch.randint(10, 1000, (length,), generator=g).tolist()
        mask = [0] * 4 + [1] * (length - 4)
        lp = [(-1.0 - 0.1 * j) if m else 0.0 for j, m in enumerate(mask)]
        out.append(Sample(tokens, mask, lp, advantage=float(i % 3) - 1.0))
    assign_weights(out, "token_mean", norm_len=16)
    return out


def make_policy(path, rank=0, world=1):
    from envhub.trainer.workers.policy import Policy

    return Policy(
        str(path),
        rank=rank,
        world_size=world,
        optim=OPTIM,
        loss=LossConfig(kl_beta=0.0),
        total_optim_steps=4,
        temperature=1.0,
        micro_batch_size=2,
        dtype="float32",
        seed=0,
        pack=True,
        fused=True,
    )


def _worker(rank, world, port, path, queue):
    torch.set_num_threads(1)
    from envhub.trainer.workers.policy import init_distributed

    init_distributed(rank, world, "127.0.0.1", port, "gloo")
    policy = make_policy(path, rank, world)
    shards = shard(make_samples(), world, policy.pad_id)
    stats = policy.train([shards[rank]])
    state = policy.full_state_dict()
    # numpy arrays pickle by value; tensors would share file descriptors that die with this
    # process, racing the parent's read
    queue.put((rank, stats, {k: v.numpy().copy() for k, v in state.items()} if rank == 0 else None))
    import torch.distributed as dist

    dist.barrier()
    dist.destroy_process_group()


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.slow
def test_fsdp2_two_gloo_ranks_match_unsharded(tiny_path):
    ref = make_policy(tiny_path)
    ref_stats = ref.train([make_samples()])
    ref_state = ref.full_state_dict()

    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = free_port()
    procs = [
        ctx.Process(target=_worker, args=(r, 2, port, str(tiny_path), queue)) for r in range(2)
    ]
    for p in procs:
        p.start()
    got = dict((r, (st, sd)) for r, st, sd in (queue.get(timeout=120) for _ in range(2)))
    (stats0, state), (stats1, _) = got[0], got[1]
    state = {k: torch.from_numpy(v) for k, v in state.items()}
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    # each rank holds half the batch: the losses are partial sums of the whole; norm is global
    assert stats0["loss"] + stats1["loss"] == pytest.approx(ref_stats["loss"], rel=1e-5)
    assert stats0["n_tokens"] + stats1["n_tokens"] == ref_stats["n_tokens"]
    assert stats0["grad_norm"] == pytest.approx(ref_stats["grad_norm"], rel=1e-4)
    assert set(state) == set(ref_state)
    # Ranks pack different micro-batches, so sums round differently; Adam's m/sqrt(v) turns
    # a rounding-level gradient difference on a near-zero gradient into up to ~lr of update.
    for k in ref_state:
        torch.testing.assert_close(state[k], ref_state[k], rtol=1e-4, atol=2e-5)
    changed = max(
        (ref_state[k] - make_policy(tiny_path).full_state_dict()[k]).abs().max() for k in ref_state
    )
    assert changed > 1e-5  # the update did something


def test_policy_logprobs_match_a_plain_forward(tiny_path):
    policy = make_policy(tiny_path)
    samples = make_samples()
    for s, lp in zip(samples, policy.logprobs(samples), strict=True):
        with torch.no_grad():
            logits = policy.model(torch.tensor([s.tokens])).logits[0, :-1].float()
        full = torch.log_softmax(logits, -1).gather(-1, torch.tensor(s.tokens[1:])[:, None])[:, 0]
        policy_tokens = torch.tensor(s.loss_mask[1:]).bool()
        assert len(lp) == len(s.tokens) - 1
        torch.testing.assert_close(torch.tensor(lp)[policy_tokens], full[policy_tokens])


def test_one_update_raises_the_surrogate_objective(tiny_path):
    policy = make_policy(tiny_path)
    samples = make_samples()
    before = policy.logprobs(samples)
    policy.train([samples])
    after = policy.logprobs(samples)
    # to first order the update raises sum_t w_t * A * logp_t, the objective it descends on
    gain = sum(
        s.advantage * w * (a - b)
        for s, la, lb in zip(samples, after, before, strict=True)
        for a, b, w in zip(la, lb, s.weights_targets, strict=True)
    )
    assert gain > 0
