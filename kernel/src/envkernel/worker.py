"""The worker: serves components' role methods on the bus, for every run that uses them.

For each served component it binds the durable consumer of its input kind (shared with every
other process serving it; a run's own trainers get consumers of their own, see ``run_scoped``),
decodes events, calls the role method inside a failure boundary,
publishes what it returns as child events with deterministic ids, reports what it handled (for
causal completion), and acks only after all of that is in the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import time
import traceback
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import msgspec
import structlog
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.errors import ObjectNotFoundError

from envkernel_bus import (
    Bus,
    BusError,
    Consumer,
    Done,
    Output,
    Redeliver,
    decode_shared,
    encode_shared,
    last_delivery,
)
from envkernel_bus.subjects import EVENTS_PREFIX, STREAM, durable_name, kind_filter
from envkernel_runtime.calls import as_list, call_role
from envkernel_runtime.calls import close_instance as _close_instance
from envkernel_runtime.replay import TraceCache
from envkernel_schemas import (
    DecodeError,
    EnvRejected,
    EnvRequested,
    EnvSpec,
    EnvSynthesized,
    EnvVerified,
    Event,
    GroupScored,
    Handled,
    IterationEnded,
    PluginFailed,
    PolicyUpdate,
    PolicyUpdated,
    Reward,
    RolloutFinished,
    RolloutRequested,
    RolloutRole,
    RolloutScored,
    RunEnding,
    RunFinished,
    Task,
    TaskProposed,
    Termination,
    Trajectory,
    VerifyReport,
    decode,
    event_id,
    mutant_of,
    rollout_role,
    termination_of,
)

from . import config as cfgmod
from .config import RunConfig
from .context import Context, RecordingToolEnv, load_update, store_env, store_update, update_key
from .errors import EnvkernelError, InfraError, SandboxError, UpdateError, UpdateRefused
from .event_routes import BROADCAST_INPUTS, WORK_INPUTS, first, subject_of
from .plugins import Component, Registry
from .roles import AppliesUpdates, Finishes, Updates, missing_methods
from .sandbox import Sandbox, SandboxPool, SandboxService, describe_stack

log = structlog.get_logger("envkernel.worker")


class _Published:
    """Stands for a child a stage already published itself (counted, not published again)."""


class PluginContractError(EnvkernelError):
    """A role method returned something its role does not allow."""


def classify(exc: BaseException) -> str:
    """Whose fault an error is, by its type: ``infra`` (a sandbox or the bus), ``update_refused``,
    else ``plugin``."""
    if isinstance(exc, (InfraError, NatsError, BusError)):
        return "infra"
    return "update_refused" if isinstance(exc, UpdateRefused) else "plugin"


_Children = Sequence[tuple["Event | _Published", str]]


class _Job:
    """One event handed to one component: what a role handler reads, and its children's ids."""

    __slots__ = ("comp", "inst", "ctx", "cfg", "ev")

    def __init__(self, comp: Component, inst: Any, ctx: Context, cfg: RunConfig, ev: Event):
        self.comp, self.inst, self.ctx, self.cfg, self.ev = comp, inst, ctx, cfg, ev

    def child(self, cls: type[Event], index: int | str, **fields: Any) -> Event:
        """A child event of this one: a deterministic id, the same run and iteration."""
        ev = self.ev
        return cls(
            run=ev.run,
            id=event_id(ev.id, self.comp.name, index),
            parent=ev.id,
            iteration=ev.iteration,
            time=time.time(),
            **fields,
        )


class Worker:
    """Serves the given components of a registry, for every run whose config selects them."""

    def __init__(
        self,
        bus: Bus,
        registry: Registry,
        served: list[str],
        *,
        known: dict[str, RunConfig] | None = None,
        run_scoped: str | None = None,
        own: str | None = None,
    ) -> None:
        """``run_scoped``: the run whose own process this is. Its broadcast components (trainers)
        then get consumers of their own for that run, never shared with other processes; without
        it (``envkernel worker``), a broadcast component serves only the runs that name it in
        ``--remote``, so no trainer's groups are ever split between processes. ``own``: a run with
        ``own_work``; its work components get consumers of that run's own (``<durable>__<run>``)."""
        self.bus, self.run_scoped, self.own, self._own_work = bus, run_scoped, own, set[str]()
        self.registry = registry
        self.served = [registry.get(n) for n in served]
        self._configs: dict[str, RunConfig] = dict(known or {})
        self._instances: dict[tuple[str, str], tuple[Any, Context]] = {}
        self._consumers: list[Consumer] = []
        self._tasks: list[asyncio.Task[None]] = []
        self._services: list[SandboxService] = []
        self._lock = asyncio.Lock()
        self._applied: dict[tuple[str, str], tuple[str, int]] = {}
        self._finished: set[tuple[str, str]] = set()
        self._finished_sub: Any = None
        self._done_runs: set[str] = set()
        self._apply_failed: dict[tuple[str, str, str], str] = {}
        self._apply_locks: dict[tuple[str, str], asyncio.Lock] = {}
        self.pool, self.traces = SandboxPool(bus), TraceCache()
        self.runners: dict[str, Any] = {}
        """The sandbox runners this worker serves, by component name."""
        self.handled: Counter[str] = Counter()
        """Events handled per component, and ``<component> failed`` for those that became
        ``plugin.failed`` (progress)."""

    def sandbox_stack(self) -> dict[str, Any]:
        """The sandbox stack this worker serves and uses (see :func:`~.sandbox.describe_stack`)."""
        return describe_stack(self.runners, self.pool)

    def progress_line(self) -> str:
        """What this worker has handled so far, as one line."""
        return "handled " + (
            ", ".join(f"{k} {n}" for k, n in sorted(self.handled.items())) or "nothing yet"
        )

    # -- lifecycle -------------------------------------------------------------------------------
    async def start(self) -> None:
        """Bind consumers and start sandbox services (and, in a worker, forget each run when it
        finishes)."""
        if self.run_scoped is None:
            self._finished_sub = await self.bus.nc.subscribe(
                f"{EVENTS_PREFIX}.*.run.finished", cb=self._on_run_finished
            )
        for comp in self.served:
            if comp.role == "sandbox_runner":
                # a runner serves every run: it takes the settings of the run it was started for, if
                # any
                runner, _ = self._build(comp, next(iter(self._configs.values()), None))
                svc = SandboxService(self.bus, comp.name, runner)
                self.runners[comp.name] = runner
                await svc.start()
                self._services.append(svc)
                continue
            kinds: list[tuple[str, str | None]] = []
            if comp.role in WORK_INPUTS:
                kinds.append((WORK_INPUTS[comp.role], comp.name))
            for kind in BROADCAST_INPUTS.get(comp.role, ()):
                kinds.append((kind, None))
            for kind, target in kinds:
                concurrency = int(getattr(comp.factory, "concurrency", 1024))
                durable, run, scope = (
                    durable_name(kind, comp.name),
                    "*",
                    self.own if target else self.run_scoped,
                )
                if scope:
                    durable, run = f"{durable}__{scope}", scope
                    self._own_work.update([durable] if target else [])
                consumer = Consumer(
                    self.bus,
                    durable,
                    kind_filter(kind, target, run),
                    self._handler(comp, kind),
                    self._finalize(comp),
                    max_inflight=concurrency,
                    batch=min(256, concurrency),
                )
                await consumer.bind()
                self._consumers.append(consumer)
                self._tasks.append(asyncio.create_task(consumer.run()))

    async def stop(self, cancel: bool = False, finish_run: str | None = None) -> None:
        """Stop consuming, finish (or with ``cancel`` abandon) in-flight work, close sandboxes and
        components.

        ``finish_run``: a run that is being aborted; its trainers that have not finished get
        ``finish`` now, so what they consumed is written (``rl.parquet``, curves, cards).
        """
        for c in self._consumers:
            await c.stop(cancel)
        for t in self._tasks:
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if finish_run:
            await self._finish_trainers(finish_run)
        # a run's own consumers go with it (after an abort, its work's stay: --resume carries them
        # on)
        for c in self._consumers:
            if (
                self.run_scoped
                and c.durable.endswith(f"__{self.run_scoped}")
                and not (finish_run and c.durable in self._own_work)
            ):
                try:
                    await self.bus.js.delete_consumer(STREAM, c.durable)
                except Exception as exc:
                    log.debug(
                        "could not delete a run's consumer", consumer=c.durable, error=str(exc)
                    )
        if self.pool.opened:
            log.info(
                "sandbox pool",
                opened=self.pool.opened,
                reused=self.pool.reused,
                replayed=self.traces.served,
                repeated=self.traces.repeated,
                mismatches=self.traces.mismatches,
            )
        await self.pool.close()
        for svc in self._services:
            await svc.stop()
        if self._finished_sub is not None:
            with contextlib.suppress(Exception):
                await self._finished_sub.unsubscribe()
        for inst, _ctx in self._instances.values():
            await _close_instance(inst)

    async def _on_run_finished(self, msg: Msg) -> None:
        """A run ended: drop what this worker kept for it (instances, config, applied updates)."""
        try:
            ev = decode(msg.data)
        except DecodeError:
            return
        run = ev.run
        self._done_runs.add(run)
        if isinstance(ev, RunFinished) and ev.summary.get("aborted"):
            await self._finish_trainers(
                run
            )  # remote trainers of an aborted run write what they have
        for key in [k for k in self._instances if k[0] == run]:
            inst, _ctx = self._instances.pop(key)
            await _close_instance(inst)
        self._configs.pop(run, None)
        await self.pool.release(run)  # its warm sandboxes: idle workers keep none of a finished run
        tables: tuple[dict[Any, Any], ...] = (self._applied, self._apply_locks, self._apply_failed)
        for table in tables:
            for key in [k for k in table if k[0] == run]:
                del table[key]
        self._finished = {k for k in self._finished if k[0] != run}
        log.info("run finished; its state in this worker was dropped", run=run)

    async def _finish_trainers(self, run: str, timeout: float = 120.0) -> None:
        for (rid, name), (inst, ctx) in list(self._instances.items()):
            if (
                rid != run
                or ctx.role != "trainer"
                or not isinstance(inst, Finishes)
                or (rid, name) in self._finished
            ):
                continue
            try:
                await asyncio.wait_for(call_role(inst.finish, ctx), timeout)
                self._finished.add((rid, name))
                log.info("the run was aborted; trainer finished what it had", trainer=name)
            except Exception as exc:
                log.error(
                    "the run was aborted and a trainer's finish failed",
                    trainer=name,
                    error=f"{type(exc).__name__}: {exc}",
                )

    # -- runs and instances ----------------------------------------------------------------------
    async def config_for(self, run: str) -> RunConfig | None:
        """The run's config (from the runs bucket, cached)."""
        cfg = self._configs.get(run)
        if cfg is None:
            try:
                entry = await self.bus.runs.get(run)
                cfg = msgspec.json.decode(entry.value or b"", type=RunConfig)
            except Exception as exc:
                log.warning("no config for run; dropping its event", run=run, error=str(exc))
                return None
            self._configs[run] = cfg
        return cfg

    def _build(self, comp: Component, cfg: RunConfig | None) -> tuple[Any, Any]:
        raw = cfg.settings.get(comp.name) if cfg else None
        flags = cfg.overrides.get(comp.name) if cfg else None
        settings = cfgmod.settings_for(comp.name, comp.settings_type, raw, flags=flags)
        inst = comp.factory(settings) if comp.settings_type is not None else comp.factory()
        missing = missing_methods(
            comp.role, inst
        )  # a class was checked when it registered; another factory's product now
        if missing:
            raise PluginContractError(
                f"component {comp.name!r} ({comp.role}) has no method {', '.join(missing)}, "
                "which its role requires"
            )
        return inst, settings

    async def instance(self, cfg: RunConfig, comp: Component) -> tuple[Any, Context]:
        """The component's instance and context for a run (built once per run)."""
        key = (cfg.run_id, comp.name)
        got = self._instances.get(key)
        if got is None:
            async with self._lock:
                got = self._instances.get(key)
                if got is None:
                    inst, settings = self._build(comp, cfg)
                    ctx = Context(
                        self.bus,
                        cfg,
                        comp.name,
                        comp.role,
                        settings,
                        asyncio.get_running_loop(),
                        self.pool,
                    )
                    got = (inst, ctx)
                    self._instances[key] = got
        return got

    # -- handling --------------------------------------------------------------------------------
    def _handler(self, comp: Component, kind: str) -> Any:
        broadcast = comp.role in BROADCAST_INPUTS

        async def handle(msg: Msg) -> tuple[list[Output], Any]:
            try:
                ev = decode_shared(
                    msg, self.run_scoped is not None
                )  # kept for the run's coordinator, in its process
            except DecodeError as exc:
                log.error(
                    "dropping bytes that are not an envkernel event",
                    subject=msg.subject,
                    component=comp.name,
                    error=str(exc),
                )
                return [], None
            if ev.kind != kind or msg.subject.split(".")[2] != ev.run:
                log.error(
                    "dropping an event on a subject its kind does not belong to",
                    subject=msg.subject,
                    kind=ev.kind,
                    component=comp.name,
                )
                return [], None
            if ev.run in self._done_runs:
                log.debug(
                    "dropping a late event of a finished run",
                    run=ev.run,
                    kind=ev.kind,
                    component=comp.name,
                )
                return [], None
            cfg = await self.config_for(ev.run)
            if cfg is None:
                return [], None
            if broadcast and comp.name not in cfg.components.get(comp.role, []):
                return [], None  # a broadcast event of a run that does not use this component
            if (
                broadcast
                and self.run_scoped is None
                or not broadcast
                and cfg.own_work
                and self.own != ev.run
            ) and f"{comp.role}:{comp.name}" not in cfg.remote:
                return (
                    [],
                    None,
                    # the run's own process (and its local workers) serve it, on consumers of their
                    # own
                )
            try:
                children = await self._invoke(
                    comp, cfg, ev, msg.data, last_try=lambda: last_delivery(msg)
                )
            except Redeliver:
                raise
            except Exception as exc:  # a kernel bug must still end as data, never as a lost event
                log.exception(
                    "kernel failed while handling an event", component=comp.name, kind=ev.kind
                )
                fail = self._failure(comp, ev, msg.data, exc)
                children = [(fail, subject_of(cfg, fail))]
            outputs = [
                Output(subject, encode_shared(child, self.run_scoped is not None), child.id)
                for child, subject in children
                if not isinstance(child, _Published)
            ]
            return outputs, (ev.run, ev.id, len(children))

        return handle

    def _finalize(self, comp: Component) -> Any:
        def finalize(done: list[Done]) -> list[Output]:
            by_run: dict[str, list[tuple[str, int]]] = {}
            for d in done:
                if d.token is None:
                    continue
                run, eid, n = d.token
                by_run.setdefault(run, []).append((eid, n))
            outs = []
            for run, items in by_run.items():
                ids = [i for i, _ in items]
                h = Handled(
                    run=run,
                    id=event_id(ids[0], comp.name, f"handled/{len(ids)}/{ids[-1]}"),
                    parent=ids[0],
                    time=time.time(),
                    handler=comp.name,
                    events=ids,
                    children=[n for _, n in items],
                )
                outs.append(
                    Output(
                        subject_of(RunConfig(run_id=run), h),
                        encode_shared(h, self.run_scoped is not None),
                        h.id,
                    )
                )
            return outs

        return finalize

    async def _invoke(
        self,
        comp: Component,
        cfg: RunConfig,
        ev: Event,
        raw: bytes,
        last_try: Callable[[], bool] = lambda: True,
    ) -> Sequence[tuple[Event | _Published, str]]:
        """Call the role method inside the failure boundary (``last_try``: whether this is the
        event's last delivery, read only when an infrastructure fault needs it: parsing a
        message's metadata was ~5 % of routing)."""
        inst, base_ctx = await self.instance(cfg, comp)
        ctx = base_ctx.at_iteration(ev.iteration)
        t0 = time.perf_counter()
        retries = max(0, cfg.infra_retries) if comp.role in WORK_INPUTS else 0
        for attempt in range(retries + 1):
            try:
                children = await self._dispatch(comp, inst, ctx, cfg, ev)
                break
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                if (
                    classify(exc) == "infra" and attempt < retries
                ):  # the sandbox that failed is closed: the next attempt gets another
                    log.warning(
                        "rollout met an infrastructure fault; retrying it",
                        plugin=comp.name,
                        event_id=ev.id,
                        attempt=attempt + 1,
                        retries=retries,
                        error=error,
                    )
                    continue
                if (
                    classify(exc) == "infra" and not last_try()
                ):  # another process (or a later try) may have what this one lacks
                    raise Redeliver(
                        f"{comp.name} met an infrastructure fault on {ev.kind} {ev.id}: {error}",
                        delay=2.0,
                    ) from exc
                fail = self._failure(comp, ev, raw, exc)
                self.handled[f"{comp.name} failed"] += 1
                log.error(
                    "plugin failed; the run goes on",
                    plugin=comp.name,
                    role=comp.role,
                    kind=ev.kind,
                    classification=fail.classification,
                    error=error,
                )
                return [(fail, subject_of(cfg, fail))]
        self.handled[comp.name] += 1
        log.debug(
            "handled",
            component=comp.name,
            kind=ev.kind,
            run=ev.run,
            children=len(children),
            ms=round((time.perf_counter() - t0) * 1000, 2),
        )
        return children

    @staticmethod
    def _failure(comp: Component, ev: Event, raw: bytes, exc: BaseException) -> PluginFailed:
        """A failure as data: the ``plugin.failed`` event for ``exc`` raised while handling
        ``ev``."""
        return PluginFailed(
            run=ev.run,
            id=event_id(ev.id, comp.name, "failed"),
            parent=ev.id,
            iteration=ev.iteration,
            time=time.time(),
            plugin=comp.name,
            role=comp.role,
            event_kind=ev.kind,
            event_id=ev.id,
            error_type=type(exc).__name__,
            message=str(exc),
            traceback="".join(traceback.format_exception(exc, limit=8)),
            event=raw,
            classification=classify(exc),
        )

    async def _dispatch(
        self, comp: Component, inst: Any, ctx: Context, cfg: RunConfig, ev: Event
    ) -> Sequence[tuple[Event | _Published, str]]:
        """Call the role method ``ev`` is for (by the event's class) and return its children."""
        job = _Job(comp, inst, ctx, cfg, ev)
        for cls in type(ev).__mro__:
            handler = _HANDLERS.get(cls)
            if handler is not None:
                children: _Children = await handler(self, job)
                return children
        raise PluginContractError(f"{comp.name} ({comp.role}) cannot handle {ev.kind}")

    async def _on_env_requested(self, job: _Job) -> _Children:
        """A generator's ``synthesize``: each env goes to the verifier, or is rejected as is."""
        ev, cfg = job.ev, job.cfg
        assert isinstance(ev, EnvRequested)
        envs = as_list(
            await call_role(job.inst.synthesize, ev, job.ctx),
            EnvSpec,
            f"{job.comp.name}.synthesize",
            PluginContractError,
        )
        verifier = first(cfg, "verifier", cfg.verifier)
        out: list[tuple[Event | _Published, str]] = []
        kept: list[tuple[Event | _Published, str]] = []
        for i, e in enumerate(envs):
            if e.provenance and e.provenance.rejected:  # rejected unverified
                c = job.child(
                    EnvRejected,
                    i,
                    env_id=e.id,
                    reason=e.provenance.rejected,
                    report=e.report,
                    env=e,
                )
                out.append((c, subject_of(cfg, c)))
            else:
                c = job.child(EnvSynthesized, i, env=e)
                kept.append((c, subject_of(cfg, c, verifier)))
        return out + kept

    async def _on_env_synthesized(self, job: _Job) -> _Children:
        """A verifier's ``verify``: the kept env (tools it dropped removed) goes to each sampler."""
        ev, cfg = job.ev, job.cfg
        assert isinstance(ev, EnvSynthesized)
        report = await call_role(job.inst.verify, ev.env, job.ctx)
        if not isinstance(report, VerifyReport):
            raise PluginContractError(
                f"{job.comp.name}.verify returned {type(report).__name__}, expected VerifyReport"
            )
        if not report.kept:
            rej = job.child(
                EnvRejected, 0, env_id=ev.env.id, reason="verification_failed", report=report
            )
            return [(rej, subject_of(cfg, rej))]
        dropped = set(report.tools_dropped)
        env = msgspec.structs.replace(
            ev.env, tools=[t for t in ev.env.tools if t.name not in dropped], report=report
        )
        await store_env(self.bus, ev.run, env)
        out: list[tuple[Event | _Published, str]] = []
        for sampler in cfg.components.get("sampler", []):
            c = job.child(EnvVerified, sampler, env=env)
            out.append((c, subject_of(cfg, c, sampler)))
        return out

    async def _on_env_verified(self, job: _Job) -> _Children:
        """A sampler's ``sample``: one ``task.proposed`` per task (streamed if it yields)."""
        ev, inst = job.ev, job.inst
        assert isinstance(ev, EnvVerified)
        if inspect.isasyncgenfunction(inst.sample):
            return await self._stream_tasks(job.comp, inst, job.ctx, job.cfg, ev, job.child)
        tasks = as_list(
            await call_role(inst.sample, ev.env, job.ctx),
            Task,
            f"{job.comp.name}.sample",
            PluginContractError,
        )
        return [
            (c, subject_of(job.cfg, c))
            for i, t in enumerate(tasks)
            for c in [job.child(TaskProposed, i, task=t)]
        ]

    async def _on_rollout_requested(self, job: _Job) -> _Children:
        """A policy's rollout (after the update it names): ``rollout.finished`` to the scorer."""
        ev, cfg = job.ev, job.cfg
        assert isinstance(ev, RolloutRequested)
        if ev.update:
            await self._apply_update(job.comp, job.inst, job.ctx, ev)
        traj = await self._rollout(job.inst, job.ctx, ev)
        scorer = cfg.gate_reward if ev.purpose == "gate" else first(cfg, "reward_model", cfg.reward)
        role = rollout_role(ev)
        ended, detail = termination_of(traj.termination)
        played = detail if role is RolloutRole.MUTANT and ended is Termination.MUTANT else ""
        c = job.child(
            RolloutFinished,
            0,
            task=ev.task,
            trajectory=traj,
            group_size=ev.group_size,
            purpose=ev.purpose,
            role=role,
            mutant=mutant_of(ev),
            mutant_kind=played,
        )
        return [(c, subject_of(cfg, c, scorer))]

    async def _on_rollout_finished(self, job: _Job) -> _Children:
        """A reward model's ``score``: ``rollout.scored`` (a gate rollout's states left out)."""
        ev, comp = job.ev, job.comp
        assert isinstance(ev, RolloutFinished)
        reward = await call_role(job.inst.score, ev.task, ev.trajectory, job.ctx)
        if not isinstance(reward, Reward):
            raise PluginContractError(
                f"{comp.name}.score returned {type(reward).__name__}, expected Reward"
            )
        reward = reward if reward.model else msgspec.structs.replace(reward, model=comp.name)
        traj = (
            ev.trajectory
            if ev.purpose != "gate"
            else msgspec.structs.replace(ev.trajectory, final_state={})
        )  # the gate reads scores: its states stay in rollout.finished
        c = job.child(
            RolloutScored,
            0,
            task=ev.task,
            trajectory=traj,
            reward=reward,
            group_size=ev.group_size,
            purpose=ev.purpose,
            role=rollout_role(ev),
            mutant=mutant_of(ev),
            mutant_kind=ev.mutant_kind,
        )
        return [(c, subject_of(job.cfg, c))]

    async def _on_group_scored(self, job: _Job) -> _Children:
        """A trainer's ``consume``: no children."""
        await call_role(job.inst.consume, job.ev, job.ctx)
        return []

    async def _on_iteration_ended(self, job: _Job) -> _Children:
        """A trainer's ``update``, stored once: ``policy.updated`` (again, if redelivered)."""
        ev, comp, inst = job.ev, job.comp, job.inst
        if not isinstance(inst, Updates):
            return []
        ref = update_key(ev.run, ev.iteration, comp.name)
        upd = await self._stored_update(comp, ev, ref)
        if upd is None:
            upd = await call_role(inst.update, ev, job.ctx)
            if upd is None:
                return []
            if not isinstance(upd, PolicyUpdate):
                raise PluginContractError(
                    f"{comp.name}.update returned {type(upd).__name__}, expected "
                    "PolicyUpdate or None"
                )
            upd = msgspec.structs.replace(upd, policy=upd.policy or job.cfg.policy)
            await store_update(self.bus, ref, upd)
        c = job.child(
            PolicyUpdated,
            0,
            trainer=comp.name,
            policy=upd.policy,
            ref=ref,
            metrics=dict(upd.metrics),
        )
        return [(c, subject_of(job.cfg, c))]

    async def _stored_update(self, comp: Component, ev: Event, ref: str) -> PolicyUpdate | None:
        """The update a redelivered ``iteration.ended`` already stored (announced again, not
        trained twice), or None (the usual case)."""
        try:
            upd = await load_update(self.bus, ref)
        except ObjectNotFoundError:  # not stored yet: the usual case
            return None
        log.warning(
            "iteration.ended delivered again; re-announcing the stored update",
            trainer=comp.name,
            iteration=ev.iteration,
        )
        return upd

    async def _on_run_ending(self, job: _Job) -> _Children:
        """A component's ``finish``, once per run: no children."""
        if isinstance(job.inst, Finishes):
            await call_role(job.inst.finish, job.ctx)
            self._finished.add((job.ev.run, job.comp.name))
        return []

    async def _stream_tasks(
        self, comp: Component, inst: Any, ctx: Context, cfg: RunConfig, ev: EnvVerified, child: Any
    ) -> Sequence[tuple[Event | _Published, str]]:
        """Publish a streaming sampler's tasks as it yields them (memory stays bounded).

        They are in the stream (PubAck awaited) before this returns, hence before the handled
        report; so they count as published children and are not published again.
        """
        pending: list[tuple[asyncio.Future[Any], str, bytes, str]] = []
        n = 0
        async for task in inst.sample(ev.env, ctx):
            if not isinstance(task, Task):
                raise PluginContractError(
                    f"{comp.name}.sample yielded {type(task).__name__}, expected Task"
                )
            c = child(TaskProposed, n, task=task)
            subject, data = subject_of(cfg, c), encode_shared(c, self.run_scoped is not None)
            pending.append((await self.bus.publish(subject, data, c.id), subject, data, c.id))
            n += 1
            if len(pending) >= 256:
                await self.bus.confirm(
                    pending
                )  # a PubAck lost with a restarted server: sent again, never awaited forever
                pending.clear()
        await self.bus.confirm(pending)
        return [(_Published(), "")] * n

    async def _apply_update(
        self, comp: Component, inst: Any, ctx: Context, ev: RolloutRequested
    ) -> None:
        """Hand the policy the update this rollout names, once per process (before any rollout using
        it).

        A policy without ``apply_update`` is warned about once and rolls out unchanged. An update
        the policy refuses (or that does not decode) fails every rollout naming it, each with the
        same clear error; a fetch that fails is retried by the next rollout. A redelivered request
        of an earlier iteration never takes the policy back to an older update.
        """
        key = (ev.run, comp.name)
        if self._applied.get(key, ("", -1))[0] == ev.update:
            return
        lock = self._apply_locks.setdefault(key, asyncio.Lock())
        async with lock:
            ref, iteration = self._applied.get(key, ("", -1))
            if ref == ev.update or ev.iteration < iteration:
                return
            failed = self._apply_failed.get((ev.run, comp.name, ev.update))
            if failed:
                raise UpdateRefused(failed)
            if not isinstance(inst, AppliesUpdates):
                log.warning(
                    "this policy takes no updates (no apply_update); it rolls out unchanged",
                    policy=comp.name,
                    update=ev.update,
                )
                self._applied[key] = (ev.update, ev.iteration)
                return
            try:
                update = await load_update(self.bus, ev.update)
            except UpdateError as exc:
                msg = self._apply_failed[(ev.run, comp.name, ev.update)] = (
                    f"{comp.name} could not apply policy update {ev.update}: {exc}"
                )
                raise UpdateRefused(msg) from None
            except Exception as exc:  # the object store did not answer: infrastructure, retried
                raise InfraError(
                    f"{comp.name} could not fetch policy update {ev.update}: "
                    f"{type(exc).__name__}: {exc}"
                ) from exc
            try:
                await call_role(inst.apply_update, update, ctx)
            except Exception as exc:
                msg = self._apply_failed[(ev.run, comp.name, ev.update)] = (
                    f"{comp.name} could not apply policy update {ev.update}: "
                    f"{type(exc).__name__}: {exc}"
                )
                raise UpdateRefused(msg) from exc
            self._applied[key] = (ev.update, ev.iteration)
            log.info(
                "policy update applied", policy=comp.name, update=ev.update, iteration=ev.iteration
            )

    async def _rollout(self, inst: Any, ctx: Context, ev: RolloutRequested) -> Trajectory:
        env = await ctx.env(ev.task.env_id)
        offered = set(ev.task.tools)
        tools = [t for t in env.tools if not offered or t.name in offered]
        t0 = time.perf_counter()
        replay = self.traces.replay(
            self.pool._key(ctx.runner, env, ctx.seed),
            env,
            ev.task.seed_patch() if ev.task.planted else None,
            [ctx.config.resolved.get(ctx.runner), ctx.config.overrides.get(ctx.runner)],
        )  # the runner's settings
        async with contextlib.AsyncExitStack() as stack:

            async def lease() -> (
                Sandbox
                # at the first call: ~40 % of a gate run's rollouts (do-nothing, mutants that do not
                # apply) make none
            ):
                sb = await stack.enter_async_context(ctx.sandbox(env))
                if (
                    ev.task.planted
                ):  # the task's own initial state: the seed plus its distractor rows
                    await sb.patch(ev.task.seed_patch())
                if replay is not None and (
                    differs := await replay.catch_up(sb)
                ):  # the calls the known traces answered, made again
                    raise SandboxError(
                        f"a known trace did not repeat ({differs}): the rollout is tried "
                        "again on sandboxes alone"
                    )
                return sb

            async def read() -> Any:
                return await (tool_env.sandbox or await lease()).state()

            tool_env = RecordingToolEnv(None, tools, lease, replay)
            try:
                traj = await call_role(inst.rollout, ev, tool_env, ctx)
            except Exception:
                if tool_env.fault is None:
                    raise
            if (
                tool_env.fault is not None
            ):  # the sandbox failed under the policy (even if it caught that): not its work
                raise tool_env.fault
            if not isinstance(traj, Trajectory):
                raise PluginContractError(
                    f"{ev.policy}.rollout returned {type(traj).__name__}, expected Trajectory"
                )
            no_call = (
                tool_env.sandbox is None and not ev.task.planted and not (replay and replay.pending)
            )  # then it ends in the seed state
            state = (
                await ctx.seed_state(env)
                if no_call
                else await replay.final(tool_env.sandbox is None, read)
                if replay
                else await read()
            )
        return msgspec.structs.replace(
            traj,
            task_id=ev.task.id,
            policy=ev.policy,
            index=ev.index,
            calls=tool_env.records,
            final_state=state,
            seconds=traj.seconds or time.perf_counter() - t0,
        )


_HANDLERS: dict[type[Event], Any] = {
    EnvRequested: Worker._on_env_requested,
    EnvSynthesized: Worker._on_env_synthesized,
    EnvVerified: Worker._on_env_verified,
    RolloutRequested: Worker._on_rollout_requested,
    RolloutFinished: Worker._on_rollout_finished,
    GroupScored: Worker._on_group_scored,
    IterationEnded: Worker._on_iteration_ended,
    RunEnding: Worker._on_run_ending,
}
"""The role handler for each input event's class."""
