"""Build the report page: charts from :mod:`.charts`, laid out by a Jinja2 template, all inline."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from typing import Any

import jinja2

from . import charts
from .load import RunData

_ENV = jinja2.Environment(
    loader=jinja2.PackageLoader("envkernel_report", "templates"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    trim_blocks=True,
    lstrip_blocks=True,
)

SECTIONS = ("overview", "verification", "rewards", "curve", "tasks", "gate", "graphs", "failures")
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


def _graphs(data: RunData, notes: list[str]) -> list[dict[str, Any]]:
    return [
        {
            "id": e.id,
            "svg": _safe(
                f"tool graph of {e.id}", notes, lambda e=e: charts.tool_graph(e.graph, e.id)
            ),
        }
        for e in sorted(data.envs.values(), key=lambda e: e.id)
        if e.graph is not None
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
    curves = data.reward_curve()
    curve = (
        _safe(
            "reward curve", notes, lambda: charts.curve(curves, title="Mean reward per iteration")
        )
        if curves
        else ""
    )
    part("task distributions")
    tasks = {
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
    part("gate")
    gate = _gate(data, notes)
    part("tool graphs")
    graphs = _graphs(data, notes)
    part("page")
    s = data.summary
    tiles = [
        (
            "environments kept",
            f"{sum(e.kept is not False for e in data.envs.values())} / {len(data.envs)}",
        ),
        ("tasks", s.get("tasks", tasks["total"])),
        ("rollouts", s.get("rollouts", sum(len(v) for v in data.rewards.values()))),
        ("mean reward", _fmt(s.get("mean_reward"))),
        ("failures", s.get("failures", len(data.failures))),
        ("seconds", _fmt(s.get("seconds"))),
    ]
    return _ENV.get_template("report.html.j2").render(
        data=data,
        run_id=data.run_id,
        summary=s,
        notes=notes,
        tiles=tiles,
        verification=verification,
        rewards=rewards,
        curve=curve,
        tasks=tasks,
        gate=gate,
        graphs=graphs,
        failures=data.failures[:200],
        failures_total=len(data.failures),
        failures_by_plugin=s.get("failures_by_plugin")
        or dict(Counter(str(f.get("plugin", "?")) for f in data.failures)),
        plugins=s.get("plugins") or {},
        sections=SECTIONS,
    )


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}".rstrip("0").rstrip(".") if v == v else "n/a"
    return "n/a" if v is None else str(v)
