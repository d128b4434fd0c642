"""Records a run into its folder: environments, tasks, rollouts, failures, and the summary."""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from envkernel_runtime.envdir import write_atomic, write_env_dir
from envkernel_runtime.tally import IterationStats, SynthesisYield
from envkernel_schemas import (
    EnvRejected,
    EnvRequested,
    EnvSpec,
    EnvSynthesized,
    EnvVerified,
    Event,
    GroupScored,
    PluginFailed,
    PolicyUpdated,
    RolloutScored,
    Task,
    TaskGated,
    TaskProposed,
    TaskRejected,
    VerifyReport,
    mutant_kind_of,
    to_json,
)

from .evaluation import EvalRecorder


class Recorder:
    """Writes what a run produces as it happens (append + flush), and counts it."""

    def __init__(
        self, out_dir: Path, *, rebuild: bool = False, evaluation: EvalRecorder | None = None
    ) -> None:
        """``rebuild``: a resumed run; its files are written again from the replayed stream, so none
        is kept twice. ``evaluation``: an evaluation run's results (``results.jsonl``,
        ``eval.json``)."""
        self.out = out_dir
        self.evaluation = evaluation
        self._evaluated: set[str] = set()
        self.out.mkdir(parents=True, exist_ok=True)
        for name in (
            (
                "tasks.jsonl",
                "rejected.jsonl",
                "rollouts.jsonl",
                "failures.jsonl",
                "results.jsonl",
                "calibration.jsonl",
            )
            if rebuild
            else ()
        ):
            (self.out / name).unlink(missing_ok=True)
        (self.out / "envs").mkdir(exist_ok=True)
        self._files: dict[str, IO[bytes]] = {}
        self.counts: Counter[str] = Counter()
        self.rejected: Counter[str] = Counter()
        self.mutants: dict[str, dict[str, Counter[str]]] = {}
        self.failures_by_plugin: Counter[str] = Counter()
        self.call_paths: Counter[str] = Counter()
        """Tool calls of every scored rollout (gate included) by how they were answered
        (``CallRecord.path``)."""
        self.reward_sum = 0.0
        self.verification: dict[str, dict[str, Any]] = {}
        self.sources: dict[str, dict[str, Any]] = {}
        """Env id -> its kind (behaviour tag) and what its synthesizer built of its source:
        operations, tools built, skipped."""
        self._requested: dict[str, str] = {}
        """EnvRequested id -> the source it asked for (``KIND:VALUE``)."""
        self.origins: dict[str, dict[str, str]] = {}
        """Env id -> where it came from: ``source`` (the run's ``KIND:VALUE``, or the tasks file)
        and ``source_file`` (its provenance's source: the file or spec it was made from)."""
        self.env_tasks: Counter[str] = Counter()
        """Env id -> tasks the gate passed."""
        self.env_tools: dict[str, set[str]] = {}
        self.used_tools: dict[str, set[str]] = {}
        self.lengths: Counter[int] = Counter()
        self.shapes: set[str] = set()
        self.solve_rates: Counter[str] = Counter()
        """Emitted tasks by calibrated solve rate (two decimals)."""
        self.per_iteration: dict[int, IterationStats] = {}
        self.synthesis = SynthesisYield()
        self.started = time.time()

    def _it(self, iteration: int) -> IterationStats:
        return self.per_iteration.get(iteration) or self.per_iteration.setdefault(
            iteration, IterationStats()
        )

    def iteration_reward(self, iteration: int) -> tuple[int, float | None]:
        """Groups scored in an iteration, and the mean reward of its training rollouts."""
        stats = self.per_iteration.get(iteration)
        if stats is None:
            return 0, None
        return stats.groups, (stats.reward[0] / stats.rollouts[0] if stats.rollouts[0] else None)

    def _append(self, name: str, data: bytes) -> None:
        f = self._files.get(name)
        if f is None:
            f = self._files[name] = open(self.out / name, "ab", buffering=0)
        end = f.seek(0, os.SEEK_END)
        try:  # whole lines only: a write cut short (a full disk) is taken back
            if f.write(data + b"\n") != len(data) + 1:
                raise OSError(28, f"No space left on device: a short write to {name}")
        except OSError:
            with contextlib.suppress(OSError):
                f.truncate(end)
            raise

    def write_env(self, env: EnvSpec) -> Path:
        """Write ``envs/<id>/`` (see ``envkernel_runtime.envdir.write_env_dir``)."""
        return write_env_dir(env, self.out / "envs" / env.id)

    def note_origin(self, env: EnvSpec, source: str) -> None:
        """Note where ``env`` came from (``source``: what the run was given for it), for the rows
        of ``rejected.jsonl``."""
        prov = env.provenance
        self.origins[env.id] = {
            "source": source,
            "source_file": (prov.source if prov is not None else "") or source,
        }

    def record(self, ev: Event) -> None:
        """Account for one event (each id once; the caller drops duplicates)."""
        self.synthesis.record(ev)
        if self.evaluation is not None:
            self._evaluate(ev)
        for kind, on in _ON_EVENT:
            if isinstance(ev, kind):
                on(self, ev)
                return

    def _on_env_requested(self, ev: EnvRequested) -> None:
        self._requested[ev.id] = f"{ev.source_kind}:{ev.source}" if ev.source else ev.source_kind

    def _on_env_synthesized(self, ev: EnvSynthesized) -> None:
        self.note_origin(ev.env, self._requested.get(ev.parent, ""))
        self.counts["envs_synthesized"] += 1
        self.sources[ev.env.id] = {
            "kind": type(ev.env.behaviour).__struct_config__.tag,
            "operations": ev.env.operations,
            "tools_built": len(ev.env.tools),
            "skipped": dict(ev.env.skipped),
        }

    def _on_env_verified(self, ev: EnvVerified) -> None:
        if ev.env.id in self.env_tools:
            return  # the same environment, sent to another sampler
        self.counts["envs_verified"] += 1
        self.write_env(ev.env)
        self._verified(ev.env.id, ev.env.report)
        self.env_tools[ev.env.id] = {t.name for t in ev.env.tools}

    def _on_env_rejected(self, ev: EnvRejected) -> None:
        self.counts["envs_rejected"] += 1
        self.rejected[f"env:{ev.reason}"] += 1
        self._verified(ev.env_id, ev.report)
        d = self.out / "envs" / ev.env_id
        d.mkdir(parents=True, exist_ok=True)
        write_atomic(
            d / "rejected.json",
            to_json(
                {
                    "reason": ev.reason,
                    "report": ev.report,
                    "provenance": ev.env and ev.env.provenance,
                }
            ),
        )

    def _on_task_proposed(self, ev: TaskProposed) -> None:
        self.counts["tasks_proposed"] += 1

    def _on_task_gated(self, ev: TaskGated) -> None:
        c, task = self.counts, ev.task
        # each line before its count: a write that fails counts nothing
        self._append("tasks.jsonl", to_json(task))
        c["tasks"] += 1
        self.env_tasks[task.env_id] += 1
        # a refusal's or a confirmation's declined calls are what the task is about: they count
        used = [*task.calls, *task.outcome.declined]
        self.used_tools.setdefault(task.env_id, set()).update(call.name for call in used)
        self.lengths[len(task.calls)] += 1
        self.shapes.add(task.signature or ">".join(call.name for call in task.calls))
        c["tasks_refined"] += int(bool(task.original_request))
        c["tasks_solver_reference"] += int(bool(task.reference_by))
        if task.solve_rate is not None:
            self.solve_rates[f"{task.solve_rate:.2f}"] += 1
            self._calibrated(task, "")

    def _calibrated(self, task: Task, dropped: str) -> None:
        """One line of ``calibration.jsonl``: a calibrated task's solve rate and difficulty, and
        the reason it was dropped (empty: emitted)."""
        line = {
            "task_id": task.id,
            "env_id": task.env_id,
            "solve_rate": task.solve_rate,
            "difficulty": task.difficulty,
            "dropped": dropped,
        }
        self._append("calibration.jsonl", to_json(line))

    def _on_task_rejected(self, ev: TaskRejected) -> None:
        origin = self.origins.get(ev.task.env_id, {})
        self._append(
            "rejected.jsonl",
            to_json(
                {
                    "task_id": ev.task.id,
                    "env_id": ev.task.env_id,
                    "source": origin.get("source", ""),
                    "source_file": origin.get("source_file", ""),
                    "reason": ev.reason,
                    "detail": ev.detail,
                    "signature": ev.task.signature,
                }
            ),
        )
        if ev.task.solve_rate is not None:
            self._calibrated(ev.task, ev.reason)
        self.counts["tasks_rejected"] += 1
        self.counts["tasks_unsolved"] += int(ev.reason == "unsolved")
        self.rejected[f"task:{ev.reason}"] += 1

    def _on_rollout_scored(self, ev: RolloutScored) -> None:
        self.call_paths.update(c.path or "unreported" for c in ev.trajectory.calls)
        if ev.purpose not in ("train", "eval"):
            self._on_gate_rollout(ev)
            return
        row = {
            "task_id": ev.task.id,
            "env_id": ev.task.env_id,
            "iteration": ev.iteration,
            "purpose": ev.purpose,
            "trajectory": ev.trajectory,
            "reward": ev.reward,
        }
        self._append("rollouts.jsonl", to_json(row))
        self.counts["rollouts"] += 1
        self.reward_sum += ev.reward.score
        self._it(ev.iteration).add(ev.task.split, ev.reward.score)

    def _on_gate_rollout(self, ev: RolloutScored) -> None:
        self.counts["gate_rollouts"] += 1
        name = mutant_kind_of(ev)  # "" unless a mutant rollout whose kind applied
        if name:
            # per environment and kind: applied, killed (score < 1), killed by the outcome alone
            m = self.mutants.setdefault(ev.task.env_id, {}).setdefault(name, Counter())
            m.update(
                applied=1,
                killed=int(ev.reward.score < 1 - 1e-9),
                outcome_killed=int(ev.reward.outcome < 1 - 1e-9),
            )

    def _on_group_scored(self, ev: GroupScored) -> None:
        self.counts["groups"] += 1
        self._it(ev.iteration).groups += 1

    def _on_policy_updated(self, ev: PolicyUpdated) -> None:
        self.counts["policy_updates"] += 1
        self._it(ev.iteration).updates[ev.trainer] = {
            "policy": ev.policy,
            "ref": ev.ref,
            "metrics": dict(ev.metrics),
        }

    def _on_plugin_failed(self, ev: PluginFailed) -> None:
        self._append(
            "failures.jsonl",
            to_json(
                {
                    "plugin": ev.plugin,
                    "role": ev.role,
                    "event_kind": ev.event_kind,
                    "event_id": ev.event_id,
                    "classification": ev.classification,
                    "error_type": ev.error_type,
                    "message": ev.message,
                    "traceback": ev.traceback,
                }
            ),
        )
        if ev.classification == "infra":  # not the plugin's work: counted apart
            self.counts["infra_failures"] += 1
        else:
            self.counts["failures"] += 1
            self.failures_by_plugin[ev.plugin] += 1

    def _evaluate(self, ev: Event) -> None:
        """Evaluation mode: an attempt's line in ``results.jsonl``, and its task's in
        ``tasks.jsonl`` (once)."""
        assert self.evaluation is not None
        got = self.evaluation.record(ev)
        if got is None:
            return
        row, task = got
        if row["task_id"] not in self._evaluated:
            self._evaluated.add(row["task_id"])
            self._append("tasks.jsonl", to_json(task))
            self.counts["tasks"] += 1
            self.env_tasks[task.env_id] += 1
        self._append("results.jsonl", self.evaluation.encode(row))

    def _verified(self, env_id: str, report: VerifyReport | None) -> None:
        if report is not None:
            dropped = Counter(
                str(why).split(":")[0].split(" (")[0][:80] for why in report.tools_dropped.values()
            )
            self.verification[env_id] = {
                "kept": report.kept,
                **self.sources.get(env_id, {}),
                "tools_kept": len(report.tools_kept),
                "tools_dropped": dict(report.tools_dropped),
                "dropped": dict(dropped.most_common()),
                "checks": report.checks,
            }

    def _coverage(self) -> float | None:
        """Share of the verified environments' tools used by at least one emitted task."""
        total = sum(len(t) for t in self.env_tools.values())
        if not total:
            return None
        used = sum(
            len(self.used_tools.get(env, set()) & tools) for env, tools in self.env_tools.items()
        )
        return round(used / total, 4)

    def summary(
        self, run_id: str, plugins: dict[str, list[str]], extra: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """The run summary (what ``summary.json`` holds)."""
        c = self.counts
        s: dict[str, Any] = {
            "run_id": run_id,
            "plugins": plugins,
            "envs_synthesized": c["envs_synthesized"],
            "envs_verified": c["envs_verified"],
            "envs_rejected": c["envs_rejected"],
            "tasks_proposed": c["tasks_proposed"],
            "tasks": c["tasks"],
            "tasks_rejected": c["tasks_rejected"],
            "tasks_refined": c["tasks_refined"],
            "tasks_solver_reference": c["tasks_solver_reference"],
            "tasks_unsolved": c["tasks_unsolved"],
            "rollouts": c["rollouts"],
            "gate_rollouts": c["gate_rollouts"],
            "groups": c["groups"],
            "mean_reward": round(self.reward_sum / c["rollouts"], 6) if c["rollouts"] else None,
            "rejected": dict(sorted(self.rejected.items())),
            "mutants": {
                e: {k: dict(v) for k, v in sorted(m.items())}
                for e, m in sorted(self.mutants.items())
            },
            "failures": c["failures"],
            "failures_by_plugin": dict(self.failures_by_plugin),
            "tool_calls_by_path": dict(sorted(self.call_paths.items())),
            "infra_failures": c["infra_failures"],
            "verification": {
                k: {**v, "tasks": self.env_tasks.get(k, 0)} for k, v in self.verification.items()
            },
            "tool_coverage": self._coverage(),
            "chain_lengths": {str(k): v for k, v in sorted(self.lengths.items())},
            "unique_chain_shapes": len(self.shapes),
            "solve_rates": dict(sorted(self.solve_rates.items())),
            "iterations": [self.per_iteration[k].summary(k) for k in sorted(self.per_iteration)],
            "reward_curve": [self.per_iteration[k].mean() for k in sorted(self.per_iteration)],
            "reward_curve_heldout": [
                self.per_iteration[k].mean("heldout") for k in sorted(self.per_iteration)
            ],
            "synthesis": self.synthesis.summary(),
            "seconds": round(time.time() - self.started, 3),
        }
        if self.evaluation is not None:
            figs = self.evaluation.write()
            s["eval"] = {
                k: figs[k]
                for k in ("policy", "k", "tasks", "attempts", "attempts_failed", "overall")
            }
        s.update(extra or {})
        return s

    def close(self) -> None:
        """Close the files."""
        for f in self._files.values():
            f.close()
        self._files.clear()


_ON_EVENT: tuple[tuple[type, Callable[[Recorder, Any], None]], ...] = (
    (EnvRequested, Recorder._on_env_requested),
    (EnvSynthesized, Recorder._on_env_synthesized),
    (EnvVerified, Recorder._on_env_verified),
    (EnvRejected, Recorder._on_env_rejected),
    (TaskProposed, Recorder._on_task_proposed),
    (TaskGated, Recorder._on_task_gated),
    (TaskRejected, Recorder._on_task_rejected),
    (RolloutScored, Recorder._on_rollout_scored),
    (GroupScored, Recorder._on_group_scored),
    (PolicyUpdated, Recorder._on_policy_updated),
    (PluginFailed, Recorder._on_plugin_failed),
)
"""Event kind -> how :meth:`Recorder.record` accounts for it."""
