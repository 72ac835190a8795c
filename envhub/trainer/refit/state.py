"""The pairs that move a whole state dict in one piece: in process, and through Ray's object store.

- ``in_process`` (colocated transformers engines): every rank gathers the full weights and its
  :class:`InProcessSender` loads them into the engine in the same process; no copy through Ray
  or disk.
- ``object_store``: every rank gathers; :class:`StateSender` on rank 0 answers with a CPU copy,
  which becomes one object in Ray's object store (never fetched by the driver), and each
  engine's :class:`StateReceiver` loads it in place.
- ``adapter`` (LoRA on vLLM engines over the object store): :class:`AdapterSender` answers
  with ``peft``'s adapter files (a few MB); :class:`AdapterReceiver` writes them to a new
  folder per version and has the engine serve them on every request.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from envhub.trainer.refit.base import Loaded, Push, Source, unknown


def load_into_engine(engine: Any, state: Mapping[str, torch.Tensor]) -> float:
    """In-process refit: copy ``state`` into ``engine``'s weights; returns seconds."""
    t0 = time.perf_counter()
    engine.load_state_dict(state)
    return time.perf_counter() - t0


class InProcessSender:
    """A colocated rank: gather, then load into the engine of this same process."""

    def send(self, source: Source, order: Any) -> float:
        """:class:`Push`: the rank's seconds (gather and load). Collective."""
        if not isinstance(order, Push):
            raise unknown(self, order)
        t0 = time.perf_counter()
        engine = source.engine()
        if engine is not None:
            load_into_engine(engine, source.state())
        return time.perf_counter() - t0

    def close(self) -> None:
        """Nothing to leave."""


class StateSender:
    """A rank of the object-store pair: rank 0 answers with the full weights on CPU."""

    def send(self, source: Source, order: Any) -> dict[str, torch.Tensor] | None:
        """:class:`Push`: rank 0's CPU copy (Ray stores it once), None on other ranks."""
        if not isinstance(order, Push):
            raise unknown(self, order)
        state = source.state()
        if source.rank != 0:
            return None
        return {k: v.detach().to("cpu").contiguous() for k, v in state.items()}

    def close(self) -> None:
        """Nothing to leave."""


class StateReceiver:
    """An engine of the object-store pair: loads the state dict Ray resolved."""

    def receive(self, engine: Any, order: Any, payload: Any = None) -> Loaded:
        """:class:`Push` with the state dict as ``payload``; answers the load's seconds."""
        if not isinstance(order, Push):
            raise unknown(self, order)
        return Loaded(order.version, load_into_engine(engine, payload))

    def close(self) -> None:
        """Nothing to leave."""


class AdapterSender:
    """A rank of the adapter pair: rank 0 answers with the LoRA adapter's files."""

    def send(self, source: Source, order: Any) -> dict[str, bytes] | None:
        """:class:`Push`: ``peft``'s files from rank 0, None on other ranks. Collective."""
        if not isinstance(order, Push):
            raise unknown(self, order)
        return source.adapter()

    def close(self) -> None:
        """Nothing to leave."""


def write_adapter(files: Mapping[str, bytes], directory: str | Path) -> Path:
    """Write an adapter's files (name -> contents) into ``directory`` (created); returns it."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / Path(name).name).write_bytes(data)
    return directory


class AdapterReceiver:
    """An engine of the adapter pair: each version in a new folder, the previous one removed.

    vLLM caches adapters by id, so every version gets the next id and folder.
    """

    def __init__(self) -> None:
        """No folder yet: the first adapter makes a private temp dir."""
        self.root: str | None = None
        self.count = 0

    def receive(self, engine: Any, order: Any, payload: Any = None) -> Loaded:
        """:class:`Push` with the adapter's files as ``payload``; answers seconds."""
        if not isinstance(order, Push):
            raise unknown(self, order)
        t0 = time.perf_counter()
        if self.root is None:
            self.root = tempfile.mkdtemp(prefix="envhub-lora-")
        self.count += 1
        folder = write_adapter(payload, os.path.join(self.root, f"v{self.count}"))
        engine.load_adapter(folder, self.count)
        shutil.rmtree(os.path.join(self.root, f"v{self.count - 1}"), ignore_errors=True)
        return Loaded(order.version, time.perf_counter() - t0)

    def close(self) -> None:
        """Nothing to leave (the folder stays until the process ends, as before)."""
