"""The typed roles a plugin component can play.

A plugin hands the kernel a *factory* per component through a registration hook (see
:mod:`envkernel.hookspecs`). The kernel calls ``factory(settings)`` when the factory has a
``Settings`` attribute (a msgspec Struct, filled from the run's config), else ``factory()``, once
per run. Role methods may be sync (run in a worker thread) or async (awaited). A method that
raises becomes a ``plugin.failed`` event; the run goes on.

A component is checked when it registers: one that lacks a method its role requires
(:func:`missing_methods`) is refused, and its plugin counts as broken. Optional methods are roles
of their own (:class:`Finishes`, :class:`Updates`, :class:`AppliesUpdates`, :class:`Closes`): the
kernel calls them on the components that have them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from envkernel_schemas import (
    EnvRequested,
    EnvSpec,
    GroupScored,
    IterationEnded,
    PolicyUpdate,
    Reward,
    RolloutRequested,
    State,
    Task,
    ToolResult,
    ToolSpec,
    Trajectory,
    VerifyReport,
)

if TYPE_CHECKING:
    from .context import Context

ROLES = (
    "synthesizer",
    "sandbox_runner",
    "verifier",
    "sampler",
    "policy",
    "reward_model",
    "trainer",
    "user",
)
"""Every role, in pipeline order."""


@runtime_checkable
class Synthesizer(Protocol):
    """Makes environments. ``sources`` lists the source kinds it handles (default: its name)."""

    sources: tuple[str, ...]

    def synthesize(self, request: EnvRequested, ctx: Context) -> EnvSpec | Iterable[EnvSpec]:
        """Return the environment(s) for one request."""
        ...


@runtime_checkable
class Verifier(Protocol):
    """Executes an environment in a sandbox (``ctx.sandbox(env)``) and reports what works."""

    def verify(self, env: EnvSpec, ctx: Context) -> VerifyReport:
        """Return the report; tools in ``tools_dropped`` are removed before sampling."""
        ...


@runtime_checkable
class Sampler(Protocol):
    """Proposes grounded tasks over a verified environment."""

    def sample(self, env: EnvSpec, ctx: Context) -> Iterable[Task] | AsyncIterator[Task]:
        """Yield tasks; each goes through the kernel's gate."""
        ...


class ToolEnv(Protocol):
    """What a policy sees of the environment: the tools, and a way to call them.

    The kernel records every call it forwards; those records, not the policy's word, become the
    trajectory's ``calls``.
    """

    tools: list[ToolSpec]

    async def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Call one tool in the rollout's sandbox."""
        ...


@runtime_checkable
class Policy(Protocol):
    """Rolls an agent out on a task against a live environment (optional:
    :class:`AppliesUpdates`)."""

    def rollout(self, request: RolloutRequested, env: ToolEnv, ctx: Context) -> Trajectory:
        """Return the trajectory (the kernel fills in ``calls`` and ``final_state``)."""
        ...


@runtime_checkable
class RewardModel(Protocol):
    """Scores a rollout."""

    def score(self, task: Task, trajectory: Trajectory, ctx: Context) -> Reward:
        """Return the reward with its parts and reasons."""
        ...


@runtime_checkable
class User(Protocol):
    """A simulated user a policy talks with (no events of its own: a policy asks it for each user
    turn)."""

    def reply(self, task: Task, messages: list[dict[str, Any]], ctx: Context) -> str | None:
        """The user's next words after the conversation so far (OpenAI chat messages), or None:
        nothing more to say."""
        ...


@runtime_checkable
class AppliesUpdates(Protocol):
    """Optional for a policy: takes the updates trainers make between iterations.

    With ``--iterations N``, a rollout of iteration k+1 names the update a trainer made after
    iteration k; the worker fetches it from the object store and calls ``apply_update`` once per
    process, before the first rollout that names it. A policy without it rolls out unchanged (with
    a warning). Raising refuses the update (``UpdateRefused``).
    """

    def apply_update(self, update: PolicyUpdate, ctx: Context) -> None:
        """Load the update (weights, an adapter, a served model's name)."""
        ...


@runtime_checkable
class Trainer(Protocol):
    """Consumes scored groups (broadcast: every trainer sees every group; optional:
    :class:`Updates`, :class:`Finishes`)."""

    def consume(self, group: GroupScored, ctx: Context) -> None:
        """Take one scored group (write it, learn from it)."""
        ...


@runtime_checkable
class Updates(Protocol):
    """Optional for a trainer: answers ``iteration.ended`` with a policy update.

    An update it returns is stored in the object store, announced as ``policy.updated``, and used
    by the next iteration's rollouts.
    """

    def update(self, ended: IterationEnded, ctx: Context) -> PolicyUpdate | None:
        """The update made from this iteration's groups, or None."""
        ...


@runtime_checkable
class Finishes(Protocol):
    """Optional for a trainer: told when the run ends (also when it is aborted)."""

    def finish(self, ctx: Context) -> None:
        """The run is ending: flush files, write final artifacts."""
        ...


class SandboxSession(Protocol):
    """One live sandbox holding one loaded environment: every method the sandbox service calls.

    ``capabilities`` declares what it does beyond these methods
    (:class:`envkernel_runtime.session.Capability`: ``raw_call`` for ``call_raw``, ``lane`` for a
    direct lane's ``settings``, ``lane_taken`` and ``lane_handle``); the service reads it with
    :func:`envkernel_runtime.session.capabilities_of` and never probes with ``hasattr``. A session
    that declares none gets none of them."""

    id: str
    capabilities: frozenset[str]

    async def call(self, tool: str, arguments: dict[str, Any]) -> ToolResult:
        """Call a tool. Tool errors come back as a result with ``ok=False``."""
        ...

    async def patch(self, rows: list[dict[str, Any]]) -> int:
        """Insert rows (``{"table": ..., "row": {...}}`` each) before an episode, all or none;
        return how many. A task with ``planted`` rows needs it."""
        ...

    async def snapshot(self) -> str:
        """Save the state; return a handle for :meth:`restore`."""
        ...

    async def restore(self, snapshot: str) -> None:
        """Return to a saved state."""
        ...

    async def state(self) -> State:
        """Dump the state."""
        ...

    async def interrupt(self) -> None:
        """Stop the current executor (a call over the direct lane hung); the next operation
        starts a replacement with the same state."""
        ...

    async def close(self) -> None:
        """Stop the sandbox; nothing may be left running."""
        ...


@runtime_checkable
class SandboxRunner(Protocol):
    """Opens sandboxes. The kernel serves them on the bus as ``envk.svc.sandbox.…`` (optional:
    :class:`Closes`)."""

    async def open(self, env: EnvSpec, seed: int) -> SandboxSession:
        """Start a sandbox, load ``env`` and its seed state, and return it ready to call."""
        ...


@runtime_checkable
class Closes(Protocol):
    """Optional for a sandbox runner: called when its service stops."""

    async def aclose(self) -> None:
        """Close every sandbox this runner opened."""
        ...


ROLE_PROTOCOLS: dict[str, type] = {
    "synthesizer": Synthesizer,
    "sandbox_runner": SandboxRunner,
    "verifier": Verifier,
    "sampler": Sampler,
    "policy": Policy,
    "reward_model": RewardModel,
    "trainer": Trainer,
    "user": User,
}
"""Role name -> Protocol."""


def missing_methods(role: str, obj: object) -> list[str]:
    """The methods ``role`` requires that ``obj`` (a component's class or instance) lacks."""
    proto = ROLE_PROTOCOLS[role]
    return [
        name
        for name, v in vars(proto).items()
        if callable(v) and not name.startswith("_") and not callable(getattr(obj, name, None))
    ]
