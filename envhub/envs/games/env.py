"""What every game shares: lenient move extraction, seed streams and the game base class.

Each game's environment (the catalog's entry point) is a :class:`GameEnv` in a module of its
own: :mod:`.wordle_env`, :mod:`.sokoban_env`, :mod:`.connect4_env`.

A game is a multi-turn :class:`~envhub.core.TaskEnv`: the task holds everything needed to set
up the board (a secret word, a generated level, an opening), the opening prompt shows it, and
each assistant message is one move (or, for Sokoban, a sequence of moves). A message that
cannot be read as a move is answered with a message that says what was expected; the step is
flagged ``invalid_action`` and the game goes on. Rewards are sparse: all components are paid
on the step that ends the game (or on truncation, through :meth:`GameEnv.on_truncate`).
"""

from __future__ import annotations

import json
import random
import zlib
from dataclasses import dataclass
from typing import Any, ClassVar

from envhub.core import Feedback, TaskEnv
from envhub.errors import ConfigError
from envhub.spec import EnvSpec, check_dataset_knobs, knob_value
from envhub.tags import block_text, tag_blocks, without_thinking
from envhub.types import Message, Status, Task

_TASK_CACHE: dict[tuple[Any, ...], list[Task]] = {}
_TASK_CACHE_SIZE = 32
_SPLIT_SALT = {"train": 0, "test": 1_000_003, "validation": 2_000_029}


def split_rng(seed: int, split: str, index: int, salt: str) -> random.Random:
    """A generator for task ``index`` of ``split``: train and test never share a stream.

    Args:
        seed: The dataset seed (``dataset.seed`` in YAML).
        split: Split name; unknown names get a stream of their own from a CRC of the name.
        index: Task index within the split.
        salt: The game's name, so two games with the same seed do not mirror each other.
    """
    offset = _SPLIT_SALT.get(split, zlib.crc32(split.encode()))
    return random.Random(f"{salt}:{seed}:{offset}:{index}")


def episode_rng(task: Task, seed: int | None) -> random.Random:
    """Per-episode randomness (an opponent's dice) from the task and the reset seed.

    ``reset(task_id=...)`` without a seed is as reproducible as ``reset(seed=...)``: the stream
    then depends on the task alone.
    """
    return random.Random(f"{task.task_id}:{task.metadata.get('seed', 0)}:{seed}")


def last_tag(text: str, *tags: str) -> str | None:
    """Content of the last ``<tag>...</tag>`` of any of ``tags`` in ``text`` (case-insensitive).

    A final tag left open (``<guess>CRANE`` at the very end of a message) counts too. Linear in
    the text (:func:`envhub.tags.tag_blocks`): 20,000 unclosed tags cost milliseconds.
    """
    blocks = tag_blocks(text, *tags)
    closed = [b for b in blocks if b.closed]
    if blocks and not blocks[-1].closed and "<" not in block_text(text, blocks[-1]):
        return block_text(text, blocks[-1]).strip()
    return block_text(text, closed[-1]).strip() if closed else None


def strip_thinking(text: str) -> str:
    """``text`` without ``<think>`` blocks (an unclosed one runs to the end): never a move."""
    return without_thinking(text, " ")


@dataclass
class Turns:
    """Bookkeeping shared by the games: how many turns were readable moves."""

    total: int = 0
    valid: int = 0

    def record(self, ok: bool) -> None:
        """Count one assistant turn, valid or not."""
        self.total += 1
        self.valid += int(ok)

    @property
    def format(self) -> float:
        """Share of turns that were valid moves (1.0 before any turn)."""
        return self.valid / self.total if self.total else 1.0


class GameEnv(TaskEnv):
    """Base of the games: generated tasks, option checking and invalid-move answers."""

    game: ClassVar[str] = "game"
    """Short name, used to salt seeds and in task ids."""
    default_size: ClassVar[int] = 200
    """Tasks per split when ``dataset.size`` is not set."""

    def __init__(self, spec: EnvSpec, **options: Any) -> None:
        """Refuse ``dataset.options`` that are no knob of the game (or out of range)."""
        check_dataset_knobs(spec, self.difficulty_knobs(spec))
        super().__init__(spec, **options)

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """``size`` tasks of ``split``, each made by :meth:`make_task` from its own stream.

        Generated sets are cached per process (keyed by everything that shapes them), so the
        many instances a test run or a server makes generate each set once.
        """
        n = size or self.default_size
        key = (
            type(self).__qualname__,
            json.dumps(self.spec.dataset.options, sort_keys=True, default=str),
            json.dumps(self.options, sort_keys=True, default=str),
            split,
            n,
            seed,
        )
        if key not in _TASK_CACHE:
            tasks = [
                self.make_task(split_rng(seed, split, i, self.game), i, split) for i in range(n)
            ]
            while len(_TASK_CACHE) >= _TASK_CACHE_SIZE:
                _TASK_CACHE.pop(next(iter(_TASK_CACHE)))
            _TASK_CACHE[key] = tasks
        return list(_TASK_CACHE[key])

    def make_task(self, rng: random.Random, index: int, split: str) -> Task:
        """One task; ``rng`` is private to this task, so tasks are independent of ``size``."""
        raise NotImplementedError

    def generator_option(self, name: str) -> Any:
        """The entry's setting of the ``dataset.options`` knob ``name`` (or its default).

        Every setting there was checked against the declared :attr:`knobs` when the
        environment was made (:func:`~envhub.spec.check_dataset_knobs`).
        """
        knob = next(k for k in self.knobs if k.name == name and k.place == "dataset.options")
        return knob_value(self.spec, knob)

    def option_knob(self, name: str, value: Any) -> Any:
        """``value`` of the ``options`` knob ``name``, checked against its declaration."""
        knob = next(k for k in self.knobs if k.name == name and k.place == "options")
        return knob.check(self.spec.name, value)

    @staticmethod
    def invalid(error: str, text: str, *, headline: bool = True, **info: Any) -> Feedback:
        """Answer an unreadable or illegal move: flag ``invalid_action`` and play on.

        Args:
            error: What was wrong (also the step's ``info.error``).
            text: The rest of the reply (the board, how to answer).
            headline: Start the reply with ``Invalid move: <error>``; turn off when ``text``
                already says it.
            **info: Extra keys for the step's info.
        """
        content = f"Invalid move: {error}\n{text}" if headline else text
        return Feedback(
            messages=[Message(role="user", content=content)],
            status=Status.INVALID_ACTION,
            error=error,
            info=info,
        )


def check_range(env: str, name: str, value: Any, lo: float, hi: float | None = None) -> None:
    """Raise :class:`ConfigError` naming the option unless ``lo <= value (<= hi)``."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value >= lo
    if ok and hi is not None:
        ok = value <= hi
    if not ok:
        bound = f"between {lo} and {hi}" if hi is not None else f"at least {lo}"
        raise ConfigError(f"{env}: option {name} must be a number {bound}, got {value!r}")
