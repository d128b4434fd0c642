"""Suite-wide hooks, for every test path (tests/, plugins/*/tests, ...): the time each test file
takes, and the slowest files scheduled first.

* ``ENVKERNEL_TEST_TIMES=DIR`` (scripts/test.sh sets ``.test-times``): each test process writes
  ``DIR/run-<worker>.json``, ``{file: [wall s, CPU s of the test process, CPU s of its reaped
  children]}`` (children: the ``envkernel`` runs, sandboxes and servers a test started and waited
  for), and the run ends with a table of the slowest files and the CPU time of all of them.
* Order: test files run longest first (by ``DIR/times.json``, the last time of each file, else by
  ``SLOW_FIRST``), each file's own tests in their order. With ``--dist loadfile
  --no-loadscope-reorder`` the workers take whole files in that order, so no long file starts
  last while the other worker sits idle.
"""

from __future__ import annotations

import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest

TIMES = os.environ.get("ENVKERNEL_TEST_TIMES", "")
"""The folder of per-file times ('' : not recorded)."""
SLOW_FIRST = [
    "tests/test_openapi_realspecs.py",
    "tests/test_openapi_realspecs_2.py",
    "tests/test_docs_serve_examples.py",
    "tests/test_iterations.py",
    "tests/test_install.py",
    "plugins/trl/tests/test_trl.py",
    "tests/test_trainers.py",
    "tests/test_local_workers.py",
    "tests/test_faults.py",
    "tests/test_infra.py",
    "tests/test_openapi_httpface.py",
    "tests/test_export_loading.py",
]
"""The slowest files of a full run (2026-12-04), for when ``TIMES`` holds none yet."""

_seconds: dict[str, list[float]] = {}


def _cpu() -> tuple[float, float]:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Any:
    """Add the test's wall and CPU time (its setup and teardown included) to its file's."""
    start, (me, kids) = time.monotonic(), _cpu()
    try:
        return (yield)
    finally:
        me2, kids2 = _cpu()
        acc = _seconds.setdefault(item.location[0], [0.0, 0.0, 0.0])
        acc[0] += time.monotonic() - start
        acc[1] += me2 - me
        acc[2] += kids2 - kids


def _read(path: Path) -> dict[str, list[float]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _this_run() -> dict[str, list[float]]:
    """The times this run's test processes wrote, by file."""
    out: dict[str, list[float]] = {}
    for f in sorted(Path(TIMES).glob("run-*.json")):
        out.update(_read(f))
    return out


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Longest files first (a stable sort: each file's tests keep their order)."""
    last = {f: t[0] for f, t in _read(Path(TIMES) / "times.json").items()} if TIMES else {}
    rank = {f: len(SLOW_FIRST) - i for i, f in enumerate(SLOW_FIRST)}
    weight = (lambda f: last.get(f, 0.0)) if last else (lambda f: float(rank.get(f, 0)))
    items.sort(key=lambda it: -weight(it.location[0]))


def pytest_sessionstart(session: pytest.Session) -> None:
    """The controller (or a run without workers) clears the last run's per-process files."""
    if TIMES and not hasattr(session.config, "workerinput"):
        Path(TIMES).mkdir(parents=True, exist_ok=True)
        for f in Path(TIMES).glob("run-*.json"):
            f.unlink()


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Each test process writes its files' times."""
    if TIMES and _seconds:
        worker = getattr(session.config, "workerinput", {}).get("workerid", "main")
        Path(TIMES).mkdir(parents=True, exist_ok=True)
        (Path(TIMES) / f"run-{worker}.json").write_text(json.dumps(_seconds, indent=0))


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The slowest files, and the CPU time of the whole run (test processes and children); the
    times are merged into ``times.json`` (the order of the next run)."""
    if not TIMES or hasattr(config, "workerinput"):
        return
    ran = _this_run()
    if not ran:
        return
    merged = {**_read(Path(TIMES) / "times.json"), **ran}
    (Path(TIMES) / "times.json").write_text(json.dumps(merged, indent=0, sort_keys=True))
    tr = terminalreporter
    tr.write_sep("-", "slowest test files (wall s, CPU s of the test process + its children)")
    for f, (wall, me, kids) in sorted(ran.items(), key=lambda kv: -kv[1][0])[:15]:
        tr.write_line(f"{wall:8.1f} {me:8.1f} + {kids:7.1f}  {f}")
    cpu = sum(me + kids for _w, me, kids in ran.values())
    tr.write_line(f"CPU time of the {len(ran)} files: {cpu:.0f} s")
