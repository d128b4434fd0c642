"""What a role method gets: its run, its settings, a logger, randomness and sandboxes."""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import msgspec
import structlog

from envkernel_bus import Bus
from envkernel_bus.subjects import event_subject
from envkernel_schemas import (
    CallRecord,
    EnvSpec,
    PolicyUpdate,
    RolloutRequested,
    RolloutStep,
    State,
    ToolCall,
    ToolError,
    ToolResult,
    ToolSpec,
    encode,
    event_id,
)

from .config import RunConfig
from .errors import SandboxError, UpdateError
from .sandbox import Sandbox, SandboxPool, open_sandbox

T = TypeVar("T")

_env_enc = msgspec.msgpack.Encoder()
_env_dec = msgspec.msgpack.Decoder(EnvSpec)
_update_dec = msgspec.msgpack.Decoder(PolicyUpdate)


def env_key(run: str, env_id: str) -> str:
    """Object-store key of a run's verified environment."""
    return f"env/{run}/{env_id}"


def update_key(run: str, iteration: int, trainer: str) -> str:
    """Object-store key of the policy update ``trainer`` made after ``iteration``."""
    return f"update/{run}/{iteration}/{trainer}"


async def store_update(bus: Bus, key: str, update: PolicyUpdate) -> None:
    """Put a policy update into the object store (a trainer's answer to ``iteration.ended``)."""
    await bus.objects.put(key, _env_enc.encode(update))


async def load_update(bus: Bus, key: str) -> PolicyUpdate:
    """A policy update from the object store, by the reference ``policy.updated`` carries.

    Raises :class:`UpdateError` when it does not decode; a missing object raises the object
    store's own error (``ObjectNotFoundError``), which may be temporary.
    """
    data = await bus.get_object(key)
    try:
        return _update_dec.decode(data)
    except msgspec.DecodeError as exc:
        raise UpdateError(
            f"policy update {key!r} does not decode as a PolicyUpdate: {exc}"
        ) from None


class Context:
    """Per-run, per-component context handed to every role method."""

    def __init__(
        self,
        bus: Bus,
        config: RunConfig,
        component: str,
        role: str,
        settings: Any,
        loop: asyncio.AbstractEventLoop,
        pool: SandboxPool | None = None,
    ) -> None:
        self.bus = bus
        self.config = config
        self.run_id = config.run_id
        self.component = component
        self.role = role
        self.settings = settings
        self.seed = config.seed
        self.iteration = 0
        self.out_dir = Path(config.out) if config.out else Path.cwd()
        self.log = structlog.get_logger(f"envkernel.{role}").bind(
            run=self.run_id, component=component
        )
        self._loop = loop
        self._envs: dict[str, EnvSpec] = {}
        self._env_locks: dict[str, asyncio.Lock] = {}
        self._pool = pool

    def at_iteration(self, iteration: int) -> Context:
        """A shallow copy for one event of ``iteration`` (what ``copy.copy`` gives, at a tenth of
        its cost: it ran once per routed event)."""
        ctx = object.__new__(type(self))
        ctx.__dict__.update(self.__dict__)
        ctx.iteration = iteration
        return ctx

    def rng(self, *keys: object) -> random.Random:
        """A random generator determined by the run seed, this component and ``keys``."""
        return random.Random(f"{self.seed}/{self.component}/" + "/".join(map(str, keys)))

    @property
    def runner(self) -> str:
        """The sandbox runner this run uses."""
        runners = self.config.components.get("sandbox_runner", [])
        name = self.config.runner or (runners[0] if runners else "")
        if not name:
            raise SandboxError(
                "this run has no sandbox runner: add one to --plugins (e.g. +process)"
            )
        return name

    @asynccontextmanager
    async def sandbox(
        self, env: EnvSpec, *, call_timeout: float = 60.0, fresh: bool = False
    ) -> AsyncIterator[Sandbox]:
        """A sandbox holding ``env`` in its seed state, for the ``async with`` block.

        By default it comes from the worker's warm pool (reset by snapshot/restore, and given back
        after a clean use); ``fresh=True`` opens a new one and closes it on exit.
        """
        if self._pool is not None and not fresh:
            async with self._pool.lease(
                self.runner, env, seed=self.seed, run=self.run_id, call_timeout=call_timeout
            ) as pooled:
                yield pooled
            return
        sb = await open_sandbox(
            self.bus, self.runner, env, seed=self.seed, run=self.run_id, call_timeout=call_timeout
        )
        try:
            yield sb
        finally:
            await sb.close()

    async def seed_state(self, env: EnvSpec) -> State:
        """The state ``env`` starts in (its seed): what a rollout that made no call ends in. Read
        once per pool."""
        if self._pool is not None:
            return await self._pool.seed_state(self.runner, env, seed=self.seed, run=self.run_id)
        async with self.sandbox(env, fresh=True) as sb:
            return await sb.state()

    async def env(self, env_id: str) -> EnvSpec:
        """A verified environment of this run, by id (from the object store)."""
        if env_id not in self._envs:
            async with self._env_locks.setdefault(
                env_id, asyncio.Lock()
            ):  # one read per env, however many rollouts wait for it
                if env_id not in self._envs:
                    try:
                        data = await self.bus.get_object(env_key(self.run_id, env_id))
                    except Exception as exc:
                        raise SandboxError(
                            f"environment {env_id!r} of run {self.run_id} is not in the "
                            f"object store: {exc}"
                        ) from None
                    self._envs[env_id] = _env_dec.decode(data)
        return self._envs[env_id]

    async def step(self, request: RolloutRequested, turn: int, message: dict[str, Any]) -> None:
        """Publish one step of a rollout (``rollout.step``) so ``envkernel tap`` shows the agent
        live."""
        ev = RolloutStep(
            run=self.run_id,
            id=event_id(
                request.id,
                self.component,
                f"step/{turn}/{message.get('role', '')}/{message.get('tool_call_id', '')}",
            ),
            parent=request.id,
            iteration=request.iteration,
            time=time.time(),
            task_id=request.task.id,
            policy=request.policy,
            index=request.index,
            turn=turn,
            message=message,
        )
        await self.bus.publish_wait(event_subject(self.run_id, ev.kind), encode(ev), ev.id)

    def wait(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """From a sync role method (running in a worker thread): run ``coro`` on the kernel's
        loop."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout)


async def store_env(bus: Bus, run: str, env: EnvSpec) -> None:
    """Put a verified environment into the object store for :meth:`Context.env`."""
    await bus.objects.put(env_key(run, env.id), _env_enc.encode(env))


def _path_of(sandbox: Any) -> str:
    """How ``sandbox`` answered its last call: the bus client's own ``lane`` or ``bus``, else
    ``runner`` (a runner's session called in this process, as the gate's checks do)."""
    return sandbox.last_path if isinstance(sandbox, Sandbox) else "runner"


class RecordingToolEnv:
    """The ToolEnv a policy sees: forwards calls to the sandbox and records each one. Given no
    sandbox but a ``lease``, it leases one at the first call (a rollout that makes none needs
    none)."""

    def __init__(
        self,
        sandbox: Sandbox | None,
        tools: list[ToolSpec],
        lease: Callable[[], Awaitable[Sandbox]] | None = None,
        replay: Any = None,
    ) -> None:
        self.sandbox, self.replay = (
            sandbox,
            replay,
        )  # replay: known results answer calls while it holds no sandbox (envkernel_runtime.replay)
        self._lease = lease
        self.tools = tools
        self._names = {t.name for t in tools}
        self.records: list[CallRecord] = []
        self.fault: SandboxError | None = None
        """The sandbox failure the rollout met, if any: it fails the rollout as ``infra`` whatever
        the policy does."""

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool the task offers; anything else is an error observation. A sandbox failure
        raises, and so does a ``crashed`` result (the executor died under the call): not the
        policy's."""
        t0 = time.perf_counter()
        path = "refused"
        if name not in self._names:
            result = ToolResult(
                ok=False,
                error=ToolError(
                    code="unknown_tool",
                    message=f"no tool named {name!r}; available: {', '.join(sorted(self._names))}",
                ),
            )
        elif not isinstance(arguments, dict):
            result = ToolResult(
                ok=False,
                error=ToolError(
                    code="invalid_arguments", message="arguments must be a JSON object"
                ),
            )
        else:
            known: ToolResult | None = (
                await self.replay.known(name, arguments, self.sandbox is None)
                if self.replay is not None
                else None
            )
            answered = known  # what the call gave; None while it has not answered
            try:
                if (
                    known is None and self.sandbox is None
                ):  # leased at the first call the known traces do not answer
                    self.sandbox = await self._lease()  # type: ignore[misc]
                result = answered = known or await self.sandbox.call(name, arguments)  # type: ignore[union-attr]
                path = "known_trace" if known is not None else _path_of(self.sandbox)
                if result.error is not None and result.error.code == "crashed":
                    raise SandboxError(
                        f"the sandbox crashed under tool call {name!r}: {result.error.message}"
                    )
            except SandboxError as exc:
                self.fault = exc
                raise
            finally:
                if self.replay is not None and known is None:
                    self.replay.learn(answered)
        self.records.append(
            CallRecord(
                call=ToolCall(
                    name=name, arguments=arguments if isinstance(arguments, dict) else {}
                ),
                result=result,
                seconds=time.perf_counter() - t0,
                path=path,
            )
        )
        return result
