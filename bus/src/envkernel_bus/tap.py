"""``envkernel tap``: print a run's events as one-line summaries or JSON lines.

It needs only the bus and the schemas, so it lives here, and a machine with just
``envkernel-bus`` and ``envkernel-schemas`` can read a run's stream.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from nats.errors import TimeoutError as NatsTimeoutError
from nats.js.api import DeliverPolicy

from envkernel_schemas import (
    DecodeError,
    EnvRejected,
    EnvRequested,
    EnvSynthesized,
    EnvVerified,
    Event,
    GroupScored,
    Handled,
    IterationEnded,
    PluginFailed,
    PolicyUpdated,
    RolloutFinished,
    RolloutRequested,
    RolloutScored,
    RolloutStep,
    RunFinished,
    TaskGated,
    TaskProposed,
    TaskRejected,
    decode,
    to_json,
)

from . import discovery
from .bus import Bus
from .server import EmbeddedServer
from .subjects import EVENTS_PREFIX, STREAM


class TapError(Exception):
    """Nothing to tap: no run in progress, or a folder that holds no stored events."""


def _short(text: str, n: int = 70) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def describe(ev: Event) -> str:
    """What an event says, in a few words."""
    for cls in type(ev).__mro__:
        say = _DESCRIBE.get(cls)
        if say is not None:
            return say(ev)
    return ""


def _env_requested(ev: EnvRequested) -> str:
    return f"{ev.source_kind}:{ev.source} #{ev.index} seed={ev.seed}"


def _env(ev: EnvSynthesized | EnvVerified) -> str:
    report = ev.env.report
    extra = f" kept={len(report.tools_kept)} dropped={len(report.tools_dropped)}" if report else ""
    return f"{ev.env.id} ({len(ev.env.tools)} tools){extra}"


def _env_rejected(ev: EnvRejected) -> str:
    return f"{ev.env_id}: {ev.reason}"


def _task(ev: TaskProposed | TaskGated) -> str:
    return f"{ev.task.id[:10]} {ev.task.signature} “{_short(ev.task.request, 60)}”"


def _task_rejected(ev: TaskRejected) -> str:
    return f"{ev.task.id[:10]} {ev.reason}: {_short(ev.detail, 60)}"


def _rollout_requested(ev: RolloutRequested) -> str:
    upd = f" update={ev.update.rsplit('/', 2)[-2]}" if ev.update else ""
    return (
        f"{ev.task.id[:10]} policy={ev.policy} #{ev.index}/{ev.group_size} {ev.purpose} "
        f"it={ev.iteration}{upd}"
    )


def _rollout_step(ev: RolloutStep) -> str:
    role = ev.message.get("role", "?")
    body = ev.message.get("content") or str(ev.message.get("tool_calls", ""))
    return (
        f"{ev.task_id[:10]} {ev.policy} #{ev.index} turn {ev.turn} {role}: {_short(str(body), 60)}"
    )


def _rollout_finished(ev: RolloutFinished) -> str:
    t = ev.trajectory
    return f"{ev.task.id[:10]} {t.policy} #{t.index} calls={len(t.calls)} end={t.termination}"


def _rollout_scored(ev: RolloutScored) -> str:
    r = ev.reward
    return (
        f"{ev.task.id[:10]} {ev.trajectory.policy} #{ev.trajectory.index} "
        f"score={r.score:.3f} trace={r.trace:.2f} outcome={r.outcome:.2f} {ev.purpose}"
    )


def _group_scored(ev: GroupScored) -> str:
    scores = ",".join(f"{s.reward.score:.2f}" for s in ev.rollouts)
    return f"{ev.task.id[:10]} [{scores}] failed={ev.failed}"


def _iteration_ended(ev: IterationEnded) -> str:
    mean = "-" if ev.mean_reward is None else f"{ev.mean_reward:.3f}"
    return (
        f"iteration {ev.iteration}: {ev.groups} groups, mean reward "
        f"{mean}{' (last)' if ev.last else ''}"
    )


def _policy_updated(ev: PolicyUpdated) -> str:
    shown = {k: round(v, 4) for k, v in list(ev.metrics.items())[:6]}
    return f"iteration {ev.iteration}: {ev.trainer} -> {ev.policy} {ev.ref} {shown}"


def _plugin_failed(ev: PluginFailed) -> str:
    return f"{ev.plugin} ({ev.role}) on {ev.event_kind}: {ev.error_type}: {_short(ev.message, 80)}"


def _handled(ev: Handled) -> str:
    return f"{ev.handler} handled {len(ev.events)} (children {sum(ev.children)})"


def _run_finished(ev: RunFinished) -> str:
    s = ev.summary
    return (
        f"tasks={s.get('tasks')} rollouts={s.get('rollouts')} "
        f"mean_reward={s.get('mean_reward')} failures={s.get('failures')}"
    )


_DESCRIBE: dict[type, Callable[[Any], str]] = {
    EnvRequested: _env_requested,
    EnvSynthesized: _env,
    EnvVerified: _env,
    EnvRejected: _env_rejected,
    TaskProposed: _task,
    TaskGated: _task,
    TaskRejected: _task_rejected,
    RolloutRequested: _rollout_requested,
    RolloutStep: _rollout_step,
    RolloutFinished: _rollout_finished,
    RolloutScored: _rollout_scored,
    GroupScored: _group_scored,
    IterationEnded: _iteration_ended,
    PolicyUpdated: _policy_updated,
    PluginFailed: _plugin_failed,
    Handled: _handled,
    RunFinished: _run_finished,
}
"""How :func:`describe` words each kind of event."""


def line(ev: Event) -> str:
    """One readable line for an event."""
    t = (
        time.strftime("%H:%M:%S", time.localtime(ev.time)) + f".{int((ev.time % 1) * 1000):03d}"
        if ev.time
        else "--:--:--.---"
    )
    return f"{t} {ev.run} {ev.kind:<18} {describe(ev)}"


async def tap(
    bus: Bus,
    subject: str,
    *,
    from_start: bool,
    as_json: bool,
    show_all: bool,
    until_caught_up: bool,
    out: IO[str] = sys.stdout,
    limit: int | None = None,
) -> int:
    """Print events on ``subject``; return how many were printed.

    Live (the default) it follows new events until interrupted, the limit is reached, or the
    server goes away. With ``until_caught_up`` (a replay) it reads what is stored and stops.
    """
    done = asyncio.Event()
    printed = 0

    def show(data: bytes, subj: str) -> None:
        nonlocal printed
        if done.is_set():
            return  # already past the limit, or the reader went away
        try:
            ev = decode(data)
        except DecodeError as exc:
            print(f"!! {subj}: {exc}", file=sys.stderr)
            return
        if show_all or not isinstance(ev, Handled):
            try:
                out.write((to_json(ev).decode() if as_json else line(ev)) + "\n")
                out.flush()
            except (BrokenPipeError, ValueError):  # e.g. `| head` closed the pipe
                done.set()
                return
            printed += 1
            if limit and printed >= limit:
                done.set()

    if until_caught_up:
        # a replay: an ephemeral pull consumer, read until nothing is pending
        psub = await bus.js.pull_subscribe(subject, stream=STREAM)
        try:
            while not done.is_set():
                try:
                    msgs = await psub.fetch(256, timeout=1.0)
                except (TimeoutError, NatsTimeoutError):
                    break  # nothing (more) matches
                for m in msgs:
                    show(m.data, m.subject)
                    await m.ack()
                if msgs and msgs[-1].metadata.num_pending == 0:
                    break
        finally:
            await psub.unsubscribe()
        return printed

    async def on_msg(msg) -> None:  # type: ignore[no-untyped-def]
        show(msg.data, msg.subject)

    bus.on_closed(done.set)  # the server went away: nothing more will come
    policy = DeliverPolicy.ALL if from_start else DeliverPolicy.NEW
    sub = await bus.js.subscribe(subject, cb=on_msg, ordered_consumer=True, deliver_policy=policy)
    try:
        await done.wait()
    finally:
        if not bus.nc.is_closed:
            await sub.unsubscribe()
    return printed


def find_live_url() -> str:
    """URL of the newest run in progress on this machine."""
    runs = discovery.running()
    if not runs:
        raise TapError(
            "no envkernel run is in progress on this machine: start one, pass --nats-url, or "
            "replay a finished run with --run DIR"
        )
    return str(runs[0]["url"])


class Replay:
    """Serve a finished run's stored events from its folder with a temporary embedded server."""

    def __init__(self, run_dir: Path) -> None:
        store = Path(run_dir) / "nats"
        if not (store / "jetstream").exists():
            raise TapError(
                f"{run_dir} holds no stored events (expected {store}/jetstream): is it a run "
                "folder made by `envkernel run`?"
            )
        self.server = EmbeddedServer(store)

    def __enter__(self) -> str:
        return self.server.start()

    def __exit__(self, *exc: object) -> None:
        self.server.stop()


DEFAULT_SUBJECT = f"{EVENTS_PREFIX}.>"
"""Every event of every run."""
