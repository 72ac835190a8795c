"""The games' environments: Wordle, Sokoban and Connect Four (the catalog's entry points).

Each game's rules, parser, state and generator live in its own module (``wordle.py``,
``sokoban.py`` + ``sokoban_level.py``, ``connect4.py`` + ``connect4_engine.py``), whose
docstring gives the rules as played and the reward components; the shared episode machinery
(seeded task generation, turn accounting, refusals) is in ``base.py``.
"""

from __future__ import annotations

import random
import zlib
from typing import Any, ClassVar

from envhub.core import Episode, Feedback
from envhub.errors import ConfigError, GoldAnswerError
from envhub.spec import EnvSpec
from envhub.types import Message, Task

from . import connect4, sokoban, wordle
from . import connect4_engine as c4
from . import sokoban_level as sk
from .base import GameEnv, check_range, episode_rng
from .connect4 import OFF_BOARD, Connect4State, parse_column
from .sokoban import SokobanState, parse_moves
from .wordle import SHOWN_CHARS, WordleState, feedback, parse_guess, shown, word_lists


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
            prompt=wordle.RULES.format(max_guesses=self.max_guesses),
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


class SokobanEnv(GameEnv):
    """Sokoban on generated levels; see the module docstring for rules and options."""

    components = frozenset({"solved", "efficiency", "format"})
    primary_component = "solved"
    game: ClassVar[str] = "sokoban"
    default_size: ClassVar[int] = 100

    def __init__(self, spec: EnvSpec, max_moves: int = 100, end_on_deadlock: bool = True) -> None:
        """Check the options."""
        check_range(spec.name, "max_moves", max_moves, 1)
        super().__init__(spec, max_moves=max_moves, end_on_deadlock=end_on_deadlock)
        self.max_moves = int(max_moves)
        self.end_on_deadlock = bool(end_on_deadlock)

    def make_task(self, rng: random.Random, index: int, split: str) -> Task:
        """One generated level; its shortest solution is the task's answer."""
        opt = {
            "width": self.generator_option("width", 8),
            "height": self.generator_option("height", 8),
            "boxes": self.generator_option("boxes", 2),
            "min_moves": self.generator_option("min_moves", 8),
        }
        if min(opt["width"], opt["height"]) < 4 or opt["boxes"] < 1:
            raise ConfigError(
                f"{self.spec.name}: dataset.options needs width and height >= 4 (walls "
                f"included) and boxes >= 1, got {opt}"
            )
        try:
            level, solution = sk.generate(rng, **opt)
        except ValueError as e:
            raise ConfigError(f"{self.spec.name}: dataset.options {opt}: {e}") from e
        board = sk.render(level.board, level.start)
        return Task(
            task_id=f"sokoban-{split}-{self.spec.dataset.seed}-{index:04d}",
            prompt=sokoban.RULES.format(board=board),
            answer=solution,
            metadata={"level": board, "optimal_moves": len(solution)},
        )

    def task_from_gold(self, gold: str) -> Task:
        """A task for a level given in the text form (its solution is found by BFS)."""
        return self._level_task(gold, "sokoban-adhoc")

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A task from a row of a level file (``dataset.kind: jsonl``).

        Rows hold ``level`` (the text form) and optionally ``task_id``; the prompt and the
        shortest solution are made here.
        """
        if not isinstance(row.get("level"), str):
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r} has no 'level' text "
                f"(columns: {sorted(row)}); give each row the level in the text form"
            )
        return self._level_task(
            row["level"], str(row.get("task_id", f"sokoban-{split}-{index:04d}"))
        )

    def _level_task(self, text: str, task_id: str) -> Task:
        try:
            level = sk.parse(text)
        except ValueError as e:
            raise ConfigError(f"{self.spec.name}: level {task_id} is not readable: {e}") from e
        solution = sk.solve(level.board, level.start)
        if solution is None:
            raise ConfigError(f"{self.spec.name}: level {task_id} has no solution (BFS)")
        board = sk.render(level.board, level.start)
        return Task(
            task_id=task_id,
            prompt=sokoban.RULES.format(board=board),
            answer=solution,
            metadata={"level": board, "optimal_moves": len(solution)},
        )

    def init_state(self, episode: Episode) -> SokobanState:
        """The task's level at its start."""
        task = episode.task
        try:
            level = sk.parse(task.metadata["level"])
        except (KeyError, ValueError) as e:
            raise GoldAnswerError(f"task {task.task_id} has no readable level: {e}") from e
        optimal = int(task.metadata.get("optimal_moves") or len(task.answer or "")) or 1
        board = level.board
        return SokobanState(board, level.start, optimal, sk.live_cells(board))

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Play the message's moves in order, stopping at the first blocked one."""
        state: SokobanState = episode.state
        hint = "Send moves as <moves>U D L R</moves>, e.g. <moves>R R U</moves>."
        try:
            moves = parse_moves(message.content)
        except ValueError as e:
            state.turns.record(False)
            return self.invalid(str(e), f"{self._board(state)}\n{hint}")
        if not moves:
            state.turns.record(False)
            return self.invalid("no moves found", f"{self._board(state)}\n{hint}")
        played, error = self._play(state, moves)
        state.turns.record(error is None)
        text = self._report(state, played, moves, error)
        if state.outcome != "playing":
            return Feedback(
                messages=[Message(role="user", content=text)],
                done=True,
                components=self._components(state),
                info=self._info(state),
            )
        if error is not None:
            return self.invalid(error, f"{text}\n{hint}", headline=False, **self._info(state))
        return Feedback(messages=[Message(role="user", content=text)], info=self._info(state))

    def _play(self, state: SokobanState, moves: str) -> tuple[int, str | None]:
        """Play ``moves``; returns how many were played and the error that stopped them."""
        for i, step in enumerate(moves):
            try:
                state.pos, pushed = sk.move(state.board, state.pos, step)
            except sk.Blocked as e:
                return i, f"move {i + 1} ({step}) {e}"
            state.moves += 1
            state.pushes += pushed
            if sk.solved(state.board, state.pos):
                state.outcome = "solved"
            elif (
                pushed
                and self.end_on_deadlock
                and sk.deadlocked(state.board, state.pos, state.live)
            ):
                state.outcome = "deadlock"
            elif state.moves >= self.max_moves:
                state.outcome = "out_of_moves"
            if state.outcome != "playing":
                return i + 1, None
        return len(moves), None

    def _report(self, state: SokobanState, played: int, moves: str, error: str | None) -> str:
        lines = [f"Played {played} of {len(moves)} move(s): {moves[:played] or '-'}."]
        if error:
            lines.append(f"Stopped: {error}; the rest of the message was ignored.")
        lines.append(self._board(state))
        ending = {
            "solved": f"Solved in {state.moves} moves (shortest: {state.optimal}).",
            "deadlock": "A box is stuck where it can never reach a goal: the level is lost.",
            "out_of_moves": f"Out of moves ({self.max_moves}): the level is lost.",
        }
        if state.outcome in ending:
            lines.append(ending[state.outcome])
        return "\n".join(lines)

    def _board(self, state: SokobanState) -> str:
        left = sum(b not in state.board.goals for b in state.pos.boxes)
        return (
            f"{sk.render(state.board, state.pos)}\n"
            f"Boxes off goal: {left}. Moves used: {state.moves}/{self.max_moves}."
        )

    def _components(self, state: SokobanState) -> dict[str, float]:
        won = state.outcome == "solved"
        efficiency = min(1.0, state.optimal / state.moves) if won and state.moves else 0.0
        return {"solved": float(won), "efficiency": efficiency, "format": state.turns.format}

    def _info(self, state: SokobanState) -> dict[str, Any]:
        return {
            "board": sk.render(state.board, state.pos),
            "moves": state.moves,
            "pushes": state.pushes,
            "outcome": state.outcome,
        }

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """Out of turns before the level was solved."""
        return self._components(episode.state)

    def reference_action(self, episode: Episode) -> Message | None:
        """A shortest solution from the current position (BFS); ``None`` if there is none."""
        state: SokobanState = episode.state
        solution = sk.solve(state.board, state.pos)
        if not solution:
            return None
        return Message(role="assistant", content=f"<moves>{' '.join(solution)}</moves>")


class Connect4Env(GameEnv):
    """Connect Four against a negamax opponent; see the module docstring."""

    components = frozenset({"win", "draw", "loss", "efficiency", "format"})
    primary_component = "win"
    game: ClassVar[str] = "connect4"

    def __init__(
        self,
        spec: EnvSpec,
        opponent_depth: int = 2,
        opponent_epsilon: float = 0.1,
        reference_budget: int = 8000,
    ) -> None:
        """Check the opponent's settings.

        Args:
            spec: The catalog entry.
            opponent_depth: Plies the opponent searches (1: its own immediate wins and a
                heuristic; 2: also blocks the model's immediate wins; each ply costs several
                times more time, for the opponent and for the reference planner).
            opponent_epsilon: Probability that the opponent plays a random legal move.
            reference_budget: Simulated opponent replies the reference planner may spend.
        """
        check_range(spec.name, "opponent_depth", opponent_depth, 1, 8)
        check_range(spec.name, "opponent_epsilon", opponent_epsilon, 0.0, 1.0)
        check_range(spec.name, "reference_budget", reference_budget, 1)
        super().__init__(
            spec,
            opponent_depth=opponent_depth,
            opponent_epsilon=opponent_epsilon,
            reference_budget=reference_budget,
        )
        self.opponent = c4.Opponent(depth=int(opponent_depth), epsilon=float(opponent_epsilon))
        self.reference_budget = int(reference_budget)

    def make_task(self, rng: random.Random, index: int, split: str) -> Task:
        """An opening of 0-3 random discs; the model moves next."""
        board = c4.Board()
        opening = []
        for _ in range(rng.randrange(4)):
            col = rng.choice(sorted(board.legal()))
            board = board.play(col)
            opening.append(col + 1)
        task_id = f"connect4-{split}-{self.spec.dataset.seed}-{index:04d}"
        return self._opening_task(opening, rng.randrange(2**31), task_id)

    def row_to_task(self, row: dict[str, Any], index: int, split: str) -> Task:
        """A task from a row of an openings file (``dataset.kind: jsonl``).

        Rows hold ``opening`` (1-based columns, as a list or a string such as ``"4433"``),
        and optionally ``seed`` and ``task_id``.
        """
        raw = row.get("opening", [])
        try:
            opening = [int(c) for c in raw]
        except (TypeError, ValueError) as e:
            raise ConfigError(
                f"{self.spec.name}: row {index} of split {split!r}: opening {raw!r} must be "
                "columns 1-7, as a list or a string like '4433'"
            ) from e
        task_id = str(row.get("task_id", f"connect4-{split}-{index:04d}"))
        return self._opening_task(opening, int(row.get("seed", index)), task_id)

    def _opening_task(self, opening: list[int], seed: int, task_id: str) -> Task:
        board = connect4.replay(opening, task_id)
        first, second = ("X", "O") if len(opening) % 2 == 0 else ("O", "X")
        status = "Your move." if opening else "You move first."
        return Task(
            task_id=task_id,
            prompt=connect4.RULES.format(
                me="X", them="O", board=c4.render(board, first, second), status=status
            ),
            metadata={"opening": opening, "seed": seed},
        )

    def init_state(self, episode: Episode) -> Connect4State:
        """The board after the task's opening; the opponent's dice from task and seed."""
        try:
            board = connect4.replay(episode.task.metadata.get("opening", []), episode.task.task_id)
        except ConfigError as e:
            raise GoldAnswerError(str(e)) from e
        rng = episode_rng(episode.task, episode.seed)
        return Connect4State(board, board.moves % 2 == 0, self.opponent, rng)

    def env_response(self, episode: Episode, message: Message) -> Feedback:
        """Drop the model's disc, then the opponent's, and show the board."""
        state: Connect4State = episode.state
        col = parse_column(message.content)
        error = self._check(state.board, col)
        state.turns.record(error is None)
        if error is not None:
            hint = f"{self._render(state)}\nReply with <move>COLUMN</move>, a column from 1 to 7."
            return self.invalid(error, hint, board=self._render(state))
        assert col is not None
        lines = [f"You played column {col}."]
        state.board = self._drop(state, col - 1, "win")
        state.my_moves += 1
        if state.outcome == "playing":
            reply = state.opponent.choose(state.board, state.rng)
            state.board = self._drop(state, reply, "loss")
            lines.append(f"Your opponent played column {reply + 1}.")
        ending = {
            "win": "You win!",
            "loss": "Your opponent wins.",
            "draw": "The board is full: draw.",
        }
        lines.append(self._render(state))
        lines.append(ending.get(state.outcome, "Your move."))
        text = "\n".join(lines)
        if state.outcome == "playing":
            return Feedback(messages=[Message(role="user", content=text)], info=self._info(state))
        return Feedback(
            messages=[Message(role="user", content=text)],
            done=True,
            components=self._components(state),
            info=self._info(state),
        )

    def _check(self, board: c4.Board, col: int | None) -> str | None:
        if col is None:
            return "no column found; end your message with <move>COLUMN</move>"
        if col >= OFF_BOARD:
            return f"that number is far off the board; columns are 1 to {c4.WIDTH}"
        if not 1 <= col <= c4.WIDTH:
            return f"column {col} is off the board; columns are 1 to {c4.WIDTH}"
        if not board.can_play(col - 1):
            return f"column {col} is full"
        return None

    def _drop(self, state: Connect4State, col: int, if_wins: str) -> c4.Board:
        if state.board.wins(col):
            state.outcome = if_wins
        after = state.board.play(col)
        if state.outcome == "playing" and after.full:
            state.outcome = "draw"
        return after

    def _render(self, state: Connect4State) -> str:
        first, second = state.marks
        return c4.render(state.board, first, second)

    def _components(self, state: Connect4State) -> dict[str, float]:
        won = state.outcome == "win"
        efficiency = max(0.0, min(1.0, 1 - (state.my_moves - 4) / 17)) if won else 0.0
        return {
            "win": float(won),
            "draw": float(state.outcome == "draw"),
            "loss": float(state.outcome == "loss"),
            "efficiency": efficiency,
            "format": state.turns.format,
        }

    def _info(self, state: Connect4State) -> dict[str, Any]:
        return {"board": self._render(state), "outcome": state.outcome, "my_moves": state.my_moves}

    def on_truncate(self, episode: Episode) -> dict[str, float]:
        """What the board says when the game is cut short (reported in ``info.measured``)."""
        return self._components(episode.state)

    def reference_action(self, episode: Episode) -> Message:
        """A move of a line that beats this opponent, found by simulating its exact replies.

        The plan is made once (:func:`~envhub.envs.games.connect4_engine.plan_win`) and followed
        while the game goes as simulated. If no winning line is found within ``reference_budget``
        replies, the best move of a deeper search than the opponent's is played instead.
        """
        state: Connect4State = episode.state
        key = (state.board.mask, state.board.cur)
        if key not in state.plan:
            self._make_plan(state)
        col = state.plan.get(key)
        if col is None:
            depth = state.opponent.depth + 2
            values = c4.move_values(state.board, depth)
            col = max(values, key=lambda c: values[c])
        return Message(role="assistant", content=f"<move>{col + 1}</move>")

    def _make_plan(self, state: Connect4State) -> None:
        line = c4.plan_win(state.board, state.opponent, state.rng, budget=self.reference_budget)
        if line is None:
            return
        board, sim = state.board, random.Random()
        sim.setstate(state.rng.getstate())
        for col in line:
            state.plan[(board.mask, board.cur)] = col
            if board.wins(col):
                break
            board = board.play(col)
            board = board.play(state.opponent.choose(board, sim))
