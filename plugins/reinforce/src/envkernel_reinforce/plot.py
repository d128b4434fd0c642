"""The reward-curve plot (matplotlib, headless)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def plot_curve(
    curve: list[dict[str, Any]], path: Path, title: str = "mean reward per iteration"
) -> Path:
    """Plot train and held-out mean reward per iteration into a PNG at ``path``.

    Iteration 0 is the untrained (uniform random) policy, drawn as a dashed reference line.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    its = [p["iteration"] for p in curve]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=100)
    try:
        for key, label, style in (
            ("train_reward", "train tasks", "o-"),
            ("heldout_reward", "held-out tasks", "s-"),
        ):
            pts = [(i, p[key]) for i, p in zip(its, curve, strict=True) if p.get(key) is not None]
            if pts:
                ax.plot([i for i, _ in pts], [v for _, v in pts], style, label=label)
        first = curve[0].get("heldout_reward")
        if first is not None:
            ax.axhline(
                first,
                linestyle="--",
                color="grey",
                linewidth=1,
                label="random policy (iteration 0, held-out)",
            )
        ax.set_xlabel("iteration")
        ax.set_ylabel("mean reward")
        ax.set_ylim(0, 1.05)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        tmp = path.with_name(path.name + ".tmp")
        fig.savefig(tmp, format="png")
        tmp.replace(path)
    finally:
        plt.close(fig)
    return path
