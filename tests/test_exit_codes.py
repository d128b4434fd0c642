"""Exit codes that tell the truth (issue 12, point 6): a run that emits no task exits 4, a run in
which a selected plugin failed to import exits 1 (tests/test_failures.py), and ``--source`` naming
a path that does not exist is a usage error that says so."""

from __future__ import annotations

import pytest

from envkernel.errors import EXIT_EMPTY, EXIT_FAILURES, EXIT_OK, EXIT_USAGE

pytestmark = pytest.mark.timeout(300)


def test_the_codes_are_distinct_and_documented(envk) -> None:
    assert len({EXIT_OK, EXIT_FAILURES, EXIT_USAGE, 3, EXIT_EMPTY}) == 5 and EXIT_EMPTY == 4
    proc = envk("run", "--help")
    assert proc.returncode == 0
    text = " ".join(proc.stdout.split())
    assert (
        "4 finished, nothing failed, but no task was emitted" in text
        and "a selected plugin is broken" in text
    )


def test_a_run_that_emits_no_task_exits_4(envk) -> None:
    # a gate that can never pass: the two gate policies swapped
    cfg = envk.cwd / "swapped.toml"
    cfg.write_text(
        'gate_reference = "nothing"\ngate_nothing = "reference"\n[chains]\ntasks_per_env = 3\n'
    )
    run = envk.run("--config", str(cfg), run_id="empty")
    s = run.summary
    assert s["tasks"] == 0 and s["tasks_proposed"] > 0 and s["failures"] == 0
    assert s["rejected"] == {"task:reference_below_1": s["tasks_proposed"]}
    assert run.proc.returncode == EXIT_EMPTY and s["exit_code"] == EXIT_EMPTY, run.proc.stderr[
        -3000:
    ]
    assert "0 tasks" in run.proc.stderr


def test_one_policy_cannot_play_both_gate_roles(envk) -> None:
    cfg = envk.cwd / "same.toml"
    cfg.write_text('gate_reference = "nothing"\n')
    proc = envk("run", "--no-progress", "--source", "sample", "--config", str(cfg))
    assert (
        proc.returncode == EXIT_USAGE
        and "gate_reference and gate_nothing are both 'nothing'" in proc.stderr
    )


@pytest.mark.parametrize(
    "source", ["specs/missing.yaml", "./nowhere", "missing.json", "openapi:specs/missing.yaml"]
)
def test_a_source_path_that_does_not_exist_is_named(envk, source: str) -> None:
    proc = envk("run", "--no-progress", "--source", source)
    path = source.partition(":")[2] if source.startswith("openapi:") else source
    assert proc.returncode == EXIT_USAGE, proc.stderr[-2000:]
    assert (
        f"no such file or folder: {path}" in proc.stderr
        and "no selected synthesizer handles" not in proc.stderr
    )


def test_an_unknown_source_kind_still_says_so(envk) -> None:
    proc = envk("run", "--no-progress", "--source", "sampel")
    assert (
        proc.returncode == EXIT_USAGE
        and "no selected synthesizer handles source kind 'sampel'" in proc.stderr
    )
