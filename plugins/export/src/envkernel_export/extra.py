"""The ``export-extra`` plugin: preference pairs and the dataset card (trainer role, broadcast).

Not in the default preset: add it with ``--plugins +export-extra``.

- ``pairs`` appends to ``pairs.jsonl`` one line per group that has at least two scored
  rollouts whose rewards differ: best vs worst (the rule is in :mod:`envkernel_export.pairs`).
- ``card`` writes ``README.md`` (a Hugging Face style dataset card) and ``card.json`` into the
  run folder when the run ends: counts of tasks, rollouts, SFT rows and pairs, per split and per
  environment; the sources and reward settings (from ``config.json``); and the versions of the
  installed envkernel distributions.
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from importlib.metadata import distributions
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.groups import DEFAULT_VAR_TOL, purpose_of, signal
from envkernel_kit.sink import JsonlSink
from envkernel_schemas import GroupScored, ScoredRollout

from . import RlSettings, Sft, SftSettings, _EnvTools
from .pairs import choose_pair, pair_key, pair_row

__all__ = ["Card", "CardSettings", "Pairs", "PairsSettings", "register_trainers"]


class PairsSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``pairs`` exporter."""

    min_margin: float = 0.0
    """A pair needs best − worst reward strictly above this."""
    splits: list[str] = msgspec.field(default_factory=lambda: ["train"])
    """Keep only tasks of these splits."""
    filename: str = "pairs.jsonl"
    """File name in the run folder."""
    fsync: bool = False
    """fsync after every line."""


class Pairs:
    """The ``pairs`` exporter: one chosen/rejected pair per group with differing rewards."""

    Settings = PairsSettings

    def __init__(self, settings: PairsSettings | None = None) -> None:
        self.settings = settings or PairsSettings()
        self._sink: JsonlSink | None = None
        self._tools = _EnvTools()
        self.skipped = 0

    def sink(self, out_dir: Path) -> JsonlSink:
        """The output file."""
        if self._sink is None:
            self._sink = JsonlSink(
                Path(out_dir) / self.settings.filename, pair_key, fsync=self.settings.fsync
            )
        return self._sink

    def pair(self, group: GroupScored) -> tuple[ScoredRollout, ScoredRollout] | None:
        """The group's (chosen, rejected), or None (wrong split or purpose, fewer than 2, equal
        rewards)."""
        s = self.settings
        if purpose_of(group) != "train" or (s.splits and group.task.split not in s.splits):
            return None
        return choose_pair(group, min_margin=s.min_margin)

    def row(
        self, group: GroupScored, tools: list[dict[str, Any]] | None = None
    ) -> dict[str, Any] | None:
        """The group's pair row, or None when it gives no pair (see :meth:`pair`)."""
        pair = self.pair(group)
        return None if pair is None else pair_row(group, pair[0], pair[1], tools)

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Append the group's pair, if it gives one."""
        sink = self.sink(ctx.out_dir)
        if f"pair:{group.id}" in sink:
            return
        pair = self.pair(group)
        if pair is None:
            self.skipped += 1
            return
        tools = await self._tools.tools(group.task, ctx)
        sink.write(pair_row(group, pair[0], pair[1], tools))

    async def finish(self, ctx: Any) -> None:
        """Close the file (created empty when no group gave a pair)."""
        sink = self.sink(ctx.out_dir)
        sink.close()
        sink.path.parent.mkdir(parents=True, exist_ok=True)
        sink.path.touch()
        ctx.log.info("pairs written", groups_without_pair=self.skipped)


class CardSettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``card`` component."""

    filename: str = "README.md"
    """The card's file name in the run folder."""
    json_filename: str = "card.json"
    """The same numbers as JSON ("" to skip)."""
    title: str = ""
    """Card title (default: ``envkernel run <run id>``)."""


def _count_lines(path: Path) -> int:
    if not path.exists():
        return 0
    with open(path, "rb") as fh:
        return sum(1 for line in fh if line.endswith(b"\n") and line.strip())


def envkernel_versions() -> dict[str, str]:
    """Versions of the installed ``envkernel*`` distributions."""
    out: dict[str, str] = {}
    for d in distributions():
        name = (d.metadata["Name"] or "") if d.metadata else ""
        if name.lower().replace("_", "-").startswith("envkernel"):
            out[name] = d.version
    return dict(sorted(out.items()))


def _resolved_settings(
    cfg: dict[str, Any], component: str, given: dict[str, Any]
) -> dict[str, Any]:
    """A component's settings with its defaults filled in: the kernel's ``resolved`` record of the
    run's config, under what was given (``given`` alone for a component the run did not resolve)."""
    return {**(cfg.get("resolved") or {}).get(component, {}), **given}


class _Tally:
    def __init__(self) -> None:
        self.tasks: set[str] = set()
        self.groups = 0
        self.rollouts = 0
        self.failed = 0
        self.reward_sum = 0.0
        self.sft_rows = 0
        self.pairs = 0

    def add(self, group: GroupScored, sft_rows: int, pair: bool) -> None:
        self.tasks.add(group.task.id)
        self.groups += 1
        self.rollouts += len(group.rollouts)
        self.failed += group.failed
        self.reward_sum += sum(r.reward.score for r in group.rollouts)
        self.sft_rows += sft_rows
        self.pairs += int(pair)

    def as_dict(self) -> dict[str, Any]:
        return {
            "tasks": len(self.tasks),
            "groups": self.groups,
            "rollouts": self.rollouts,
            "failed_rollouts": self.failed,
            "mean_reward": round(self.reward_sum / self.rollouts, 6) if self.rollouts else None,
            "sft_rows": self.sft_rows,
            "pairs": self.pairs,
        }


_CARD_FILES = ("sft.jsonl", "pairs.jsonl", "grpo.jsonl", "rl.parquet")
"""Files the card's header names as Hugging Face dataset configs (when present)."""
_COUNT_COLUMNS = (
    "tasks",
    "groups",
    "rollouts",
    "failed_rollouts",
    "mean_reward",
    "sft_rows",
    "pairs",
)
"""Columns of the card's count tables."""


def _card_header(files: dict[str, Any]) -> list[str]:
    """The card's YAML header: a ``configs`` entry per data file present, and the tags."""
    configs = [(n.split(".", 1)[0], n) for n in _CARD_FILES if n in files]
    head = ["---", "configs:"] if configs else ["---"]
    for cname, fname in configs:
        head += [
            f"- config_name: {cname}",
            "  data_files:",
            "  - split: train",
            f"    path: {fname}",
        ]
    return head + ["tags:", "- envkernel", "- tool-use", "---", ""]


def _count_table(rows: dict[str, dict[str, Any]], label: str) -> list[str]:
    """A Markdown table of counts, one row per key of ``rows``."""
    cols = _COUNT_COLUMNS
    t = [f"| {label} | " + " | ".join(cols) + " |", "|" + "---|" * (len(cols) + 1)]
    for k, v in rows.items():
        t.append(f"| {k} | " + " | ".join("" if v[c] is None else str(v[c]) for c in cols) + " |")
    return t + [""]


def _json_block(value: Any) -> list[str]:
    """A fenced JSON block and the blank line after it."""
    return ["```json", json.dumps(value, indent=2), "```", ""]


class Card:
    """The ``card`` component: counts every scored group and writes the dataset card at the end.

    SFT rows and pairs are counted with the ``sft`` and ``pairs`` rules and settings of this run
    (from ``config.json``), so the numbers do not depend on the order trainers finish in.
    """

    Settings = CardSettings

    def __init__(self, settings: CardSettings | None = None) -> None:
        self.settings = settings or CardSettings()
        self._seen: set[str] = set()
        self._total = _Tally()
        self._split: dict[str, _Tally] = defaultdict(_Tally)
        self._env: dict[str, _Tally] = defaultdict(_Tally)
        self._sft: Sft | None = None
        self._pairs: Pairs | None = None
        self._rl_splits: list[str] = []
        self._rl_tasks: set[str] = set()
        self._grpo_splits: list[str] = []
        self._grpo_var_tol = DEFAULT_VAR_TOL
        self._grpo_rows = 0

    def _config(self, ctx: Any) -> dict[str, Any]:
        path = Path(ctx.out_dir) / "config.json"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return msgspec.to_builtins(ctx.config) if ctx.config is not None else {}

    def _settings_of(self, cfg: dict[str, Any], name: str, kind: type) -> Any:
        merged = {**cfg.get("settings", {}).get(name, {}), **cfg.get("overrides", {}).get(name, {})}
        try:
            return msgspec.convert(merged, kind)
        except msgspec.ValidationError:
            return kind()

    async def consume(self, group: GroupScored, ctx: Any) -> None:
        """Count the group once."""
        if group.id in self._seen or purpose_of(group) != "train":
            return
        self._seen.add(group.id)
        if self._sft is None:
            cfg = self._config(ctx)  # read once: the run's settings do not change
            self._sft = Sft(self._settings_of(cfg, "sft", SftSettings))
            self._pairs = Pairs(self._settings_of(cfg, "pairs", PairsSettings))
            self._rl_splits = self._settings_of(cfg, "rl", RlSettings).splits
            grpo = _resolved_settings(
                cfg,
                "grpo",
                {
                    **cfg.get("settings", {}).get("grpo", {}),
                    **cfg.get("overrides", {}).get("grpo", {}),
                },
            )
            self._grpo_splits = list(grpo.get("splits", ["train"]))
            self._grpo_var_tol = float(grpo.get("var_tol", DEFAULT_VAR_TOL))

        if not self._rl_splits or group.task.split in self._rl_splits:
            self._rl_tasks.add(group.task.id)
        if (
            not self._grpo_splits or group.task.split in self._grpo_splits
        ):  # the rows grpo writes for the group
            verdict, usable = signal(group, self._grpo_var_tol)
            self._grpo_rows += len(usable) if verdict == "kept" else 0

        sft_rows = len(self._sft.keep(group))
        pair = self._pairs.pair(group) is not None
        for tally in (self._total, self._split[group.task.split], self._env[group.task.env_id]):
            tally.add(group, sft_rows, pair)

    def data(self, ctx: Any) -> dict[str, Any]:
        """Everything the card says, as JSON-able data."""
        cfg = self._config(ctx)
        out = Path(ctx.out_dir)
        components = cfg.get("components", {})
        reward = cfg.get("reward") or (components.get("reward_model") or [""])[0]
        trainers = set(components.get("trainer", [])) or {"sft", "rl", "pairs", "grpo"}
        made = {
            "sft": ("sft.jsonl", self._total.sft_rows),
            "rl": ("rl.parquet", len(self._rl_tasks)),
            "pairs": ("pairs.jsonl", self._total.pairs),
            "grpo": ("grpo.jsonl", self._grpo_rows),
        }
        # counted from the events (trainers finish in any order, so the files may not be complete
        # yet)
        files = {fname: n for comp, (fname, n) in made.items() if comp in trainers}
        if "rl" in trainers:
            files["rl.jsonl"] = len(self._rl_tasks)
        for name in ("tasks.jsonl", "rollouts.jsonl"):
            if (out / name).exists():
                files[name] = _count_lines(out / name)
        settings = {**cfg.get("settings", {})}
        for k, v in cfg.get("overrides", {}).items():
            settings[k] = {**settings.get(k, {}), **v}
        return {
            "run_id": cfg.get("run_id", ctx.run_id),
            "counts": self._total.as_dict(),
            "per_split": {k: v.as_dict() for k, v in sorted(self._split.items())},
            "per_env": {k: v.as_dict() for k, v in sorted(self._env.items())},
            "sources": {
                "sources": cfg.get("sources", []),
                "envs_per_source": cfg.get("envs"),
                "seed": cfg.get("seed"),
                "policy": cfg.get("policy"),
                "rollouts_per_task": cfg.get("rollouts_per_task"),
                "iterations": cfg.get("iterations"),
                "plugins": cfg.get("selected", []),
            },
            "reward": {
                "model": reward,
                "settings": _resolved_settings(cfg, reward, settings.get(reward, {}))
                if reward
                else {},
            },
            "export_settings": {
                "sft": msgspec.to_builtins(
                    self._sft.settings if self._sft else self._settings_of(cfg, "sft", SftSettings)
                ),
                "pairs": msgspec.to_builtins(
                    self._pairs.settings
                    if self._pairs
                    else self._settings_of(cfg, "pairs", PairsSettings)
                ),
            },
            "files": files,
            "versions": envkernel_versions(),
        }

    def render(self, data: dict[str, Any]) -> str:
        """The card as Markdown with a Hugging Face ``configs`` header for the files present."""
        files = data["files"]
        title = self.settings.title or f"envkernel run {data['run_id']}"
        lines = _card_header(files) + [
            f"# {title}",
            "",
            "Tool-use data made by envkernel: synthesized environments, gated tasks, scored "
            "rollouts.",
            "",
        ]
        lines += ["## Counts", ""] + _count_table({"all": data["counts"]}, "")
        lines += ["### Per split", ""] + _count_table(data["per_split"], "split")
        lines += ["### Per environment", ""] + _count_table(data["per_env"], "env")
        lines += ["## Files", "", "| file | rows |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in files.items()] + [""]
        lines += [
            "Rows with varying shapes (tool schemas, tool arguments, states) are JSON "
            "strings, so every",
            'file loads with `datasets.load_dataset("json"|"parquet", data_files=...)` and '
            "with pyarrow.",
            "",
            "## Sources",
            "",
            *_json_block(data["sources"]),
            "## Reward",
            "",
            *_json_block(data["reward"]),
            "Export settings (SFT keeps rollouts scoring at least `min_reward`; a pair is "
            "the best vs",
            "the worst rollout of a group with at least two scored rollouts whose rewards differ):",
            "",
            *_json_block(data["export_settings"]),
            "## Versions",
            "",
            "| distribution | version |",
            "|---|---|",
        ]
        lines += [f"| {k} | {v} |" for k, v in data["versions"].items()] + [""]
        return "\n".join(lines)

    async def finish(self, ctx: Any) -> None:
        """Write ``README.md`` (and ``card.json``), each atomically replaced."""
        data = self.data(ctx)
        out = Path(ctx.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        todo = [(self.settings.filename, self.render(data))]
        if self.settings.json_filename:
            todo.append((self.settings.json_filename, json.dumps(data, indent=2)))
        for name, text in todo:
            tmp = out / (name + ".tmp")
            tmp.write_text(text)
            os.replace(tmp, out / name)
        ctx.log.info(
            "dataset card written",
            path=str(out / self.settings.filename),
            **{k: data["counts"][k] for k in ("tasks", "rollouts", "pairs")},
        )


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``pairs`` and ``card`` components."""
    register("pairs", Pairs)
    register("card", Card)
