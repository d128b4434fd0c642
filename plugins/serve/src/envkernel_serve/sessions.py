"""Sessions of ``envkernel serve``: one isolated sandbox each, taken from a warm pool.

* :class:`WarmPool` keeps sandboxes per environment in the one sandbox pool
  (:class:`envkernel.pool.Pool`, the one a run leases from), opened ahead and snapshotted right
  after they open (the seed state). By default (``fresh``, the pool's ``fresh`` policy) no sandbox
  serves two sessions: a session takes one no session used, its end closes it, and another is
  opened in the background. A restore brings back the database, the counters, the working folder
  and env.py's own module state (it runs env.py again: ``tests/test_restore_globals.py``,
  ``tests/test_recycle.py``), but not what lives outside the module: a thread or a process the
  environment's code started keeps running into the next session. Sessions of ``envkernel serve``
  may belong to different clients, so the default stays a sandbox no session used. With the
  ``process`` runner's ``recycle``, that close and open are cheap: the sandbox's nest forks a fresh
  session (docs/sessions.md). ``fresh=False`` (``--reuse-sandboxes``, the pool's ``restore``
  policy, as a run's) restores a used sandbox for the next session instead (well under a
  millisecond), for a server whose sessions all belong to one client. Within a session, ``reset``
  restores the seed snapshot. There is no cap on how many are out at once: sessions are limited
  by the machine (and the runner's own limits), not by a default.
* :class:`Episode` is what a session does: ``reset`` loads a task's initial state (a restore to
  the seed, then the task's planted distractor rows, ``Task.planted``) and returns its request;
  ``step`` runs one tool call in the sandbox; the reward is the task's own
  check, computed here, in the server, through :func:`envkernel_kit.grading.grade`: for a task
  with a check script (``outcome.check``: a workspace task) the script, run in a sandbox of its own
  over the session's rebuilt final workspace and its transcript; for any other task the run's
  reward model (``ServeCore.reward_model``, e.g. ``traceoutcome``), or, with none, the trace +
  outcome score (:func:`envkernel_kit.grading.grade_in_process`, τ ``ServeCore.tau``).

The environment's code runs only inside the sandbox (the runner's process or container).
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import msgspec
import structlog

from envkernel.pool import Pool, Pooled, PoolPolicy
from envkernel_kit.grading import grade
from envkernel_kit.policy import policy_note
from envkernel_runtime.calls import call_role
from envkernel_runtime.lane import DirectLane, lanes_enabled
from envkernel_runtime.session import Capability, capabilities_of
from envkernel_schemas import (
    CallRecord,
    EnvSpec,
    Reward,
    Task,
    ToolCall,
    ToolError,
    ToolResult,
    Trajectory,
)

from .catalog import Catalog, CatalogError, tool_list

__all__ = [
    "ActionError",
    "Episode",
    "Lease",
    "RewardContext",
    "SandboxSource",
    "ServeCore",
    "WarmPool",
]

log = structlog.get_logger("envkernel.serve")


class ActionError(ValueError):
    """An action or reset option the server cannot use; the message says what to send instead."""


class SandboxSource(Protocol):
    """Where sandboxes come from: a runner (``open(env, seed)``), or the sandbox service on NATS."""

    def path_of(self, sandbox: Any) -> str:
        """How ``sandbox`` answered its last call (when serve holds no direct lane of it):
        ``runner`` (the runner's session in this process), ``bus`` or the bus client's own
        ``lane`` (``CallRecord.path``)."""
        ...

    async def open(self, env: EnvSpec, seed: int) -> Any:
        """A live sandbox holding ``env`` at ``seed`` (call, snapshot, restore, state, close)."""
        ...


@dataclass
class Lease:
    """A sandbox lent to one session, with the snapshot of its seed state."""

    env: EnvSpec
    sandbox: Any
    snapshot: str
    broken: bool = False
    lane: DirectLane | None = None
    """The executor's direct lane, when the sandbox is a runner's own in this process (tool calls
    skip its call log and stream objects: one socket round trip to the executor)."""
    pooled: Pooled | None = None
    """The pool's own record of the sandbox (what :meth:`WarmPool.release` gives back)."""


class WarmPool:
    """Sessions' sandboxes per environment, in the one :class:`envkernel.pool.Pool` (see the
    module docstring): ``fresh`` is the pool's ``fresh`` policy, else ``restore``."""

    def __init__(
        self, source: SandboxSource, seed: int = 0, keep_idle: int = 256, fresh: bool = True
    ) -> None:
        self.source = source
        self.seed = seed
        self.keep_idle = keep_idle
        self.fresh = fresh
        """No sandbox serves two sessions (see the module docstring)."""
        policy = PoolPolicy(reuse="fresh" if fresh else "restore", keep_idle=keep_idle)
        self.pool = Pool(policy, closer=_close_pooled, on_open=_take_lane)

    def _opener(self, env: EnvSpec) -> Any:
        return lambda: self.source.open(env, self.seed)

    async def acquire(self, env: EnvSpec) -> Lease:
        """A sandbox holding ``env`` in its seed state (a warm one restored, else a new one)."""
        item = await self.pool.acquire(env.id, self._opener(env))
        return Lease(env, item.sandbox, item.snapshot, lane=item.extra, pooled=item)

    async def release(self, lease: Lease) -> None:
        """Give a sandbox back: closed (``fresh``, or after a broken use), else kept warm for the
        next session."""
        item = lease.pooled
        assert item is not None, "a lease this pool did not lend"
        item.broken = item.broken or lease.broken
        await self.pool.release(item)

    async def warm(self, env: EnvSpec, n: int) -> None:
        """Open ``n`` sandboxes of ``env`` ahead of the first sessions (``fresh``: and keep ``n``
        ready)."""
        await self.pool.warm(env.id, self._opener(env), n)

    @property
    def opened(self) -> int:
        """Sandboxes opened."""
        return self.pool.opened

    @property
    def reused(self) -> int:
        """Sessions served by a restored sandbox."""
        return self.pool.reused

    @property
    def out(self) -> int:
        """Sandboxes lent to sessions now."""
        return self.pool.out

    @property
    def idle(self) -> int:
        """Warm sandboxes waiting for a session."""
        return self.pool.idle

    def idle_envs(self) -> set[str]:
        """The environments with a warm sandbox waiting."""
        return {str(k) for k, n in self.pool.idle_by_key().items() if n}

    async def close(self) -> None:
        """Close every idle sandbox (and stop opening more)."""
        await self.pool.close()


async def _close_pooled(item: Pooled) -> None:
    await _close_quietly(item.sandbox, item.extra)


_result_dec = msgspec.json.Decoder(ToolResult)


def _lane_failure(line: bytes | None) -> str:
    """The message of a result line the lane wrote for a call that hung (``""`` for none)."""
    if not line:
        return ""
    try:
        result = _result_dec.decode(line)
    except msgspec.DecodeError:
        return ""
    return result.error.message if result.error is not None else ""


def _take_lane(sb: Any) -> DirectLane | None:
    """The direct lane of a runner's sandbox in this process (``ProcessSession.take_lane``), else
    None. Calls over it are not in the sandbox's call log, so after a crash its state is lost (and
    said so) rather than replayed: the session then starts again from the task's initial state, as
    it does for any failed sandbox (see :meth:`Episode.call`)."""
    has_lane = Capability.LANE in capabilities_of(sb)
    sock = sb.take_lane() if has_lane and lanes_enabled() else None
    if sock is None:
        return None
    sb.lane_taken()
    return DirectLane(sock, float(sb.settings.call_timeout), on_hang=sb.interrupt)


async def _close_quietly(sb: Any, lane: DirectLane | None = None) -> None:
    if lane is not None:
        lane.close()
    try:
        await sb.close()
    except Exception as exc:
        log.debug("sandbox close failed", error=str(exc))


WITHHELD = (
    "the reasons quote the expected values, so only the trainer gets them: send the token "
    "`envkernel serve` printed at start (ENVKERNEL_SERVE_TOKEN; `Authorization: Bearer TOKEN` "
    "over HTTP, data.token on /ws)"
)
"""What a state asked for its reasons without the trainer's token says instead."""


@dataclass
class ServeCore:
    """What every session shares: the catalog, the warm pool and the episode settings."""

    catalog: Catalog
    pool: WarmPool
    max_steps: int = 64
    """Tool calls an episode may make before it is truncated (``done`` with ``truncated: true``)."""
    tau: float = 0.0
    """τ of the reward without a ``reward_model``:
    ``max(0, τ·trace + (1−τ)·outcome − penalties)``."""
    reward_model: Any = None
    """The reward model that grades tasks without a check script (the run's, e.g. ``traceoutcome``);
    None: the trace + outcome score with ``tau``."""
    reward_name: str = "serve"
    """The reward model's component name (``Reward.model``; what its ``ctx.component`` says)."""
    show_reasons: bool = False
    """Put the grading's ``reasons`` (which quote expected values) in every state, the MCP state
    resource and ``submit_answer`` result included (``--show-reasons``); False: only a trainer's
    explicit request (:meth:`Episode.state` with ``reasons=True``) and the log get them."""
    trainer_token: str = ""
    """The secret a trainer shows to get the grading's ``reasons`` (``ENVKERNEL_SERVE_TOKEN``, or
    one made at start and printed by ``envkernel serve``); empty: reasons only with
    ``show_reasons``."""
    live: dict[str, Episode] = field(default_factory=dict)
    call_paths: Counter[str] = field(default_factory=Counter)
    """Tool calls of every session by how they were answered (``CallRecord.path``); in
    ``/metadata``."""
    _counter: int = 0

    def may_see_reasons(self, token: Any) -> bool:
        """True when ``token`` is the trainer's (or the server shows reasons to everyone): the
        reasons quote the expected values, so an agent that reaches the port must not read them."""
        if self.show_reasons:
            return True
        return (
            bool(self.trainer_token)
            and isinstance(token, str)
            and hmac.compare_digest(token.encode(), self.trainer_token.encode())
        )

    async def grade(self, task: Task, trajectory: Trajectory) -> Reward:
        """Grade a session's rollout through :func:`envkernel_kit.grading.grade`: a check script in
        a sandbox, else the reward model (called as the kernel calls it), else trace + outcome."""
        model = self.reward_model
        if model is None:
            return await grade(self, task, trajectory, model=self.reward_name, tau=self.tau)
        ctx = RewardContext(self, asyncio.get_running_loop())
        return await grade(
            self,
            task,
            trajectory,
            in_process=lambda t, tr: call_role(model.score, t, tr, ctx),
            model=self.reward_name,
        )

    def episode(self, env: EnvSpec | None = None) -> Episode:
        """A new session (it takes a sandbox at its first reset or step); ``env``: its environment
        when it has no task."""
        ep = Episode(self, env)
        self.live[ep.session_id] = ep
        return ep

    def next_index(self) -> int:
        """The next task in turn, for a reset that names none."""
        self._counter += 1
        return self._counter - 1

    async def env(self, env_id: str) -> EnvSpec:
        """The served environment ``env_id`` (what :func:`envkernel_kit.grading.grade` asks for)."""
        return self.catalog.envs[env_id]

    @contextlib.asynccontextmanager
    async def sandbox(self, env: EnvSpec) -> AsyncIterator[Any]:
        """A sandbox of ``env`` from the warm pool, for the length of a check (never this
        process)."""
        lease = await self.pool.acquire(env)
        try:
            yield lease.sandbox
        except BaseException:
            lease.broken = True
            raise
        finally:
            await self.pool.release(lease)

    async def close(self) -> None:
        """Close every session, then the pool."""
        await asyncio.gather(*(ep.close() for ep in list(self.live.values())))
        await self.pool.close()


class RewardContext:
    """What a reward model's ``score(task, trajectory, ctx)`` gets in the server: the kernel
    ``Context``'s attributes a reward model reads (``component``, ``role``, ``settings``,
    ``iteration``, ``seed``, ``run_id``, ``log``) and methods (``env``, ``sandbox``, ``wait``)."""

    def __init__(self, core: ServeCore, loop: asyncio.AbstractEventLoop) -> None:
        self.core = core
        self.component = core.reward_name
        self.role = "reward_model"
        self.settings = getattr(core.reward_model, "settings", None)
        self.iteration = 0
        self.seed = core.catalog.seed
        self.run_id = "serve"
        self.log = log.bind(component=self.component)
        self._loop = loop

    async def env(self, env_id: str) -> EnvSpec:
        """A served environment by id."""
        return await self.core.env(env_id)

    def sandbox(self, env: EnvSpec) -> contextlib.AbstractAsyncContextManager[Any]:
        """A sandbox of ``env`` from the warm pool, for an ``async with`` block."""
        return self.core.sandbox(env)

    def wait(self, coro: Any, timeout: float | None = None) -> Any:
        """From a sync reward model in a worker thread: run ``coro`` on the server's loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


class Episode:
    """One session: a sandbox, the task loaded into it, and the calls made so far."""

    def __init__(self, core: ServeCore, env: EnvSpec | None = None) -> None:
        self.core = core
        self.free_env = env
        self.session_id = uuid.uuid4().hex
        self.episode_id: str | None = None
        self.lease: Lease | None = None
        self.task: Task | None = None
        self.calls: list[CallRecord] = []
        self.format_errors = 0
        self.answer = ""
        self.done = False
        self.truncated = False
        self.last_used = time.monotonic()
        self.lock = asyncio.Lock()
        self._graded: tuple[tuple[Any, ...], float] | None = None
        self._offered_cache: tuple[tuple[str, str | None], frozenset[str]] | None = None
        self.reasons: list[str] = []
        """Why the last grading is below 1 (the check's criteria missed, or its error)."""

    @property
    def env(self) -> EnvSpec:
        """The environment of the session (its task's, else the default one)."""
        if self.task is not None:
            return self.core.catalog.envs[self.task.env_id]
        if self.free_env is not None:
            return self.free_env
        return self.lease.env if self.lease is not None else self.core.catalog.default_env

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The tools offered (``name``, ``description``, ``input_schema``)."""
        return tool_list(self.env, self.task)

    def _offered(self) -> frozenset[str]:
        """The names of :attr:`tools`, computed once per environment and task (every step checks
        them)."""
        env = self.env
        key = (env.id, self.task.id if self.task is not None else None)
        if self._offered_cache is None or self._offered_cache[0] != key:
            self._offered_cache = (key, frozenset(t["name"] for t in tool_list(env, self.task)))
        return self._offered_cache[1]

    async def _sandbox(self, env: EnvSpec, task: Task | None = None) -> Lease:
        """The session's sandbox, holding ``env`` in the task's initial state (the seed plus the
        task's planted rows) when it is new or just reset."""
        if self.lease is not None and self.lease.env.id != env.id:
            lease, self.lease = self.lease, None
            await self.core.pool.release(lease)
        if self.lease is None:
            lease = await self.core.pool.acquire(env)
            await self._plant(lease, task or self.task)
            self.lease = lease
        return self.lease

    async def _plant(self, lease: Lease, task: Task | None) -> None:
        """Insert the task's planted rows (its distractors) into a sandbox in the seed state."""
        if task is None or not task.planted:
            return
        try:
            await lease.sandbox.patch(task.seed_patch())
        except BaseException:
            lease.broken = True
            if self.lease is lease:
                self.lease = None
            await self.core.pool.release(lease)
            raise

    async def reset(self, options: dict[str, Any]) -> dict[str, Any]:
        """Load a task's initial state; return its request (``observation.request``) and the
        tools."""
        self.last_used = time.monotonic()
        try:
            task = self.core.catalog.task(options, self.core.next_index())
        except CatalogError as exc:
            raise ActionError(str(exc)) from None
        env = (
            self.core.catalog.envs[task.env_id]
            if task is not None
            else (
                self.core.catalog.envs.get(str(options.get("env_id")))
                or self.free_env
                or self.core.catalog.default_env
            )
        )
        fresh = self.lease is None or self.lease.env.id != env.id
        lease = await self._sandbox(env, task)
        # back to the seed state (a warm sandbox restores in well under a millisecond), then the
        # task's rows
        if not fresh:
            try:
                await lease.sandbox.restore(lease.snapshot)
            except Exception:
                lease.broken = True
                self.lease = None
                await self.core.pool.release(lease)
                lease = await self._sandbox(env, task)
            else:
                await self._plant(lease, task)
        self.task = task
        self.calls, self.format_errors, self.answer, self._graded, self.reasons = (
            [],
            0,
            "",
            None,
            [],
        )
        self.done = self.truncated = False
        self.episode_id = str(options.get("episode_id") or uuid.uuid4().hex)
        info = {
            "request": task.request if task else "",
            # the domain policy and who is asking, as a run's policies are told it (a refusal or
            # confirmation task cannot be solved without it)
            "policy": policy_note(task) if task else "",
            "task_id": task.id if task else None,
            "env_id": env.id,
            "episode_id": self.episode_id,
        }
        obs = {**info, "tools": self.tools, "metadata": info}
        return {"observation": obs, "reward": None, "done": False}

    async def call(self, tool: str, arguments: Any) -> dict[str, Any]:
        """Run one tool call; the observation in OpenEnv's ``CallToolObservation`` shape (tool_name,
        result, error)."""
        if self.done:
            raise ActionError("the episode is done; send a reset to start another")
        offered = self._offered()
        if not isinstance(arguments, dict):
            self.format_errors += 1
            raise ActionError(
                f"arguments of {tool!r} must be a JSON object, got {type(arguments).__name__}"
            )
        if tool not in offered:
            self.format_errors += 1
            self.core.call_paths["refused"] += 1
            return {
                "tool_name": tool,
                "result": None,
                "ok": False,
                "error": {
                    "error_type": "tool_not_found",
                    "message": f"no tool {tool!r}; the tools are: {', '.join(sorted(offered))}",
                },
            }
        lease = await self._sandbox(self.env)
        self.last_used = time.monotonic()
        t0 = time.perf_counter()
        try:
            lane = lease.lane
            path = "lane"
            if lane is None:
                result: ToolResult = await lease.sandbox.call(tool, arguments)
                path = self.core.pool.source.path_of(lease.sandbox)
            else:  # one round trip to the executor
                line = await lane.call_raw(tool, arguments)
                if (
                    line is None or lane.closed
                ):  # the executor died or hung (then it was killed): its state is lost
                    why = _lane_failure(line)
                    raise RuntimeError(why or "its executor died during the call")
                result = _result_dec.decode(line)
        except Exception as exc:  # the sandbox itself failed (not the tool): a transport error
            lease.broken = True
            self.lease = None
            await self.core.pool.release(lease)
            return {
                "tool_name": tool,
                "result": None,
                "ok": False,
                "error": {
                    "error_type": "transport_error",
                    "message": f"the sandbox failed: {exc}; the session's next call "
                    "starts again from the task's initial state (send a reset to start the "
                    "episode over)",
                },
            }
        self.calls.append(
            CallRecord(
                call=ToolCall(name=tool, arguments=arguments),
                result=result,
                seconds=time.perf_counter() - t0,
                path=path,
            )
        )
        self.core.call_paths[path] += 1
        if result.ok:
            return {"tool_name": tool, "result": result.value, "ok": True, "error": None}
        err = result.error or ToolError(code="error", message="the tool failed")
        # the tool's own error is part of the result (OpenEnv: transport errors only go in `error`)
        return {
            "tool_name": tool,
            "result": {"error": {"code": err.code, "message": err.message}},
            "ok": False,
            "error": None,
        }

    async def step(self, action: Any) -> dict[str, Any]:
        """One action: ``call_tool`` (``tool_name``, ``arguments``), ``list_tools`` or ``submit``
        (``answer``)."""
        if not isinstance(action, dict):
            raise ActionError(f"an action is a JSON object, got {type(action).__name__}")
        kind = action.get("type") or (
            "call_tool" if "tool_name" in action or "tool" in action else ""
        )
        if kind == "list_tools":
            return {"observation": {"tools": self.tools}, "reward": None, "done": self.done}
        if kind == "submit":
            if self.done:
                raise ActionError("the episode is done; send a reset to start another")
            self.answer = str(action.get("answer") or "")
            self.done = True
            return {
                "observation": {"submitted": self.answer, "steps": len(self.calls)},
                "reward": await self.reward(),
                "done": True,
            }
        if kind != "call_tool":
            raise ActionError(
                f'unknown action type {kind!r}: send {{"type": "call_tool", "tool_name": '
                f'..., "arguments": {{...}}}}, '
                '{"type": "list_tools"} or {"type": "submit", "answer": "..."}'
            )
        name = action.get("tool_name") or action.get("tool")
        if not isinstance(name, str) or not name:
            raise ActionError("a call_tool action needs a tool_name")
        obs = await self.call(name, action.get("arguments") or {})
        reward = None
        if len(self.calls) >= self.core.max_steps:
            self.done = self.truncated = True
            obs["truncated"] = True
            reward = await self.reward()
        return {"observation": obs, "reward": reward, "done": self.done}

    async def reward(self) -> float | None:
        """The task's check on what the session did so far (None without a task)."""
        if self.task is None:
            return None
        key = (self.episode_id, len(self.calls), self.answer, self.format_errors)
        if self._graded is not None and self._graded[0] == key:
            return self._graded[1]  # nothing changed since the last grading (a state after a step)
        final_state: dict[str, list[dict[str, Any]]] = {}
        task = self.task
        if (task.outcome.mutates or task.outcome.unchanged) and self.lease is not None:
            final_state = msgspec.convert(
                await self.lease.sandbox.state(), dict[str, list[dict[str, Any]]]
            )
        elif task.outcome.unchanged:  # no sandbox yet: nothing changed, nothing to compare
            task = msgspec.structs.replace(
                task, outcome=msgspec.structs.replace(task.outcome, unchanged={}, generated={})
            )
        traj = Trajectory(
            task_id=self.task.id,
            policy="serve",
            calls=self.calls,
            final_answer=self.answer,
            final_state=final_state,
            format_errors=self.format_errors,
            termination="answer" if self.answer else "max_turns",
        )
        graded = await self.core.grade(self.task, traj)
        self._graded, self.reasons = (key, graded.score), list(graded.reasons)
        if self.done and self.reasons:  # the trainer's record of why (never the agent's to read)
            log.info(
                "episode graded",
                episode_id=self.episode_id,
                task_id=self.task.id,
                reward=graded.score,
                reasons=self.reasons,
            )
        return graded.score

    async def state(self, reasons: bool | None = False) -> dict[str, Any]:
        """OpenEnv's ``State`` (``episode_id``, ``step_count``) plus the task, ``done`` and the
        current ``reward``; ``reasons`` (why the reward is below 1, quoting the expected values)
        only when the trainer asks (``reasons``) or the server shows them (``--show-reasons``);
        ``None``: asked without the trainer's token (``reasons_withheld`` says how to get them)."""
        reward = await self.reward()
        out: dict[str, Any] = {
            "episode_id": self.episode_id,
            "step_count": len(self.calls),
            "task_id": self.task.id if self.task else None,
            "env_id": self.env.id,
            "done": self.done,
            "truncated": self.truncated,
            "reward": reward,
        }
        if reasons or self.core.show_reasons:
            out["reasons"] = self.reasons
        elif reasons is None:
            out["reasons_withheld"] = WITHHELD
        return out

    async def close(self) -> None:
        """End the session and give its sandbox back to the pool."""
        self.core.live.pop(self.session_id, None)
        lease, self.lease = self.lease, None
        if lease is not None:
            await self.core.pool.release(lease)
