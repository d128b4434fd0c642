"""Build the report page: charts from :mod:`.charts`, laid out by a Jinja2 template, all inline."""

from __future__ import annotations

import functools
import json
from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import jinja2
import networkx as nx

from . import charts
from .load import RunData

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("envkernel_report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)

SECTIONS = (
    "overview",
    "eval",
    "verification",
    "rewards",
    "curve",
    "tasks",
    "samples",
    "gate",
    "graphs",
    "failures",
)
"""The page's sections, by element id, in order."""


def _safe(step: str, notes: list[str], fn: Callable[[], str]) -> str:
    """Draw one chart; a chart that cannot be drawn (odd data) becomes a note, not a crash."""
    try:
        return fn()
    except Exception as exc:  # one odd chart must not cost the whole page
        notes.append(
            f"the {step} could not be drawn ({type(exc).__name__}: {exc}); the rest of the "
            "page is unaffected."
        )
        return ""


def _verification(data: RunData, notes: list[str]) -> dict[str, Any]:
    envs = sorted(data.envs.values(), key=lambda e: (e.domain, e.id))
    labels = [f"{e.id} ({e.domain})" if e.domain and e.domain != e.id else e.id for e in envs]
    series = {
        name: [float(getattr(e, key) or 0) for e in envs]
        for name, key in (
            ("operations (or task files) in the source", "operations"),
            ("tools built", "tools_built"),
            ("tools kept", "tools_kept"),
            ("tasks gated in", "tasks"),
        )
        if any(getattr(e, key) is not None for e in envs)
    }
    by_domain: dict[str, Counter[str]] = defaultdict(Counter)
    for e in envs:
        c = by_domain[e.domain or e.id]
        c["envs"] += 1
        c["kept"] += e.kept is not False
        c["files" if e.kind == "workspace" else "ops"] += (
            e.operations or 0
        )  # a workspace's source is task files, not operations
        c["tools"] += e.tools_kept or 0
        c["tasks"] += e.tasks or 0
    chart = (
        _safe(
            "verification chart",
            notes,
            lambda: charts.bars(
                labels,
                series,
                title="Verification yield per environment",
                horizontal=True,
                ylabel="count",
            ),
        )
        if envs and series
        else ""
    )
    return {"envs": envs, "chart": chart, "domains": dict(sorted(by_domain.items()))}


def _gate(data: RunData, notes: list[str]) -> dict[str, Any]:
    mutants = data.summary.get("mutants") if isinstance(data.summary.get("mutants"), dict) else {}
    kinds: dict[str, Counter[str]] = defaultdict(Counter)
    for per_env in mutants.values():
        for kind, c in (per_env or {}).items():
            if isinstance(c, dict):
                kinds[kind].update({k: int(v) for k, v in c.items() if isinstance(v, int | float)})
    names = sorted(kinds)
    mutant_chart = (
        _safe(
            "mutant chart",
            notes,
            lambda: charts.bars(
                names,
                {
                    "applied": [kinds[k]["applied"] for k in names],
                    "killed (scored < 1)": [kinds[k]["killed"] for k in names],
                    "killed by the outcome check": [kinds[k]["outcome_killed"] for k in names],
                },
                title="Near-miss mutants of the reference, by kind",
                ylabel="rollouts",
            ),
        )
        if names
        else ""
    )
    reasons = data.rejected.most_common()
    reason_chart = (
        _safe(
            "rejection chart",
            notes,
            lambda: charts.bars(
                [r for r, _ in reasons],
                {"rejected": [n for _, n in reasons]},
                title="Rejections by reason",
                horizontal=True,
                ylabel="count",
                width=6.0,
            ),
        )
        if reasons
        else ""
    )
    totals = {k: sum(kinds[n][k] for n in names) for k in ("applied", "killed", "outcome_killed")}
    return {
        "reasons": reasons,
        "reason_chart": reason_chart,
        "mutant_chart": mutant_chart,
        "mutants": {n: kinds[n] for n in names},
        "mutant_totals": totals,
        "proposed": data.summary.get("tasks_proposed"),
        "passed": data.summary.get("tasks"),
    }


def _rewards(data: RunData, notes: list[str]) -> list[dict[str, Any]]:
    by_policy: dict[str, dict[int, list[float]]] = defaultdict(dict)
    for (policy, it), scores in sorted(data.rewards.items()):
        if scores:
            by_policy[policy][it] = scores
    out = []
    for policy, its in sorted(by_policy.items()):
        shown = charts.pick_iterations(list(its))
        out.append(
            {
                "policy": policy,
                "rollouts": sum(len(v) for v in its.values()),
                "iterations": len(its),
                "shown": len(shown),
                "chart": _safe(
                    f"reward histogram of {policy}",
                    notes,
                    lambda its=its, policy=policy: charts.reward_histograms(policy, its),
                ),
            }
        )
    return out


DENSE_EDGES = 25
"""A tool graph with more edges than this is shown as a table, not drawn."""


def _graphs(data: RunData, notes: list[str]) -> list[dict[str, Any]]:
    """Each environment's tool graph: drawn in per-resource clusters, or a table when dense."""
    out = []
    for e in sorted(data.envs.values(), key=lambda e: e.id):
        if e.graph is None:
            continue
        try:
            g = nx.node_link_graph(e.graph, directed=True, multigraph=False, edges="links")
        except Exception as exc:  # a damaged graph.json costs its graph, not the page
            notes.append(f"the tool graph of {e.id} could not be read ({type(exc).__name__}).")
            continue
        item: dict[str, Any] = {
            "id": e.id,
            "tools": g.number_of_nodes(),
            "edges": g.number_of_edges(),
        }
        if g.number_of_edges() > DENSE_EDGES:
            item["table"] = _graph_table(g)
        else:
            graph: dict[str, Any] = e.graph
            item["svg"] = _safe(
                f"tool graph of {e.id}",
                notes,
                functools.partial(charts.tool_graph, graph, e.id),
            )
        out.append(item)
    return out


def _graph_table(g: Any) -> list[dict[str, Any]]:
    """Rows of a dense tool graph, grouped by resource: tool → the tools its output feeds, and
    the tools that read state it writes."""
    rows = []
    for n in sorted(g.nodes, key=lambda n: (str(g.nodes[n].get("resource") or ""), str(n))):
        feeds = sorted(str(v) for _, v, d in g.out_edges(n, data=True) if d.get("feeds"))
        state = sorted(str(v) for _, v, d in g.out_edges(n, data=True) if not d.get("feeds"))
        rows.append(
            {
                "tool": str(n),
                "resource": str(g.nodes[n].get("resource") or ""),
                "mutates": charts.mutates(g.nodes[n]),
                "feeds": feeds,
                "state": state,
                "fed_by": g.in_degree(n),
            }
        )
    return rows


_TEXT = 500  # characters of a message or tool result shown in a transcript
_RESULT = 300  # characters of a tool result shown in a transcript
_ARGS = 240  # characters of a call's arguments
_TURNS = 24  # messages shown of a transcript


def _dict(value: Any) -> dict[str, Any]:
    """``value`` if it is a dict, else an empty one (the JSON of a run may be odd)."""
    return value if isinstance(value, dict) else {}


def _cut(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how much was left out."""
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit].rstrip()} … [{len(text) - limit:,} more characters]"


def _args(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return _cut(value, _ARGS)
    return _cut(json.dumps(value, ensure_ascii=False, sort_keys=True), _ARGS)


def _turn(m: dict[str, Any]) -> dict[str, Any]:
    """One message of a transcript: its role, its text (cut) and its tool calls."""
    content = m.get("content")
    if isinstance(content, list):  # content parts
        content = " ".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    calls = [
        (
            str((c.get("function") or {}).get("name", "?")),
            _args((c.get("function") or {}).get("arguments")),
        )
        for c in m.get("tool_calls") or []
        if isinstance(c, dict)
    ]
    return {
        "role": str(m.get("role", "?")),
        "text": _cut(str(content or ""), _RESULT if m.get("role") == "tool" else _TEXT),
        "calls": calls,
    }


def _transcript(rollout: dict[str, Any] | None, request: str) -> dict[str, Any] | None:
    """A rollout's transcript for the page: its turns (the system prompt left out), cut."""
    if not isinstance(rollout, dict):
        return None
    traj = _dict(rollout.get("trajectory"))
    reward = _dict(rollout.get("reward"))
    msgs = [m for m in traj.get("messages") or [] if isinstance(m, dict)]
    msgs = [m for m in msgs if m.get("role") != "system"]
    if msgs and msgs[0].get("role") == "user" and str(msgs[0].get("content")).strip() == request:
        msgs = msgs[1:]  # the request, shown above the transcript already
    turns = [_turn(m) for m in msgs[:_TURNS]]
    return {
        "policy": str(traj.get("policy", "?")),
        "iteration": rollout.get("iteration"),
        "purpose": rollout.get("purpose"),
        "score": reward.get("score"),
        "reasons": [str(r) for r in reward.get("reasons") or []][:3],
        "termination": traj.get("termination"),
        "turns": turns,
        "more": max(0, len(msgs) - _TURNS),
    }


def _samples(data: RunData) -> list[dict[str, Any]]:
    """Per environment, its sample tasks with their reference and one rollout transcript."""
    return [
        {
            "env": env_id,
            "tasks": [
                {
                    "id": t.id,
                    "kind": t.kind,
                    "request": _cut(t.request, 1000),
                    "calls": [(name, _args(a if a is not None else {})) for name, a in t.calls],
                    "answer": _cut(t.answer, _TEXT),
                    "rollout": _transcript(t.rollout, t.request.strip()),
                }
                for t in tasks
            ],
        }
        for env_id, tasks in sorted(data.samples.items())
        if tasks
    ]


def _eval(data: RunData) -> dict[str, Any] | None:
    """The table of an ``envkernel eval`` run (``eval.json``): overall, by category, by
    source."""
    ev = data.eval
    if not isinstance(ev, dict):
        return None
    k = ev.get("k")

    def row(name: str, g: Any) -> dict[str, Any] | None:
        if not isinstance(g, dict):
            return None
        return {
            "name": name,
            "tasks": g.get("tasks"),
            "attempts": g.get("attempts"),
            "passed": g.get("passed"),
            "cells": [
                _with_ci(g.get(key), g.get(f"{key}_ci")) for key in ("mean", "pass@1", "pass@k")
            ],
        }

    groups = []
    for title, key in (("by category", "by_category"), ("by source", "by_source")):
        part = _dict(ev.get(key))
        rows = [r for n, g in sorted(part.items()) if (r := row(str(n), g))]
        if rows:
            groups.append((title, rows))
    return {
        "policy": ev.get("policy"),
        "k": k,
        "ci": _ci_text(ev.get("ci")),
        "tasks": ev.get("tasks"),
        "tasks_unscored": ev.get("tasks_unscored"),
        "attempts": ev.get("attempts"),
        "attempts_failed": ev.get("attempts_failed"),
        "overall": row("overall", ev.get("overall")),
        "groups": groups,
    }


def _ci_text(ci: Any) -> str:
    """How the intervals were made (``eval.json``'s ``ci``), in words."""
    if isinstance(ci, dict):
        level = ci.get("level")
        parts = [str(ci.get("method") or "")]
        if isinstance(level, int | float):
            parts.append(f"{level * 100:.0f} %")
        if ci.get("resamples"):
            parts.append(f"{ci['resamples']} resamples")
        return ", ".join(p for p in parts if p)
    return "" if ci is None else str(ci)


def _with_ci(value: Any, ci: Any) -> str:
    """``0.62 [0.48, 0.75]``, or the value alone without an interval."""
    if not isinstance(value, int | float):
        return "n/a"
    text = f"{value:.3f}"
    if (
        isinstance(ci, list | tuple)
        and len(ci) == 2
        and all(isinstance(x, int | float) for x in ci)
    ):
        text += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
    return text


def _curve(data: RunData, notes: list[str]) -> str:
    """The mean-reward-per-iteration chart ("" with no iteration)."""
    curves = data.reward_curve()
    if not curves:
        return ""
    return _safe(
        "reward curve", notes, lambda: charts.curve(curves, title="Mean reward per iteration")
    )


def _learning(data: RunData, notes: list[str]) -> str:
    """The trainer's curves: mean reward per iteration on the train split, the held-out split
    and the held-out environment ("" when no trainer reported them)."""
    curves = data.learning_curves()
    if not curves:
        return ""
    return _safe(
        "learning curves",
        notes,
        lambda: charts.curve(curves, title="Mean reward per iteration, by kind of task"),
    )


def _tasks(data: RunData, notes: list[str]) -> dict[str, Any]:
    """The task distributions: chain lengths and difficulty charts, splits, totals."""
    return {
        "chain": _safe(
            "chain-length chart",
            notes,
            lambda: charts.counts(
                dict(data.chain_lengths), title="Chain length (tool calls per task)", xlabel="calls"
            ),
        )
        if data.chain_lengths
        else "",
        "difficulty": _safe(
            "difficulty chart",
            notes,
            lambda: charts.histogram(
                data.difficulty,
                title="Difficulty",
                xlabel="difficulty (0 easy, 1 hard)",
                xrange=(0.0, 1.0),
                color=charts.PALETTE[6],
            ),
        )
        if data.difficulty
        else "",
        "splits": dict(data.splits),
        "total": sum(data.chain_lengths.values()),
        "coverage": data.summary.get("tool_coverage"),
        "shapes": data.summary.get("unique_chain_shapes"),
    }


def _tiles(data: RunData, total_tasks: int) -> list[tuple[str, Any]]:
    """The headline figures: the summary's, else counted from the files."""
    s = data.summary
    return [
        (
            "environments kept",
            f"{sum(e.kept is not False for e in data.envs.values())} / {len(data.envs)}",
        ),
        ("tasks", s.get("tasks", total_tasks)),
        ("rollouts", s.get("rollouts", sum(len(v) for v in data.rewards.values()))),
        ("mean reward", _fmt(s.get("mean_reward"))),
        ("failures", s.get("failures", len(data.failures))),
        ("seconds", _fmt(s.get("seconds"))),
    ]


def render(data: RunData, *, step: Callable[[str], None] | None = None) -> str:
    """The whole HTML page for ``data`` (one string; every chart inline). ``step`` is told each part
    as it is drawn."""
    notes = list(data.notes)

    def part(name: str) -> None:
        if step is not None:
            step(name)

    part("verification")
    verification = _verification(data, notes)
    part("rewards")
    rewards = _rewards(data, notes)
    part("reward curve")
    curve = _curve(data, notes) + _learning(data, notes)
    part("task distributions")
    tasks = _tasks(data, notes)
    part("gate")
    gate = _gate(data, notes)
    part("tool graphs")
    graphs = _graphs(data, notes)
    part("samples")
    samples = _samples(data)
    evaluation = _eval(data)
    part("page")
    s = data.summary
    return _ENV.get_template("report.html.j2").render(
        data=data,
        run_id=data.run_id,
        summary=s,
        notes=notes,
        tiles=_tiles(data, tasks["total"]),
        verification=verification,
        rewards=rewards,
        curve=curve,
        tasks=tasks,
        gate=gate,
        graphs=graphs,
        samples=samples,
        gated=data.eval is None,
        evaluation=evaluation,
        failures=data.failures[:200],
        failures_total=len(data.failures),
        failures_by_plugin=s.get("failures_by_plugin")
        or dict(Counter(str(f.get("plugin", "?")) for f in data.failures)),
        plugins=s.get("plugins") or {},
        sections=SECTIONS,
        dense_edges=DENSE_EDGES,
    )


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if v == v else "n/a"
    return "n/a" if v is None else str(v)
