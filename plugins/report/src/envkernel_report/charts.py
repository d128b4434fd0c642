"""The report's charts, drawn with matplotlib (no pyplot, no GUI backend) as inline SVG.

Text stays text (``svg.fonttype = none``), so the charts are small, searchable and crisp at any
zoom, and the page needs no JavaScript and no network.
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from typing import Any

import matplotlib
import networkx as nx
from matplotlib.figure import Figure

matplotlib.rcParams.update(
    {
        "svg.fonttype": "none",
        "svg.hashsalt": "envkernel-report",  # stable ids: the same run gives the same page
        "font.family": "sans-serif",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "axes.grid": True,
        "grid.alpha": 0.3,
        "axes.axisbelow": True,
    }
)

PALETTE = [
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#b07aa1",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
]
"""Tableau 10: distinguishable, and readable for most kinds of colour blindness."""

MAX_PANELS = 8
"""At most this many iterations get a histogram panel per policy (evenly chosen, first and last
kept)."""

_HEADER = re.compile(rb"^.*?(?=<svg)", re.S)
_METADATA = re.compile(r"\s*<metadata>.*?</metadata>", re.S)


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element to put in HTML (no XML declaration; CSS may shrink it to
    fit)."""
    buf = io.BytesIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    svg = _METADATA.sub("", _HEADER.sub(b"", buf.getvalue(), count=1).decode(), count=1)
    return svg.replace("<svg ", '<svg class="chart" ', 1)


def bars(
    labels: Sequence[str],
    series: dict[str, Sequence[float]],
    *,
    title: str,
    ylabel: str = "",
    horizontal: bool = False,
    width: float = 7.0,
) -> str:
    """Grouped bars: one group per label, one bar per series."""
    n = max(len(labels), 1)
    height = max(2.2, 0.32 * n * max(len(series), 1) + 0.8) if horizontal else 3.0
    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    k = max(len(series), 1)
    w = 0.8 / k
    for j, (name, values) in enumerate(series.items()):
        pos = [i + (j - (k - 1) / 2) * w for i in range(len(labels))]
        if horizontal:
            ax.barh(pos, values, height=w, label=name, color=PALETTE[j % len(PALETTE)])
        else:
            ax.bar(pos, values, width=w, label=name, color=PALETTE[j % len(PALETTE)])
    if horizontal:
        ax.set_yticks(range(len(labels)), labels)
        ax.invert_yaxis()
        ax.set_xlabel(ylabel)
        ax.grid(axis="y", visible=False)
    else:
        ax.set_xticks(
            range(len(labels)),
            labels,
            rotation=30 if n > 6 else 0,
            ha="right" if n > 6 else "center",
        )
        ax.set_ylabel(ylabel)
        ax.grid(axis="x", visible=False)
    ax.set_title(title, loc="left")
    if len(series) > 1:
        ax.legend(
            frameon=False,
            fontsize=8,
            ncols=min(len(series), 4),
            loc="upper left",
            bbox_to_anchor=(0, -0.12 if not horizontal else -0.05),
        )
    return to_svg(fig)


def histogram(
    values: Sequence[float],
    *,
    title: str,
    xlabel: str,
    bins: Any = 10,
    color: str = PALETTE[0],
    xrange: tuple[float, float] | None = None,
) -> str:
    """One histogram."""
    fig = Figure(figsize=(4.6, 2.8))
    ax = fig.add_subplot()
    ax.hist(values, bins=bins, range=xrange, color=color, edgecolor="white")
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.grid(axis="x", visible=False)
    return to_svg(fig)


def counts(hist: dict[int, int], *, title: str, xlabel: str, color: str = PALETTE[2]) -> str:
    """A histogram of integer values already counted (e.g. chain lengths)."""
    fig = Figure(figsize=(4.6, 2.8))
    ax = fig.add_subplot()
    keys = sorted(hist)
    ax.bar(keys, [hist[k] for k in keys], color=color, width=0.8)
    ax.set_xticks(keys)
    ax.set_title(title, loc="left")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("tasks")
    ax.grid(axis="x", visible=False)
    return to_svg(fig)


def pick_iterations(iterations: Sequence[int], limit: int = MAX_PANELS) -> list[int]:
    """At most ``limit`` of ``iterations``, evenly spread, always with the first and the last."""
    its = sorted(set(iterations))
    if len(its) <= limit:
        return its
    step = (len(its) - 1) / (limit - 1)
    return sorted({its[round(i * step)] for i in range(limit)})


def reward_histograms(policy: str, by_iteration: dict[int, list[float]]) -> str:
    """Small multiples: the reward distribution of one policy's training rollouts, one panel per
    iteration."""
    its = pick_iterations(list(by_iteration))
    cols = min(len(its), 4)
    rows = math.ceil(len(its) / cols)
    fig = Figure(figsize=(2.3 * cols + 0.4, 2.0 * rows + 0.5))
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True)
    for ax in axes.flat[len(its) :]:
        ax.set_visible(False)
    for n, (ax, it) in enumerate(zip(axes.flat, its, strict=False)):
        scores = by_iteration[it]
        mean = sum(scores) / len(scores)
        ax.hist(scores, bins=10, range=(0, 1), color=PALETTE[n % len(PALETTE)], edgecolor="white")
        ax.axvline(mean, color="#333", lw=1, ls="--")
        ax.set_title(f"iteration {it}: n={len(scores)}, mean {mean:.2f}", fontsize=8, loc="left")
        ax.grid(axis="x", visible=False)
    for ax in axes[-1]:
        ax.set_xlabel("reward")
    fig.suptitle(f"policy {policy}", x=0.01, ha="left", fontsize=10)
    fig.tight_layout()
    return to_svg(fig)


def curve(curves: dict[str, list[tuple[int, float]]], *, title: str) -> str:
    """Lines of mean reward over iterations."""
    fig = Figure(figsize=(7.0, 3.0))
    ax = fig.add_subplot()
    for j, (name, pts) in enumerate(curves.items()):
        xs, ys = zip(*pts, strict=True) if pts else ((), ())
        ax.plot(xs, ys, marker="o", ms=4, lw=1.8, label=name, color=PALETTE[j % len(PALETTE)])
    ax.set_ylim(-0.03, 1.03)
    ax.set_xlabel("iteration")
    ax.set_ylabel("mean reward")
    its = sorted({x for pts in curves.values() for x, _ in pts})
    if len(its) <= 20:
        ax.set_xticks(its)
    ax.set_title(title, loc="left")
    ax.legend(frameon=False, fontsize=8)
    return to_svg(fig)


def tool_graph(data: dict[str, Any], title: str) -> str:
    """The tool dependency graph (networkx node-link JSON, as the samplers write it) as SVG, the
    tools in one boxed column per resource.

    An edge A → B means A's output feeds one of B's parameters (solid) or A writes state B reads
    (dashed). Tools that change state are orange, read-only tools blue.
    """
    from matplotlib.patches import FancyBboxPatch

    g = nx.node_link_graph(data, directed=True, multigraph=False, edges="links")
    groups: dict[str, list[Any]] = {}
    for n in sorted(g.nodes, key=str):
        groups.setdefault(str(g.nodes[n].get("resource") or "other"), []).append(n)
    tallest = max((len(v) for v in groups.values()), default=1)
    fig = Figure(figsize=(max(4.0, 2.1 * len(groups) + 0.4), 0.55 * tallest + 1.3))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.set_title(f"{title}: {g.number_of_nodes()} tools, {g.number_of_edges()} edges", loc="left")
    if g.number_of_nodes() == 0:
        return to_svg(fig)
    pos: dict[Any, tuple[float, float]] = {}
    for col, (resource, tools) in enumerate(sorted(groups.items())):
        x = col * 2.0
        for row, n in enumerate(tools):
            pos[n] = (x, -float(row))
        ax.add_patch(
            FancyBboxPatch(
                (x - 0.9, -len(tools) + 0.45),
                1.8,
                len(tools) + 0.1,
                boxstyle="round,pad=0.02,rounding_size=0.15",
                fc="#f3f5f8",
                ec="#d5dae2",
                lw=0.8,
                zorder=0,
            )
        )
        ax.text(
            x, 0.75, resource, ha="center", va="bottom", fontsize=8, weight="bold", color="#445"
        )
    data_edges = [(u, v) for u, v, d in g.edges(data=True) if d.get("feeds")]
    state_edges = [(u, v) for u, v, d in g.edges(data=True) if not d.get("feeds")]
    for edges, colour, style in ((data_edges, "#777", "solid"), (state_edges, "#aaa", "dashed")):
        nx.draw_networkx_edges(
            g,
            pos,
            edgelist=edges,
            ax=ax,
            edge_color=colour,
            width=0.8,
            style=style,
            arrowsize=8,
            node_size=60,
            connectionstyle="arc3,rad=0.25",
        )
    order = list(pos)
    colors = [PALETTE[1] if mutates(g.nodes[n]) else PALETTE[0] for n in order]
    nx.draw_networkx_nodes(g, pos, nodelist=order, ax=ax, node_color=colors, node_size=60)
    for n, (x, y) in pos.items():
        ax.text(
            x,
            y - 0.18,
            str(n),
            fontsize=7,
            ha="center",
            va="top",
            zorder=5,
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85},
        )
    ax.set_xlim(-1.0, 2.0 * (len(groups) - 1) + 1.0)
    ax.set_ylim(-tallest - 0.1, 1.3)
    return to_svg(fig)


def mutates(node: dict[str, Any]) -> bool:
    """Whether a graph node's tool changes state (its ``mutates``/``writes``/``kind``
    attributes)."""
    if "mutates" in node:
        return bool(node["mutates"])
    if node.get("writes"):
        return True
    return str(node.get("kind", "")).lower() in {"create", "update", "delete", "action", "write"}
