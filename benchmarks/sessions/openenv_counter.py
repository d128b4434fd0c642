"""The trivial counter tool as an OpenEnv environment (``openenv-core``), served by OpenEnv's own
FastAPI app over its WebSocket protocol: ``python openenv_counter.py PORT``.

Each WebSocket session gets its own in-process ``CounterEnv`` (``SUPPORTS_CONCURRENT_SESSIONS``),
so sessions are separate Python objects in one server process, not isolated from each other.
"""

from __future__ import annotations

import sys
from typing import Any

import uvicorn
from openenv.core.env_server import Action, Environment, Observation, State, create_fastapi_app


class CounterAction(Action):
    """Add ``delta`` to the counter."""

    delta: int = 1


class CounterObservation(Observation):
    """The counter after the step."""

    count: int = 0


class CounterEnv(Environment):
    """One counter per session: ``reset`` sets it to 0, ``step`` adds ``delta`` and returns it."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self) -> None:
        super().__init__()
        self._state = State(episode_id="", step_count=0)
        self.count = 0

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> CounterObservation:
        """Start over at 0."""
        self.count = 0
        self._state = State(episode_id=episode_id or "", step_count=0)
        return CounterObservation(count=0)

    def step(self, action: CounterAction, timeout_s: float | None = None, **kwargs: Any) -> CounterObservation:  # type: ignore[override]
        """Add the action's delta."""
        self.count += action.delta
        self._state.step_count += 1
        return CounterObservation(count=self.count, reward=float(self.count))

    @property
    def state(self) -> State:
        """Episode id and step count."""
        return self._state


app = create_fastapi_app(CounterEnv, CounterAction, CounterObservation, max_concurrent_envs=4096)

if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", ws_max_size=16 * 1024 * 1024)
