"""A toy OpenEnv environment served by openenv-core itself: guess the seed's word.

``python toy_openenv.py PORT [HOST]`` serves it on HOST:PORT (HOST: 127.0.0.1 unless given; its
image, ``tests/interop/test_openenv_image.py``, serves on 0.0.0.0 inside the container). The word of seed ``s`` is
``WORDS[s % 4]``; each guess is answered "correct", "earlier" or "later" (the word's place in
WORDS), with reward 1.0 for the right word and 0.0 otherwise; the episode ends on the right
word or after three guesses. An action that raises ("boom") is an execution error.
"""

from __future__ import annotations

import sys
from uuid import uuid4

import uvicorn
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, Observation, State

WORDS = ["apple", "berry", "cherry", "damson"]


class GuessAction(Action):
    word: str


class GuessObservation(Observation):
    feedback: str
    guesses: int


class GuessEnvironment(Environment):
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id=str(uuid4()), step_count=0)
        self.target = WORDS[0]

    def reset(self, seed=None, episode_id=None, **kwargs) -> GuessObservation:
        self._state = State(episode_id=episode_id or str(uuid4()), step_count=0)
        self.target = WORDS[(seed or 0) % len(WORDS)]
        return GuessObservation(feedback="guess a fruit", guesses=0, done=False, reward=None)

    def step(self, action: GuessAction, timeout_s=None, **kwargs) -> GuessObservation:
        if action.word == "boom":
            raise RuntimeError("the guess blew up")
        self._state.step_count += 1
        right = action.word == self.target
        if right:
            feedback = "correct"
        elif action.word in WORDS and WORDS.index(action.word) > WORDS.index(self.target):
            feedback = "earlier"
        else:
            feedback = "later"
        done = right or self._state.step_count >= 3
        n = self._state.step_count
        return GuessObservation(feedback=feedback, guesses=n, done=done, reward=float(right))

    @property
    def state(self) -> State:
        return self._state


app = create_app(GuessEnvironment, GuessAction, GuessObservation, env_name="guess")

if __name__ == "__main__":
    host = sys.argv[2] if len(sys.argv) > 2 else "127.0.0.1"
    uvicorn.run(app, host=host, port=int(sys.argv[1]), log_level="warning")
