"""``envkernel report``: the page of a real run, rendered by headless Chromium, and of a damaged run
folder.

One real (small) run is shared by the module: the ``sample`` environment, 2 iterations of groups of
3 rollouts of the ``mutant`` policy (near misses of the reference, so the rewards are spread).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from click.testing import CliRunner
from PIL import Image

from envkernel.cli import Group
from envkernel_report import build_report, report_cmd
from envkernel_report.charts import PALETTE, pick_iterations
from envkernel_report.load import SAMPLE_KINDS, NotARunFolder, load_run, task_kind
from envkernel_report.page import DENSE_EDGES, SECTIONS, render

ENVKERNEL = str(Path(sys.executable).with_name("envkernel"))
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium(tmp: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """Run Debian's Chromium headless (as docs/report.md documents) with a fresh profile in
    ``tmp``."""
    exe = shutil.which("chromium")
    assert exe, (
        "chromium is not installed: run scripts/install-chromium.sh (as root), or apt-get "
        "install chromium"
    )
    return subprocess.run(
        [exe, *CHROMIUM_FLAGS, f"--user-data-dir={tmp / 'profile'}", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a real ``envkernel run`` (sample env, 2 iterations, -G 3, the mutant
    policy)."""
    out = tmp_path_factory.mktemp("runs")
    subprocess.run(
        [
            ENVKERNEL,
            "run",
            "--source",
            "sample",
            "--iterations",
            "2",
            "-G",
            "3",
            "--policy",
            "mutant",
            "--out",
            str(out),
            "--run-id",
            "reportrun",
            "--no-progress",
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    return out / "reportrun"


@pytest.fixture(scope="module")
def page(run_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """``envkernel report RUN_DIR --out FILE`` run as a command; the page's path and its one-line
    summary."""
    out = tmp_path_factory.mktemp("page") / "report.html"
    done = subprocess.run(
        [ENVKERNEL, "report", str(run_dir), "--out", str(out)],
        check=True,
        capture_output=True,
        text=True,
        timeout=240,
    )
    return out, done.stdout


class _Parsed(HTMLParser):
    """Element ids, tag counts and text of a page (to check its structure without a browser)."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.tags: dict[str, int] = {}
        self.srcs: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        a = dict(attrs)
        if a.get("id"):
            self.ids.add(a["id"] or "")
        self.srcs += [v for k, v in attrs if k in ("src", "href") and v and not v.startswith("#")]

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(html: str) -> _Parsed:
    p = _Parsed()
    p.feed(html)
    return p


def test_the_page_of_a_real_run_renders_in_chromium_with_its_charts(
    run_dir: Path, page: tuple[Path, str], tmp_path: Path
) -> None:
    path, summary_line = page
    summary = json.loads((run_dir / "summary.json").read_text())
    assert (
        f"report of run reportrun: 1 envs, {summary['tasks']} tasks, {summary['rollouts']} rollouts"
        in summary_line
    )
    assert str(path) in summary_line and "note" not in summary_line
    html = path.read_text()
    # self-contained: nothing to fetch, no scripts
    p = parse(html)
    assert (
        p.srcs == []
        and "<script" not in html
        and not re.search(
            r"(src|href)\s*=\s*[\"']?(https?:|//)|url\(\s*['\"]?(https?:|//)|@import", html
        )
    )
    assert set(SECTIONS) <= p.ids and "notes" not in p.ids
    # the DOM as Chromium built it: the title, every section, and one inline SVG per chart
    dom = chromium(tmp_path, "--dump-dom", path.as_uri()).stdout
    assert "<title>envkernel run reportrun</title>" in dom and "envkernel run reportrun</h1>" in dom
    for s in SECTIONS:
        assert f'id="{s}"' in dom
    # verification + 1 reward histogram (policy mutant) + curve + chain lengths + difficulty +
    # gate's mutants + 1 tool graph
    assert dom.count('<svg class="chart"') >= 7
    assert "policy mutant" in dom and "shop-v1" in dom and "iteration 1: n=" in dom
    # the screenshot: not blank, the header dark, and the charts' colours present in quantity
    shot = tmp_path / "page.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1280,3400", path.as_uri())
    img = Image.open(shot).convert("RGB")
    assert img.size == (1280, 3400)
    colours = img.getcolors(maxcolors=1 << 20) or []
    assert len(colours) > 200, "the screenshot is (nearly) blank"
    assert img.getpixel((640, 10)) == (0x1D, 0x23, 0x30)  # the header bar
    counts = {c: n for n, c in colours}
    for hex_ in PALETTE[:3]:  # blue, orange, green: bars, histograms, graph nodes
        rgb = tuple(int(hex_[i : i + 2], 16) for i in (1, 3, 5))
        near = sum(
            n
            for c, n in counts.items()
            if max(abs(a - b) for a, b in zip(c, rgb, strict=True)) <= 6
        )
        assert near > 800, f"too few pixels of the chart colour {hex_}: {near}"


def test_the_page_shows_what_the_run_folder_holds(run_dir: Path, page: tuple[Path, str]) -> None:
    data = load_run(run_dir)
    summary = json.loads((run_dir / "summary.json").read_text())
    assert data.complete and data.notes == []
    assert sum(len(v) for v in data.rewards.values()) == summary["rollouts"]
    assert {p for p, _ in data.rewards} == {"mutant"} and {i for _, i in data.rewards} == {0, 1}
    assert {str(k): v for k, v in data.chain_lengths.items()} == summary["chain_lengths"]
    assert (
        data.envs["shop-v1"].kept
        and data.envs["shop-v1"].tasks == summary["verification"]["shop-v1"]["tasks"]
    )
    text = " ".join(parse(page[0].read_text()).text)
    assert f"{summary['tasks']}" in text and "No plugin failed." in text
    curve = data.reward_curve()["all rollouts"]
    assert [round(y, 6) for _, y in curve] == [round(y, 6) for y in summary["reward_curve"]]


def test_a_damaged_interrupted_run_folder_gets_a_page_with_notes(
    run_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "interrupted"
    shutil.copytree(run_dir, bad, ignore=shutil.ignore_patterns("nats", "report.html"))
    (bad / "summary.json").unlink()  # killed before the end: no summary
    rollouts = (bad / "rollouts.jsonl").read_bytes()
    lines = rollouts.splitlines(keepends=True)
    (bad / "rollouts.jsonl").write_bytes(
        b"".join(lines[:5]) + lines[5][: len(lines[5]) // 2]
    )  # a torn last line
    (bad / "envs" / "shop-v1" / "graph.json").unlink()
    (bad / "tasks.jsonl").unlink()
    (bad / "failures.jsonl").write_text(
        json.dumps(
            {
                "plugin": "mysampler",
                "role": "sampler",
                "event_kind": "env.verified",
                "classification": "plugin",
                "error_type": "KeyError",
                "message": "'x' <b>",
                "traceback": "Traceback ...",
            }
        )
        + "\n"
    )
    (bad / "envs" / "broken").mkdir()
    (bad / "envs" / "broken" / "rejected.json").write_text(
        json.dumps({"reason": "no_tools", "report": {}})
    )
    out, data = build_report(bad, tmp_path / "out" / "r.html", show_progress=False)
    assert data.envs["broken"].kept is False and data.rejected["env:no_tools"] == 1
    html = out.read_text()
    p = parse(html)
    assert "notes" in p.ids and set(SECTIONS) <= p.ids
    text = " ".join(p.text)
    assert "This run is incomplete" in text and "summary.json is missing" in text
    assert "rollouts.jsonl: 1 line(s) could not be read (first at line 6" in text
    assert "graph.json is missing" in text and "tasks.jsonl is missing" in text
    assert "env:no_tools" in text and "rejected no_tools" in " ".join(
        text.split()
    )  # the rejection chart, the env's status
    assert sum(len(v) for v in data.rewards.values()) == 5  # the whole lines are kept
    assert "mutant (from rollouts.jsonl)" in data.reward_curve()
    assert "mysampler" in text and "&#39;x&#39; &lt;b&gt;" in html  # the failures table, escaped
    # an aborted run (summary written, run stopped early) says so at the top
    summary = json.loads((run_dir / "summary.json").read_text()) | {
        "aborted": "timed out after 5 s",
        "exit_code": 3,
    }
    (bad / "summary.json").write_text(json.dumps(summary))
    text = " ".join(parse(render(load_run(bad))).text)
    assert "The run stopped early: timed out after 5 s" in text and "exit code 3" in text


def test_a_workspace_env_counts_its_source_in_task_files_not_operations(
    run_dir: Path, tmp_path: Path
) -> None:
    both = tmp_path / "both"
    shutil.copytree(run_dir, both, ignore=shutil.ignore_patterns("nats", "report.html"))
    summary = json.loads((both / "summary.json").read_text())
    summary["verification"]["pinch-x"] = {
        "kept": True,
        "kind": "workspace",
        "operations": 4,
        "tools_kept": 8,
        "tasks": 2,
    }
    summary["verification"]["api-y"] = {
        "kept": True,
        "kind": "model",
        "operations": 7,
        "tools_kept": 6,
        "tasks": 3,
    }
    (both / "summary.json").write_text(json.dumps(summary))
    data = load_run(both)
    assert data.envs["pinch-x"].kind == "workspace" and data.envs["shop-v1"].kind != "workspace"
    rows = [" ".join(r.split()) for r in re.findall(r"<tr><td>(.*?)</tr>", render(data), re.S)]
    pinch = next(r for r in rows if r.startswith("pinch-x<"))
    assert "4 task files" in pinch and "operations" not in pinch, pinch
    api = next(r for r in rows if r.startswith("api-y<"))
    assert "7 operations" in api and "task files" not in api, api


def test_a_folder_that_is_not_a_run_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "runs" / "20260101-000000-abc").mkdir(parents=True)
    (tmp_path / "runs" / "20260101-000000-abc" / "config.json").write_text("{}")
    # the kernel's command group (its error handling), holding only this command: no plugin loading
    group = Group()
    group.add_command(report_cmd)
    result = CliRunner().invoke(group, ["report", str(tmp_path / "runs")])
    assert result.exit_code == 2
    assert (
        "is not a run folder" in result.output
        and "give one of them" in result.output
        and "20260101-000000-abc" in result.output
    )
    with pytest.raises(NotARunFolder, match="is not a folder: give the folder of one run"):
        load_run(tmp_path / "nowhere")


def test_at_most_eight_iterations_get_a_histogram_panel() -> None:
    assert pick_iterations(list(range(5))) == [0, 1, 2, 3, 4]
    picked = pick_iterations(list(range(30)))
    assert len(picked) == 8 and picked[0] == 0 and picked[-1] == 29


def test_each_env_shows_sample_tasks_with_reference_and_a_rollout_transcript(
    run_dir: Path, page: tuple[Path, str]
) -> None:
    data = load_run(run_dir)
    tasks = [json.loads(line) for line in (run_dir / "tasks.jsonl").read_text().splitlines()]
    samples = data.samples["shop-v1"]
    assert 1 <= len(samples) <= len(SAMPLE_KINDS) and len({s.id for s in samples}) == len(samples)
    by_id = {t["id"]: t for t in tasks}
    for s in samples:
        t = by_id[s.id]
        assert s.request == t["request"] and [n for n, _ in s.calls] == [
            c["name"] for c in t["calls"]
        ]
        assert s.kind == task_kind(len(t["calls"]), t["outcome"]["mutates"])
        assert s.answer == t["outcome"]["answer"]
        assert s.rollout is not None and s.rollout["task_id"] == s.id
    # one of each kind where the env has one: the smallest id of the kind
    for kind in {task_kind(len(t["calls"]), t["outcome"]["mutates"]) for t in tasks}:
        first = min(
            t["id"] for t in tasks if task_kind(len(t["calls"]), t["outcome"]["mutates"]) == kind
        )
        assert first in {s.id for s in samples}
    html = page[0].read_text()
    for s in samples:
        block = html[html.index(f'id="sample-{s.id}"') :]
        block = block[
            : block.index('<div class="sample"', 1) if '<div class="sample"' in block[1:] else None
        ]
        text = " ".join(parse(block).text)
        assert s.calls[0][0] in text and "Rollout" in text and "policy mutant" in text
    # the pick does not depend on the order of tasks.jsonl
    shuffled = run_dir.parent / "shuffled"
    shutil.copytree(run_dir, shuffled, ignore=shutil.ignore_patterns("nats", "report.html"))
    lines = (run_dir / "tasks.jsonl").read_text().splitlines()
    (shuffled / "tasks.jsonl").write_text("\n".join(reversed(lines)) + "\n")
    assert [s.id for s in load_run(shuffled).samples["shop-v1"]] == [s.id for s in samples]


def test_a_long_transcript_is_cut_and_says_so(run_dir: Path, tmp_path: Path) -> None:
    data = load_run(run_dir)
    s = data.samples["shop-v1"][0]
    assert s.rollout is not None
    msgs = s.rollout["trajectory"]["messages"]
    msgs.append({"role": "tool", "content": "x" * 5000})
    msgs.extend({"role": "assistant", "content": f"turn {i}"} for i in range(40))
    text = " ".join(parse(render(data)).text)
    assert "[4,700 more characters]" in text and "more message(s) left out" in text


def test_a_dense_tool_graph_is_a_table_and_a_sparse_one_is_drawn(
    run_dir: Path, tmp_path: Path
) -> None:
    dense = json.loads((run_dir / "envs" / "shop-v1" / "graph.json").read_text())
    assert len(dense["links"]) > DENSE_EDGES  # the sample env's graph is dense
    html = render(load_run(run_dir))
    table = html[html.index('id="graph-shop-v1"') :]
    table = table[: table.index("</table>")]
    feeds = {(str(e["source"]), str(e["target"])) for e in dense["links"] if e.get("feeds")}
    src, dst = sorted(feeds)[0]
    row = next(r for r in table.split("<tr") if f">{src}</td>" in r)
    assert dst in row and "<svg" not in table
    sparse = tmp_path / "sparse"
    shutil.copytree(run_dir, sparse, ignore=shutil.ignore_patterns("nats", "report.html"))
    dense["links"] = dense["links"][:10]
    (sparse / "envs" / "shop-v1" / "graph.json").write_text(json.dumps(dense))
    html = render(load_run(sparse))
    fig = html[html.index('<figure id="graph-shop-v1">') :]
    fig = fig[: fig.index("</figure>")]
    assert "<svg" in fig and "10 edges" in fig
    resources = {str(n.get("resource")) for n in dense["nodes"]}
    assert all(f">{r}<" in fig for r in resources)  # one labelled box per resource


def test_an_eval_run_shows_its_table(run_dir: Path, tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    shutil.copytree(run_dir, ev, ignore=shutil.ignore_patterns("nats", "report.html"))
    group = {
        "tasks": 4,
        "attempts": 12,
        "passed": 7,
        "mean": 0.6,
        "mean_ci": [0.4, 0.8],
        "pass@1": 0.5833,
        "pass@1_ci": [0.3333, 0.8333],
        "pass@k": 0.75,
        "pass@k_ci": [0.5, 1.0],
        "pass@k_tasks": 4,
    }
    (ev / "eval.json").write_text(
        json.dumps(
            {
                "policy": "mutant",
                "k": 3,
                "tasks": 4,
                "attempts": 12,
                "attempts_failed": 0,
                "overall": group,
                "by_category": {"e-commerce": group},
                "by_source": {"sample:": group},
            }
        )
    )
    html = render(load_run(ev))
    section = html[html.index('id="eval"') : html.index('id="verification"')]
    text = " ".join(parse(section).text)
    assert "pass@3" in text and "0.583 [0.333, 0.833]" in text and "0.750 [0.500, 1.000]" in text
    assert "by category" in text and "e-commerce" in text and "by source" in text
    assert "Not an" in " ".join(parse(render(load_run(run_dir))).text)


def test_a_trainer_s_per_kind_rewards_are_drawn_as_learning_curves(
    run_dir: Path, tmp_path: Path
) -> None:
    learned = tmp_path / "learned"
    shutil.copytree(run_dir, learned, ignore=shutil.ignore_patterns("nats", "report.html"))
    summary = json.loads((learned / "summary.json").read_text())
    for k, it in enumerate(summary["iterations"]):  # as the trl trainer reports them
        metrics = {"reward_train": 0.1 + 0.2 * k, "reward_heldout_split": 0.05 + 0.1 * k}
        it["updates"] = {"trl": {"policy": "", "ref": f"u{k}", "metrics": metrics}}
        it["updates"]["trl"]["metrics"]["reward_heldout_env"] = 0.02
    (learned / "summary.json").write_text(json.dumps(summary))
    config = json.loads((learned / "config.json").read_text())
    config.setdefault("overrides", {})["trl"] = {"holdout_envs": ["shop-v1"]}
    (learned / "config.json").write_text(json.dumps(config))
    data = load_run(learned)
    curves = data.learning_curves()
    assert curves == {
        "train split": [(0, 0.1), (1, 0.30000000000000004)],
        "held-out split (chain signatures never trained on)": [(0, 0.05), (1, 0.15000000000000002)],
        "held-out environment (shop-v1)": [(0, 0.02), (1, 0.02)],
    }
    html = render(data)
    assert "Mean reward per iteration, by kind of task" in html
    assert "held-out environment (shop-v1)" in html
    # a run without such metrics has no learning-curve chart
    assert load_run(run_dir).learning_curves() == {}
    assert "by kind of task" not in render(load_run(run_dir))
