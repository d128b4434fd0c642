"""A Gymnasium ``Env`` over ``envkernel serve``: ``envkernel.make(...)``.

    import envkernel
    env = envkernel.make("envkernel-out/RUN_ID")          # serves the run in a background thread
    env = envkernel.make(url="http://127.0.0.1:8000")  # or talks to a running `envkernel serve`
    obs, info = env.reset(seed=0)  # obs: JSON text (request, env_id, task_id, tools)
    call = {"tool": "get_product", "arguments": {"product_id": "prd_0001"}}
    obs, reward, terminated, truncated, info = env.step(call)
    # the answer ends it; reward = the task's check
    obs, reward, terminated, truncated, info = env.step({"answer": "home office"})

* **Observations** are JSON text (:class:`JsonText`): after ``reset`` the task's request and the
  tools; after a tool call ``{"tool_name", "result", "ok", "error"}``. Text is what an LLM policy
  reads, and nothing is cut off.
* **Actions** (:class:`ToolCallSpace`) are ``{"tool": NAME, "arguments": {...}}`` or ``{"answer":
  TEXT}``; a JSON string of either is accepted too. ``sample()`` draws a tool and arguments built
  from its schema's defaults (:mod:`envkernel_kit.argsgen`), seeded.
* **Reward**: 0.0 until the episode ends; then the task's check (trace + outcome). ``terminated``
  comes with an answer, ``truncated`` when the server's ``max_steps`` is reached.
* ``reset(seed=s)`` picks task ``s mod n`` (so a seeded reset is reproducible); ``options`` may
  name ``task_id`` or ``task_index``.

It passes ``gymnasium.utils.env_checker.check_env``.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
from gymnasium import spaces

from .client import Session, server_metadata

__all__ = ["EnvkernelEnv", "JsonText", "ToolCallSpace", "make", "register_envs"]


class JsonText(spaces.Space[str]):
    """Observations: any JSON text, of any length."""

    def __init__(self, seed: int | None = None) -> None:
        super().__init__(shape=None, dtype=None, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """An empty JSON object."""
        return "{}"

    def contains(self, x: Any) -> bool:
        """True for a string that is JSON."""
        if not isinstance(x, str):
            return False
        try:
            json.loads(x)
        except ValueError:
            return False
        return True

    def __repr__(self) -> str:
        return "JsonText()"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, JsonText)


class ToolCallSpace(spaces.Space[dict[str, Any]]):
    """Actions: ``{"tool": NAME, "arguments": {...}}`` for one of ``tools``, or
    ``{"answer": TEXT}``."""

    def __init__(self, tools: list[dict[str, Any]], seed: int | None = None) -> None:
        self.tools = {t["name"]: t for t in tools}
        super().__init__(shape=None, dtype=None, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        """A call of a random tool with arguments generated from its schema (deterministic for a
        seed)."""
        from envkernel_kit.argsgen import default_values

        names = sorted(self.tools)
        if not names:
            return {"answer": ""}
        name = names[int(self.np_random.integers(len(names)))]
        schema = self.tools[name].get("input_schema") or {}
        props = schema.get("properties") or {}
        args: dict[str, Any] = {}
        for arg in schema.get("required") or []:
            values = default_values(arg, props.get(arg) or {})
            if values:
                args[arg] = values[int(self.np_random.integers(len(values)))]
        return {"tool": name, "arguments": args}

    def contains(self, x: Any) -> bool:
        """True for a call of a known tool with an arguments object, or an answer."""
        if not isinstance(x, dict):
            return False
        if "answer" in x:
            return isinstance(x["answer"], str)
        return x.get("tool") in self.tools and isinstance(x.get("arguments", {}), dict)

    def __repr__(self) -> str:
        return f"ToolCallSpace({sorted(self.tools)})"

    def __eq__(self, other: Any) -> bool:
        return isinstance(other, ToolCallSpace) and other.tools == self.tools


def _action(action: Any) -> dict[str, Any]:
    if isinstance(action, (str, bytes)):
        try:
            action = json.loads(action)
        except ValueError:
            return {
                "type": "submit",
                "answer": action if isinstance(action, str) else action.decode(),
            }
    if not isinstance(action, dict):
        raise TypeError(
            f"an action is {{'tool': NAME, 'arguments': {{...}}}} or {{'answer': TEXT}}, got "
            f"{type(action).__name__}"
        )
    if "answer" in action and "tool" not in action and "tool_name" not in action:
        return {"type": "submit", "answer": str(action["answer"])}
    if action.get("type") in ("call_tool", "list_tools", "submit"):
        return action
    return {
        "type": "call_tool",
        "tool_name": action.get("tool") or action.get("tool_name"),
        "arguments": action.get("arguments") or {},
    }


class EnvkernelEnv(gym.Env[str, dict[str, Any]]):
    """One session of ``envkernel serve`` as a Gymnasium environment (see the module docstring)."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        url: str,
        *,
        env: str | None = None,
        render_mode: str | None = None,
        owned: Any = None,
        timeout: float = 120.0,
    ) -> None:
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, got "
                f"{render_mode!r}"
            )
        self.render_mode = render_mode
        self.url = url
        self.env_id = env
        """The one served environment this env plays (its tools, its tasks); None: any task of the
        server."""
        self._owned = owned
        tools: list[dict[str, Any]] | None = None
        if env is not None:
            served = {str(e["id"]): e for e in server_metadata(url).get("envs") or []}
            if env not in served:
                raise gym.error.Error(
                    f"the server at {url} serves no environment {env!r}; it serves "
                    f"{', '.join(served)}"
                )
            tools = served[env].get("tool_specs")
        self._session: Session | None = Session(url, timeout=timeout)
        self._tools = tools if tools is not None else self._session.tools()
        self.action_space = ToolCallSpace(self._tools)
        self.observation_space = JsonText()
        self._last = "{}"

    def _s(self) -> Session:
        if self._session is None:
            raise gym.error.Error("the environment is closed")
        return self._session

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        """Start an episode: the task ``seed mod n`` (or ``options["task_id"]`` /
        ``options["task_index"]``)."""
        super().reset(seed=seed)
        opts = dict(options or {})
        if seed is not None:
            opts.setdefault("seed", seed)
        if self.env_id is not None:
            opts.setdefault("env_id", self.env_id)
        data = self._s().reset(**opts)
        obs = data["observation"]
        self._tools = obs.get("tools", self._tools)
        view = {
            "request": obs.get("request", ""),
            "policy": obs.get("policy", ""),
            "env_id": obs.get("env_id"),
            "task_id": obs.get("task_id"),
            "tools": self._tools,
        }
        self._last = json.dumps(view, ensure_ascii=False)
        return self._last, {
            "task_id": obs.get("task_id"),
            "env_id": obs.get("env_id"),
            "request": obs.get("request", ""),
        }

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Run one tool call, or end the episode with ``{"answer": ...}``."""
        data = self._s().step(_action(action))
        obs = data["observation"]
        obs_view = {k: v for k, v in obs.items() if k != "metadata"}
        self._last = json.dumps(obs_view, ensure_ascii=False, default=str)
        done = bool(data.get("done"))
        truncated = bool(obs.get("truncated", False))
        reward = float(data["reward"]) if data.get("reward") is not None else 0.0
        info = {"ok": obs.get("ok"), "tool_name": obs.get("tool_name")}
        return self._last, reward, done and not truncated, truncated, info

    def render(self) -> str | None:
        """The last observation as text (``render_mode="ansi"``)."""
        return self._last if self.render_mode == "ansi" else None

    def close(self) -> None:
        """End the session; stop the server this env started, if any. Idempotent."""
        session, self._session = self._session, None
        if session is not None:
            session.close()
        owned, self._owned = self._owned, None
        if owned is not None:
            owned.stop()


def _quiet(level: str) -> None:
    """Keep the server's logs out of the caller's terminal: structlog at ``level`` (unless the
    caller configured structlog already), and uvicorn's loggers too."""
    import logging
    import os

    import structlog

    level = os.environ.get("ENVKERNEL_LOG_LEVEL") or level
    lvl = logging.getLevelNamesMapping().get(level.upper(), logging.WARNING)
    if not structlog.is_configured():
        from envkernel_bus.logs import configure

        configure(level=level)
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access"):
        logging.getLogger(name).setLevel(max(lvl, logging.getLogger(name).level))


def register_envs(
    url: str, *, namespace: str = "envkernel", max_episode_steps: int | None = None
) -> list[str]:
    """Register each environment the server at ``url`` serves with Gymnasium, as
    ``NAMESPACE/ENV_ID``.

    ``gymnasium.make("envkernel/bank")`` is then an :class:`EnvkernelEnv` of that environment alone
    (its tools; its tasks, ``reset(seed=s)`` picking the environment's task ``s mod n``), and
    ``gymnasium.make_vec("envkernel/bank", num_envs=4, vectorization_mode="sync")`` four of them,
    each its own session (its own sandbox). Returns the ids registered (registering again replaces
    them)."""
    meta = server_metadata(url)
    ids = []
    for e in meta.get("envs") or []:
        gym_id = f"{namespace}/{e['id']}"
        gym.registry.pop(gym_id, None)  # again: the server (its url) may have changed
        gym.register(
            id=gym_id,
            entry_point="envkernel_serve.gym:EnvkernelEnv",
            kwargs={"url": url, "env": str(e["id"])},
            max_episode_steps=max_episode_steps,
            disable_env_checker=True,
        )
        ids.append(gym_id)
    return ids


def make(
    target: str | None = None,
    *,
    url: str | None = None,
    tasks: str | None = None,
    runner: str = "process",
    sets: tuple[str, ...] = (),
    seed: int | None = None,
    max_steps: int = 64,
    render_mode: str | None = None,
    env: str | None = None,
    log_level: str = "warning",
) -> EnvkernelEnv:
    """A Gymnasium env over ``envkernel serve``: a running server at ``url``, or ``target`` (ENV_DIR
    or RUN_DIR) served in a background thread for this env alone (stopped by ``close()``). ``env``
    names the one environment it plays (of a run's several). The served folder's logs go to stderr
    at ``log_level`` (default ``warning``: quiet) when the caller has not configured structlog
    itself."""
    if (target is None) == (url is None):
        raise ValueError(
            "envkernel.make: give a run or environment folder, or url= of a running "
            "`envkernel serve`, not both"
        )
    if url is not None:
        return EnvkernelEnv(url, env=env, render_mode=render_mode)
    _quiet(log_level)
    from .server import ServeSettings, serve_local

    running = serve_local(
        target,
        tasks=tasks,
        runner=runner,
        sets=sets,
        seed=seed,
        settings=ServeSettings(port=0, warm=1, max_steps=max_steps),
    )
    try:
        return EnvkernelEnv(running.url, env=env, render_mode=render_mode, owned=running)
    except BaseException:
        running.stop()
        raise
