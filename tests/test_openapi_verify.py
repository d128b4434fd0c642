"""The ``probe`` verifier on model environments: corpus yield, and recall on broken environments."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from envkernel_kit.testing import RunnerContext
from envkernel_openapi import corpus_files, synthesize_file
from envkernel_probe import Probe, ProbeSettings
from envkernel_probe.broken import CODE_FAULTS, caught, model_faults, notes_env

process = pytest.importorskip("envkernel_process")


async def verify_all(envs: list[Any], settings: ProbeSettings | None = None) -> list[Any]:
    runner = process.ProcessRunner()
    out = []
    try:
        for env in envs:
            for attempt in range(
                3
            ):  # a sandbox that cannot start is the runner's problem, not the env's
                try:
                    out.append(
                        await Probe(settings).verify(env, RunnerContext(runner, component="probe"))
                    )
                    break
                except process.SandboxError:
                    if attempt == 2:
                        raise
    finally:
        await runner.aclose()
    return out


def test_corpus_is_kept_with_all_its_tools() -> None:
    envs = [synthesize_file(f)[0] for f in corpus_files()]
    reports = asyncio.run(verify_all(envs))
    kept_whole = [
        r
        for r, e in zip(reports, envs, strict=True)
        if r.kept and not r.tools_dropped and len(r.tools_kept) == len(e.tools)
    ]
    assert len(kept_whole) / len(envs) >= 0.95, {
        e.id: r.tools_dropped for e, r in zip(envs, reports, strict=True)
    }
    assert all(
        r.checks > 3 * len(e.tools) for r, e in zip(reports, envs, strict=True)
    )  # invariants ran, not only one call per tool


def test_healthy_notes_app_passes() -> None:
    (report,) = asyncio.run(verify_all([notes_env()]))
    assert report.kept and report.tools_dropped == {} and report.failures == []


def test_recall_on_broken_code_envs() -> None:
    faults = list(CODE_FAULTS)
    reports = asyncio.run(verify_all([notes_env(f) for f in faults]))
    hits = {f: caught(r, CODE_FAULTS[f][0]) for f, r in zip(faults, reports, strict=True)}
    assert sum(hits.values()) / len(hits) >= 0.9, [f for f, ok in hits.items() if not ok]
    # the reasons say what is wrong
    by_fault = dict(zip(faults, reports, strict=True))
    assert "did not persist" in by_fault["create_no_persist"].tools_dropped["create_note"]
    assert "deleted nothing" in by_fault["delete_noop"].tools_dropped["delete_note"]
    assert any(
        w in by_fault["update_wrong_row"].tools_dropped["update_note"]
        for w in ("other rows", "did not persist")
    )
    assert "omits" in by_fault["list_omits"].tools_dropped["list_notes"]


def test_recall_on_broken_model_envs() -> None:
    cases = []
    for f in corpus_files()[:4]:
        env, _ = synthesize_file(f)
        cases += model_faults(env)
    reports = asyncio.run(verify_all([b for _f, _t, b in cases]))
    hits = [caught(r, tool) for (_f, tool, _b), r in zip(cases, reports, strict=True)]
    assert len(cases) >= 40
    assert sum(hits) / len(hits) >= 0.9, [
        (f, t) for (f, t, _b), ok in zip(cases, hits, strict=True) if not ok
    ]


def test_threshold_is_configurable() -> None:
    (report,) = asyncio.run(
        verify_all([notes_env("delete_noop")], ProbeSettings(min_tool_share=1.0))
    )
    assert not report.kept and "delete_note" in report.tools_dropped
    (report,) = asyncio.run(verify_all([notes_env("delete_noop")]))
    assert report.kept and list(report.tools_dropped) == ["delete_note"]  # 7/8 >= the default 0.8
