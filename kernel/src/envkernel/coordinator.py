"""The run coordinator: reads a run's events in order, runs the kernel stages, records the run,
and knows, causally, when it is finished.

Every event is expected to get a known number of handled reports (1 for a work or kernel event,
one per trainer for a broadcast). A handler publishes its children before its report, so in the
stream every child precedes its parent's report. The run is finished when every event seen has
all its reports: nothing sleeps, and nothing polls for quiet.

When an iteration is quiet, the coordinator broadcasts ``iteration.ended`` to the trainers. Their
``policy.updated`` answers come before their handled reports, so once that broadcast is fully
handled the coordinator knows every update: it starts the next iteration's rollouts (naming the
update), or, after the last iteration, publishes ``run.ending``.
"""

from __future__ import annotations

import asyncio
import errno
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

import structlog
from nats.aio.msg import Msg

from envkernel_bus import Bus, Feed, decode_shared, encode_shared
from envkernel_bus.subjects import EVENTS_PREFIX, STREAM
from envkernel_schemas import (
    DecodeError,
    EnvRequested,
    Event,
    Handled,
    IterationEnded,
    PluginFailed,
    PolicyUpdated,
    RolloutRequested,
    RunEnding,
    RunStarted,
    TaskProposed,
    decode,
    event_id,
)

from .config import RunConfig, public
from .event_routes import (
    BROADCAST_INPUTS,
    KERNEL_INPUTS,
    SERVED_KINDS,
    WORK_KINDS,
    expected_handlers,
    subject_of,
)
from .recorder import Recorder
from .stages import KERNEL, Stages

log = structlog.get_logger("envkernel.run")


class Coordinator:
    """Coordinates one run on the bus."""

    def __init__(
        self,
        bus: Bus,
        config: RunConfig,
        recorder: Recorder,
        synthesizer_for: Callable[[str], str],
        on_event: Callable[[Event], None] | None = None,
        resume: bool = False,
    ) -> None:
        """``resume``: the run's stream holds a killed run's events; replay them to rebuild the
        state (gate, groups, counts), publishing only the kernel events that never reached it."""
        self.bus = bus
        self.resume = resume
        self._replayed: set[str] | None = None
        """While replaying a resumed run: every event id met in the stream (None otherwise)."""
        self._deferred: list[tuple[Event, str | None]] = []
        self.config = config
        self.recorder = recorder
        self.synthesizer_for = synthesizer_for
        self.stages = Stages(config)
        self.on_event = on_event
        self.outstanding = 0
        self._open: dict[str, tuple[str, set[str]]] = {}
        """Events still waiting for handled reports: id -> (kind, handlers that reported)."""
        self._last_progress = time.monotonic()
        self.seen: set[str] = set()
        self.reports = 0
        """Handled reports received (each once)."""
        self._awaiting: set[str] = set()
        self.iteration = 0
        self._ended_published = -1
        self._ended: dict[int, IterationEnded] = {}
        self.updates: dict[int, dict[str, PolicyUpdated]] = {}
        self.refused: set[str] = set()
        """Update references a policy refused (never carried forward)."""
        self._background: set[asyncio.Task[None]] = set()
        self._ending_id = ""
        self._ending_seen = False
        self.done = asyncio.Event()
        self._pubacks: list[tuple[asyncio.Future[Any], str, bytes, str]] = []
        self._drainer: asyncio.Task[None] | None = None
        self._sub: Any = None
        self.undecodable = 0
        self.fatal = ""
        self._handlers = {KERNEL, *(n for names in config.components.values() for n in names)}

    async def start(self) -> None:
        """Subscribe to the run's events (from the start), then publish its first events."""
        if self.resume:
            info = await self.bus.js.stream_info(
                STREAM, subjects_filter=f"{EVENTS_PREFIX}.{self.config.run_id}.>"
            )
            self._replayed = set() if info.state.subjects else None
        self._sub = Feed(
            self.bus.js, f"{EVENTS_PREFIX}.{self.config.run_id}.>", STREAM, self._on_msg
        )
        await self._sub.start()
        run = self.config.run_id
        started = RunStarted(
            run=run,
            id=event_id(run, KERNEL, "started"),
            time=time.time(),
            config=public(self.config),
        )
        first: list[tuple[Event, str | None]] = [(started, None)]
        index = 0
        for source in self.config.sources:
            kind, _, value = source.partition(":")
            synth = self.synthesizer_for(kind)
            for _ in range(max(1, self.config.envs)):
                ev = EnvRequested(
                    run=run,
                    id=event_id(run, KERNEL, f"env/{index}"),
                    time=time.time(),
                    source_kind=kind,
                    source=value,
                    index=index,
                    seed=self.config.seed + index,
                )
                first.append((ev, synth))
                index += 1
        first += await self._file_tasks()
        self._awaiting = {e.id for e, _ in first}
        for event, target in first:
            await self._publish(event, target)

    async def _file_tasks(self) -> list[tuple[Event, str | None]]:
        """Evaluation mode: the tasks of ``eval_tasks`` files, proposed by the kernel (their
        environments put where the workers find them, and into the run folder)."""
        if not self.config.eval_tasks:
            return []
        from .context import store_env
        from .evaluation import load_task_files

        run, stored = self.config.run_id, set()
        out: list[tuple[Event, str | None]] = []
        for i, ft in enumerate(load_task_files(self.config.eval_tasks, self.config.eval_split)):
            if ft.env.id not in stored:
                stored.add(ft.env.id)
                await store_env(self.bus, run, ft.env)
                self.recorder.write_env(ft.env)
                self.recorder.note_origin(ft.env, ft.source)
                if self.recorder.evaluation is not None:
                    self.recorder.evaluation.add_env(
                        ft.env,
                        ft.source,
                        ft.env.provenance.source if ft.env.provenance else ft.source,
                    )
            ev = TaskProposed(
                run=run, id=event_id(run, KERNEL, f"eval-task/{i}"), time=time.time(), task=ft.task
            )
            out.append((ev, None))
        return out

    def _publish_later(self, events: list[tuple[Event, str | None]]) -> None:
        """Publish events in order from a background task; done waits until each is seen."""
        self._awaiting.update(e.id for e, _ in events)

        async def go() -> None:
            try:
                for ev, target in events:
                    await self._publish(ev, target)
                await self._drain_pubacks()
            except (
                Exception
            ) as exc:  # the bus went away: stop the run loudly, keep what was produced
                self.stop_run(f"coordinator could not publish: {type(exc).__name__}: {exc}")

        task = asyncio.get_running_loop().create_task(go())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _publish(self, ev: Event, target: str | None) -> None:
        if (
            self._replayed is not None
        ):  # replaying: the stream may hold it already; decided when the replay ends
            self._deferred.append((ev, target))
            return
        subject, data = (
            subject_of(self.config, ev, target),
            encode_shared(ev),
        )  # the feed brings it back to this process
        self._pubacks.append((await self.bus.publish(subject, data, ev.id), subject, data, ev.id))
        if len(self._pubacks) > 2000:
            await self._drain_pubacks()
        elif (
            self._drainer is None or self._drainer.done()
        ):  # confirm soon: a publish lost with the server is sent again
            self._drainer = asyncio.get_running_loop().create_task(self._drain_pubacks())

    async def _drain_pubacks(self) -> None:
        """Wait for the kernel's PubAcks (each re-sent with its ``Nats-Msg-Id`` until acknowledged,
        see ``Bus.confirm``); one the bus never acknowledges stops the run, since waiting for it
        would hang."""
        while self._pubacks:
            pending, self._pubacks = self._pubacks, []
            try:
                await self.bus.confirm(pending)
            except Exception as exc:
                self.stop_run(f"a kernel publish was not acknowledged: {type(exc).__name__}: {exc}")

    def stop_run(self, why: str) -> None:
        """End the run now (exit 3): the bus is lost or the kernel cannot go on; what was produced
        is kept."""
        log.error("stopping the run", reason=why)
        self.fatal = self.fatal or why
        self.done.set()

    async def _on_msg(self, msg: Msg) -> None:
        await self._account(msg)
        if self._replayed is not None and msg.metadata.num_pending == 0:
            await self._end_replay()

    async def _end_replay(self) -> None:
        """The resumed run's stream is replayed: publish the kernel events it lacks, then go on as
        usual."""
        replayed, self._replayed = self._replayed or set(), None
        todo, self._deferred = [(e, t) for e, t in self._deferred if e.id not in replayed], []
        log.info(
            "resuming the run: its stream is replayed",
            events=len(replayed),
            **self.recorder.counts,
            republished=len(todo),
        )
        for ev, target in todo:
            await self._publish(ev, target)
        self._check_done()

    async def _account(self, msg: Msg) -> None:
        if self.done.is_set():
            return  # the run is over (or stopping): what is recorded must match the summary
        try:
            ev = decode_shared(
                msg, ".".join(msg.subject.split(".")[3:5]) in SERVED_KINDS
            )  # decoded once per process
        except DecodeError as exc:
            self.undecodable += 1
            log.error(
                "dropping bytes that are not an envkernel event",
                subject=msg.subject,
                error=str(exc),
            )
            return
        if self._replayed is not None:
            self._replayed.add(ev.id)
        if (
            ev.run != self.config.run_id
            or msg.subject.split(".")[3:5] != ev.kind.split(".")
            or msg.subject.count(".") != 4 + (ev.kind in WORK_KINDS)
        ):
            self.undecodable += (
                1  # a forged or misrouted event: an event only counts on its own kind's subject
            )
            log.error(
                "dropping an event on a subject its kind does not belong to",
                subject=msg.subject,
                kind=ev.kind,
            )
            return
        try:
            await self.handle(ev)
        except (
            Exception
        ) as exc:  # a kernel bug or a full disk: stop the run loudly, keep what was produced
            log.exception("the coordinator failed; stopping the run", kind=ev.kind, event_id=ev.id)
            hint = (
                ". The disk holding the run folder is full: free space there and run again"
                if getattr(exc, "errno", 0) == errno.ENOSPC
                else ""
            )
            self.stop_run(
                f"coordinator failed on {ev.kind} {ev.id}: {type(exc).__name__}: {exc}{hint}"
            )

    async def handle(self, ev: Event) -> None:
        """Account for one event of the run, in stream order."""
        if isinstance(ev, Handled):
            self._last_progress = time.monotonic()
            for eid in ev.events:
                self._count_report(eid, ev.handler)
            self._check_done()
            return
        if ev.id in self.seen:
            return  # a duplicate publish: each output exactly once
        self.seen.add(ev.id)
        self._awaiting.discard(ev.id)
        self._last_progress = time.monotonic()
        expected = expected_handlers(self.config, ev.kind)
        self.outstanding += expected
        if expected:
            self._open[ev.id] = (ev.kind, set())
        self.recorder.record(ev)
        if self.on_event:
            self.on_event(ev)
        self._note(ev)
        if ev.kind in KERNEL_INPUTS:
            await self._run_stages(ev)
        self._check_done()

    def _count_report(self, eid: str, handler: str) -> None:
        """One handler's report on one event: the event closes when all its handlers reported."""
        # a closed event's reports are forgotten: what is kept per event ends with it
        entry = self._open.get(eid)
        if (
            (handler in entry[1])
            if entry is not None
            else (eid in self.seen and handler in self._handlers)
        ):
            return  # a duplicate report (a redelivered event): changes nothing
        if entry is None or handler not in self._handlers:
            # only reports on events this run is waiting for
            log.warning(
                "ignoring a handled report for an event this run is not waiting for",
                event_id=eid,
                handler=handler,
            )
            return
        self.reports += 1
        self.outstanding -= 1
        entry[1].add(handler)
        if len(entry[1]) >= expected_handlers(self.config, entry[0]):
            del self._open[eid]

    def _note(self, ev: Event) -> None:
        """What the coordinator keeps of an event: the run's end, iterations ended, policy
        updates, and the updates a policy refused."""
        if isinstance(ev, RunEnding):
            self._ending_seen = True
        elif isinstance(ev, IterationEnded):
            self._ended[ev.iteration] = ev
        elif isinstance(ev, PolicyUpdated):
            self.updates.setdefault(ev.iteration, {})[ev.trainer] = ev
        elif isinstance(ev, PluginFailed) and ev.classification == "update_refused" and ev.event:
            try:
                failed = decode(ev.event)
            except DecodeError:
                failed = None
            if isinstance(failed, RolloutRequested) and failed.update:
                self.refused.add(failed.update)

    async def _run_stages(self, ev: Event) -> None:
        """The kernel's own stages on ``ev``: publish their children, then the kernel's report."""
        children = self.stages.handle(ev)
        for child, target in children:
            await self._publish(child, target)
        report = Handled(
            run=ev.run,
            id=event_id(ev.id, KERNEL, "handled"),
            parent=ev.id,
            time=time.time(),
            handler=KERNEL,
            events=[ev.id],
            children=[len(children)],
        )
        await self._publish(report, None)

    def _check_done(self) -> None:
        if self.outstanding > 0 or self._awaiting:
            return
        run, k = self.config.run_id, self.iteration
        more = k + 1 < max(1, self.config.iterations) and bool(self.stages.gated)
        if self._ended_published < k:
            self._ended_published = k
            groups, mean = self.recorder.iteration_reward(k)
            ended = IterationEnded(
                run=run,
                id=event_id(run, KERNEL, f"iteration/{k}/ended"),
                iteration=k,
                time=time.time(),
                groups=groups,
                mean_reward=mean,
                last=not more,
            )
            log.info(
                "iteration ended",
                iteration=k,
                groups=groups,
                mean_reward=None if mean is None else round(mean, 4),
            )
            self._publish_later([(ended, None)])
            return
        if more:
            self.iteration = k + 1
            update = self._update_for(k)
            self._publish_later(self.stages.next_iteration(self._ended[k], update))
            log.info(
                "iteration started",
                iteration=k + 1,
                tasks=len(self.stages.gated),
                update=update or None,
            )
            return
        if not self._ending_id:
            if k + 1 < max(1, self.config.iterations):
                log.warning(
                    "no task passed the gate: the remaining iterations have nothing to roll out",
                    iterations=self.config.iterations,
                )
            ending = RunEnding(
                run=run, id=event_id(run, KERNEL, "ending"), iteration=k, time=time.time()
            )
            self._ending_id = ending.id
            self._publish_later([(ending, None)])
        elif self._ending_seen:
            self.done.set()

    def waiting_for(self) -> str:
        """What the run is waiting for, e.g.
        ``3 group.scored (no report yet from trainer mytrainer)``."""
        kinds: Counter[str] = Counter(kind for kind, _ in self._open.values())
        parts = []
        trainers = set(self.config.components.get("trainer", []))
        for kind, n in kinds.most_common(6):
            missing = set()
            if kind in BROADCAST_INPUTS["trainer"]:
                for k, reported in self._open.values():
                    if k == kind:
                        missing |= trainers - reported
            role = WORK_KINDS.get(kind, "kernel" if kind in KERNEL_INPUTS else "")
            who = (
                f"no report yet from trainer {', '.join(sorted(missing))}"
                if missing
                else f"handled by the {role}"
                if role
                else ""
            )
            parts.append(f"{n} {kind}" + (f" ({who})" if who else ""))
        if self._awaiting:
            parts.append(f"{len(self._awaiting)} kernel events not yet seen in the stream")
        return "; ".join(parts) or "nothing"

    async def watch(self, stall: float) -> None:
        """Log what the run waits for whenever it has made no progress for ``stall`` seconds."""
        while not self.done.is_set():
            await asyncio.sleep(min(2.0, max(0.5, stall / 4)))
            waiting = self.outstanding > 0 or self._awaiting
            if (
                waiting
                and self._sub is not None
                and time.monotonic() - self._sub.last_time > 5
                and await self._sub.heal()
            ):
                log.warning(
                    "the run's event feed had gone quiet with events left on the server "
                    "(lost in a reconnect); it goes on from the next one",
                    seq=self._sub.last,
                )
            idle = time.monotonic() - self._last_progress
            if (
                idle >= stall
                and (self.outstanding > 0 or self._awaiting)
                and not self.done.is_set()
            ):
                log.warning(
                    "the run has made no progress; it is waiting for handled reports (a "
                    "component that is not served? see `envkernel tap`, start the missing "
                    "worker, or bound the run with --timeout)",
                    seconds=round(idle),
                    outstanding=self.outstanding,
                    waiting_for=self.waiting_for(),
                )
                self._last_progress = time.monotonic()

    def _update_for(self, iteration: int) -> str:
        """The object-store reference of the newest update to the run's policy made after
        ``iteration`` or before it (an iteration without one keeps the last good update)."""
        policy = self.config.policy
        for k in range(iteration, -1, -1):
            made = self.updates.get(k, {})
            if k == iteration:
                for trainer, ev in sorted(made.items()):
                    if ev.policy != policy:
                        log.warning(
                            "a trainer updated a policy this run does not roll out; ignoring it",
                            trainer=trainer,
                            policy=ev.policy,
                            run_policy=policy,
                        )
            usable = sorted(
                (t, ev)
                for t, ev in made.items()
                if ev.policy == policy and ev.ref not in self.refused
            )
            if len(usable) > 1 and k == iteration:
                log.warning(
                    "several trainers updated the policy; using the first by name",
                    policy=policy,
                    trainers=[t for t, _ in usable],
                    used=usable[0][0],
                )
            if usable:
                if k != iteration:
                    log.warning(
                        "no update to the policy after this iteration; the next one keeps "
                        "the last update",
                        iteration=iteration,
                        update=usable[0][1].ref,
                    )
                return usable[0][1].ref
        return ""

    async def stop(self) -> None:
        """Unsubscribe and wait for the kernel's own publishes."""
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(
            *self._background, *([self._drainer] if self._drainer else []), return_exceptions=True
        )
        await self._drain_pubacks()
        if self._sub is not None:
            await self._sub.unsubscribe()
