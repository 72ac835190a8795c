"""Refit over a torch collective group: ``generation.transport: gloo`` or ``nccl``.

The weight-transfer group is separate from the FSDP2 default process group: policy rank 0 is
group rank 0 and engine ``i`` is group rank ``i + 1``. Policy rank 0 hosts a
``torch.distributed.TCPStore`` on a free port of its node; every member wraps it in a
``PrefixStore`` and builds the backend directly (``ProcessGroupGloo`` or ``ProcessGroupNCCL``)
with ``generation.refit_timeout_s`` as its timeout: no ``init_process_group``, so the policy
workers keep their default group and the engines never get one.

A refit moves the full Hugging Face state dict in flat buckets of at most
``generation.bucket_mb`` MB each, one dtype per bucket (a tensor larger than a bucket is
split across several). A small header, the :class:`Layout` (names, shapes, dtypes, the
buckets and their pieces), goes once ahead of the first refit's buckets: shapes never change.
The sender holds the full state dict plus one bucket; the engines receive each bucket in place
into a state dict that is views of one flat buffer per dtype (:func:`flat_state`), and load it
with their own ``load_state_dict`` (the vLLM CPU repack is handled there).

``gloo`` moves CPU tensors and works anywhere; ``nccl`` is the same code on CUDA tensors
(NeMo RL's way on GPU clusters) and is refused when a member has no CUDA device.

A formed group cannot admit a new process, so a generation engine that Ray restarts is let in
by forming the group again: every member leaves the old one (:meth:`RefitGroup.close` drops
the backend, which closes its connections, so a member still waiting on a broadcast from a
dead peer fails at once instead of at the timeout), policy rank 0 hosts a new store on a new
port, and every member joins under the next *generation*'s key prefix
(``envhub-refit/<generation>``). :class:`envhub.trainer.refit.syncs.CollectiveSync` drives this,
through the roles in :mod:`envhub.trainer.refit.collective_pair`.
"""

from __future__ import annotations

import datetime
import gc
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from typing import Any

import torch

from envhub.trainer.config import TrainConfigError

GROUP_PREFIX = "envhub-refit"
"""Key prefix of the weight-transfer group in its store (``envhub-refit/<generation>``)."""


class RefitTransportError(RuntimeError):
    """The weight-transfer group failed (a dead or late member, a timeout)."""


# ------------------------------------------------------------------------------ layout


@dataclass(frozen=True)
class TensorSpec:
    """One entry of the state dict: name, shape, dtype, or the earlier entry it aliases."""

    name: str
    shape: tuple[int, ...]
    dtype: str
    """``str(torch.dtype)`` without the ``torch.`` prefix, e.g. ``float32``."""
    alias_of: str | None = None
    """Tied weights (``lm_head.weight`` and the embedding): sent once, shared on arrival."""


@dataclass(frozen=True)
class Piece:
    """A contiguous run of one tensor's elements inside one bucket."""

    name: str
    tensor_offset: int
    bucket_offset: int
    numel: int


@dataclass(frozen=True)
class Bucket:
    """One flat tensor on the wire: a single dtype, at most the bucket limit in bytes."""

    dtype: str
    numel: int
    pieces: tuple[Piece, ...]


@dataclass(frozen=True)
class Layout:
    """The header: every tensor of the state dict and the buckets that carry them."""

    tensors: tuple[TensorSpec, ...]
    buckets: tuple[Bucket, ...]

    def to_json(self) -> str:
        """The header as JSON (what goes on the wire: plain data, never pickle)."""
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Layout:
        """Inverse of :meth:`to_json`."""
        data = json.loads(text)
        tensors = tuple(TensorSpec(**{**t, "shape": tuple(t["shape"])}) for t in data["tensors"])
        buckets = tuple(
            Bucket(b["dtype"], b["numel"], tuple(Piece(**p) for p in b["pieces"]))
            for b in data["buckets"]
        )
        return cls(tensors, buckets)

    def check(self, state: Mapping[str, torch.Tensor]) -> None:
        """Raise ValueError if ``state`` does not have this layout's names and shapes."""
        want = {t.name: (t.shape, t.dtype) for t in self.tensors}
        got = {k: (tuple(v.shape), dtype_name(v.dtype)) for k, v in state.items()}
        if want != got:
            diff = sorted(set(want.items()) ^ set(got.items()))[:3]
            raise ValueError(f"the state dict no longer matches the refit layout (e.g. {diff})")


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def to_dtype(name: str) -> torch.dtype:
    """``"float32"`` -> ``torch.float32``."""
    return getattr(torch, name)


def tensor_specs(state: Mapping[str, torch.Tensor]) -> list[TensorSpec]:
    """Every entry of ``state``, in order, as a :class:`TensorSpec`.

    An entry that shares an earlier one's storage, shape and dtype (a tied weight) names it in
    ``alias_of``.
    """
    seen: dict[tuple[int, tuple[int, ...], str], str] = {}
    specs = []
    for name, t in state.items():
        key = (t.data_ptr(), tuple(t.shape), dtype_name(t.dtype))
        alias = seen.get(key) if t.numel() > 0 else None
        specs.append(TensorSpec(name, tuple(t.shape), dtype_name(t.dtype), alias))
        seen.setdefault(key, name)
    return specs


def plan_layout(state: Mapping[str, torch.Tensor], bucket_bytes: int) -> Layout:
    """Cut ``state`` into flat per-dtype buckets of at most ``bucket_bytes`` each.

    Tensors of one dtype form one stream of elements, in state-dict order; the stream is cut
    every ``bucket_bytes``, so a large tensor spans several buckets and no bucket exceeds the
    limit. Aliased tensors (tied weights) are not sent twice.

    Raises:
        ValueError: ``bucket_bytes`` smaller than one element.
    """
    specs = tensor_specs(state)
    by_dtype: dict[str, list[TensorSpec]] = {}
    for s in specs:
        if s.alias_of is None:
            by_dtype.setdefault(s.dtype, []).append(s)
    buckets: list[Bucket] = []
    for dtype, members in by_dtype.items():
        itemsize = torch.empty((), dtype=to_dtype(dtype)).element_size()
        capacity = bucket_bytes // itemsize
        if capacity < 1:
            raise ValueError(f"bucket of {bucket_bytes} bytes cannot hold one {dtype} element")
        buckets.extend(_cut_stream(dtype, members, capacity))
    return Layout(tuple(specs), tuple(buckets))


def _cut_stream(dtype: str, members: list[TensorSpec], capacity: int) -> Iterator[Bucket]:
    pieces: list[Piece] = []
    used = 0
    for spec in members:
        numel, done = _numel(spec.shape), 0
        while done < numel:
            take = min(numel - done, capacity - used)
            pieces.append(Piece(spec.name, done, used, take))
            done, used = done + take, used + take
            if used == capacity:
                yield Bucket(dtype, used, tuple(pieces))
                pieces, used = [], 0
    if pieces:
        yield Bucket(dtype, used, tuple(pieces))


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def cpu_copy(state: Mapping[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A copy of ``state`` on the CPU in which tied tensors stay one tensor (as in ``state``)."""
    copies: dict[tuple[int, tuple[int, ...], torch.dtype], torch.Tensor] = {}
    out = {}
    for name, t in state.items():
        key = (t.data_ptr(), tuple(t.shape), t.dtype)
        if key not in copies or t.numel() == 0:
            copies[key] = t.detach().to("cpu", copy=True)
        out[name] = copies[key]
    return out


def pack_bucket(state: Mapping[str, torch.Tensor], bucket: Bucket, out: torch.Tensor) -> None:
    """Copy ``bucket``'s pieces of ``state`` into the flat tensor ``out`` (may be reused)."""
    for p in bucket.pieces:
        src = state[p.name].detach().reshape(-1)[p.tensor_offset : p.tensor_offset + p.numel]
        out[p.bucket_offset : p.bucket_offset + p.numel].copy_(src)


def flat_state(
    layout: Layout, device: torch.device | str = "cpu"
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """A state dict for ``layout`` as views of one flat buffer per dtype, and those buffers.

    Each dtype's buffer is that dtype's stream, so bucket ``i`` of a dtype is the slice after
    the buckets before it: buckets can be received in place, with no copy. Tensors that follow
    each other in the state dict (``q``/``k``/``v``, ``gate``/``up``) lie back to back, which
    lets the vLLM-CPU refit pack merged layers straight from them
    (:mod:`envhub.engines.vllm_cpu_refit`).
    """
    sizes: dict[str, int] = {}
    for t in layout.tensors:
        if t.alias_of is None:
            sizes[t.dtype] = sizes.get(t.dtype, 0) + _numel(t.shape)
    flats = {d: torch.empty(n, dtype=to_dtype(d), device=device) for d, n in sizes.items()}
    at = dict.fromkeys(sizes, 0)
    out: dict[str, torch.Tensor] = {}
    for t in layout.tensors:
        if t.alias_of is not None:
            out[t.name] = out[t.alias_of]
            continue
        n = _numel(t.shape)
        out[t.name] = flats[t.dtype][at[t.dtype] : at[t.dtype] + n].view(t.shape)
        at[t.dtype] += n
    return out, flats


def bucket_slices(
    layout: Layout, flats: Mapping[str, torch.Tensor]
) -> Iterator[tuple[Bucket, torch.Tensor]]:
    """Each bucket of ``layout``, in sending order, with its slice of ``flats``.

    ``flats`` are :func:`flat_state`'s buffers: receiving into the slice is receiving into
    the state dict.
    """
    at = dict.fromkeys(flats, 0)
    for bucket in layout.buckets:
        start = at[bucket.dtype]
        at[bucket.dtype] = start + bucket.numel
        yield bucket, flats[bucket.dtype][start : start + bucket.numel]


# ------------------------------------------------------------------------------- group


def host_store(timeout_s: float) -> tuple[Any, int]:
    """Start the group's TCPStore on a free port of this node (policy rank 0).

    Returns:
        The store (keep it alive as long as the group) and its port.
    """
    from torch.distributed import TCPStore

    store = TCPStore(
        "0.0.0.0",
        0,
        None,
        True,
        datetime.timedelta(seconds=timeout_s),
        wait_for_workers=False,
    )
    return store, store.port


def transport_device(transport: str) -> torch.device:
    """Where the buckets live: CPU for gloo, this process's CUDA device for nccl.

    Raises:
        TrainConfigError: ``nccl`` without a CUDA device in this process.
    """
    if transport == "gloo":
        return torch.device("cpu")
    if transport != "nccl":
        raise TrainConfigError(f"no collective refit transport {transport!r}; use gloo or nccl")
    if not torch.cuda.is_available():
        raise TrainConfigError(
            "generation.transport=nccl needs a CUDA device in policy rank 0 and every engine "
            "(cluster.gpus_per_worker>0, generation.gpus_per_engine>0 on GPU nodes); this "
            "process has none: use generation.transport=gloo (CPU tensors, works anywhere) "
            "or object_store"
        )
    return torch.device("cuda", torch.cuda.current_device())


class RefitGroup:
    """This process's membership in the weight-transfer group (see the module docstring)."""

    def __init__(
        self,
        transport: str,
        host: str,
        port: int,
        rank: int,
        size: int,
        timeout_s: float,
        store: Any = None,
        generation: int = 0,
    ) -> None:
        """Join the group; blocks until all ``size`` members have joined.

        Args:
            transport: ``gloo`` or ``nccl``.
            host: the node of group rank 0, which hosts the store.
            port: the store's port (:func:`host_store`).
            rank: 0 for policy rank 0, ``i + 1`` for engine ``i``.
            size: number of engines + 1.
            timeout_s: deadline of the rendezvous and of every broadcast.
            store: rank 0 passes the store it hosts; the others connect to ``host:port``.
            generation: how many times the group was formed before (every member of one
                group passes the same number; see the module docstring).

        Raises:
            RefitTransportError: a member did not join within ``timeout_s``.
        """
        self.transport, self.rank, self.size = transport, rank, size
        self.generation = generation
        self.timeout = datetime.timedelta(seconds=timeout_s)
        self.device = transport_device(transport)
        try:
            if store is None:
                from torch.distributed import TCPStore

                store = TCPStore(host, port, None, False, self.timeout)
            self.store = store
            prefix = f"{GROUP_PREFIX}/{generation}"
            self.pg = self._backend(torch.distributed.PrefixStore(prefix, store))
        except Exception as e:  # DistStoreError, gloo/NCCL connection errors
            raise self.error(f"joining the group as rank {rank} of {size}", e) from e
        self.layout: Layout | None = None

    def _backend(self, store: Any) -> Any:
        dist = torch.distributed
        if self.transport == "nccl":
            opts = dist.ProcessGroupNCCL.Options()
            opts._timeout = self.timeout
            return dist.ProcessGroupNCCL(store, self.rank, self.size, opts)
        return dist.ProcessGroupGloo(store, self.rank, self.size, self.timeout)

    def error(self, what: str, cause: BaseException) -> RefitTransportError:
        """A :class:`RefitTransportError` naming the transport, the step and the fixes."""
        return RefitTransportError(
            f"refit over generation.transport={self.transport} failed while {what} "
            f"(timeout {self.timeout.total_seconds():.0f} s, generation.refit_timeout_s): "
            f"{type(cause).__name__}: {cause}. A member died or is stuck; check the engine "
            "actors' logs, or use generation.transport=object_store"
        )

    def broadcast(self, tensor: torch.Tensor, what: str = "broadcasting weights") -> None:
        """Broadcast ``tensor`` from group rank 0 in place, within the group's timeout."""
        opts = torch.distributed.BroadcastOptions()
        opts.rootRank = 0
        try:
            self.pg.broadcast([tensor], opts).wait(self.timeout)
        except Exception as e:
            raise self.error(what, e) from e

    def broadcast_text(self, text: str = "") -> str:
        """Rank 0 sends ``text`` (its length, then its UTF-8 bytes); every rank returns it."""
        data = text.encode() if self.rank == 0 else b""
        size = torch.tensor([len(data)], dtype=torch.int64, device=self.device)
        self.broadcast(size, "sending the header")
        payload = torch.empty(int(size.item()), dtype=torch.uint8, device=self.device)
        if self.rank == 0:
            payload.copy_(torch.frombuffer(bytearray(data), dtype=torch.uint8))
        self.broadcast(payload, "sending the header")
        return payload.cpu().numpy().tobytes().decode()

    def send_state(self, state: Mapping[str, torch.Tensor], bucket_bytes: int) -> None:
        """Rank 0: the header (first call only), then every bucket of ``state``."""
        if self.layout is None:
            self.layout = plan_layout(state, bucket_bytes)
            self.broadcast_text(self.layout.to_json())
        self.layout.check(state)
        with torch.no_grad():
            for bucket, flat in self._buffers():
                pack_bucket(state, bucket, flat)
                self.broadcast(flat)
        self._sync()

    def receive_state(self) -> dict[str, torch.Tensor]:
        """Engines: the header (first call only), then the buckets, as a full state dict."""
        if self.layout is None:
            self.layout = Layout.from_json(self.broadcast_text())
        dest, flats = flat_state(self.layout, self.device)
        with torch.no_grad():
            for _, place in bucket_slices(self.layout, flats):  # in place: no unpacking copy
                self.broadcast(place)
        self._sync()
        return dest

    def _buffers(self) -> Iterator[tuple[Bucket, torch.Tensor]]:
        """Each bucket, in sending order, with a flat buffer for it (one per dtype, reused)."""
        assert self.layout is not None
        sizes: dict[str, int] = {}
        for b in self.layout.buckets:
            sizes[b.dtype] = max(sizes.get(b.dtype, 0), b.numel)
        buffers: dict[str, torch.Tensor] = {}
        for b in self.layout.buckets:
            if b.dtype not in buffers:
                buffers[b.dtype] = torch.empty(
                    sizes[b.dtype], dtype=to_dtype(b.dtype), device=self.device
                )
            yield b, buffers[b.dtype][: b.numel]

    def _sync(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    def close(self) -> None:
        """Leave the group (best effort: the other members may be gone already).

        NCCL is aborted (``ProcessGroupNCCL.abort``: its communicators may be stuck on a dead
        peer), gloo shut down; then the backend object is dropped, which is what closes gloo's
        connections (``shutdown`` alone leaves them open: a peer waiting on a broadcast from
        this member would wait for its whole timeout).
        """
        pg, self.pg = self.pg, None
        if pg is not None:
            try:
                stop = pg.abort if self.transport == "nccl" else pg.shutdown
                stop()
            except Exception:  # noqa: BLE001 (a torn-down peer must not fail the shutdown)
                pass
        del pg
        gc.collect()  # a failed broadcast's work object may still hold the backend
        self.store = None
