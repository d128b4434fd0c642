"""``envkernel --help`` and ``envkernel plugins`` import no plugin; ``envkernel plugins --json``
loads every installed plugin (the workspace's: the default preset and all the others) but imports
no model client or dataframe library; the RL
exporter writes ``rl.parquet`` without pandas."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("openai", "httpx", "pandas", "pyarrow", "matplotlib", "numpy", "networkx")
"""Libraries a start-up must not import (each costs from a tenth of a second to seconds)."""

IN_PROCESS = """
import json, sys
from envkernel.cli import cli
try:
    cli(sys.argv[3:], prog_name="envkernel", standalone_mode=False)
except SystemExit:
    pass
with open(sys.argv[1], "w") as f:
    json.dump(sorted(m for m in sys.argv[2].split(",") if m in sys.modules), f)
"""


def cli_imports(tmp_path: Path, *args: str) -> tuple[list[str], str]:
    """Run the CLI in a fresh interpreter with ``args``; return the HEAVY modules it left in
    ``sys.modules`` and what it printed."""
    found = tmp_path / "found.json"
    proc = subprocess.run(
        [sys.executable, "-c", IN_PROCESS, str(found), ",".join(HEAVY), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(found.read_text()), proc.stdout


def test_plugins_json_imports_no_heavy_library(tmp_path: Path) -> None:
    heavy, out = cli_imports(tmp_path, "plugins", "--json")
    listed = {row["name"]: row for row in json.loads(out)}
    for name in (
        "openai",
        "judge",
        "export",
        "reinforce",
        "grpo",
        "podman",
    ):  # the plugins that use those libraries
        assert name in listed and not listed[name].get("error"), listed.get(name)
    assert heavy == []


def test_help_imports_no_heavy_library(tmp_path: Path) -> None:
    heavy, out = cli_imports(tmp_path, "--help")
    assert (
        "sandbox" in out and "install" in out
    )  # plugin commands were listed (podman's), and the built-ins
    assert heavy == []


LISTING = """
import json, sys
from envkernel.cli import cli
try:
    cli(sys.argv[2:], prog_name="envkernel", standalone_mode=False)
except SystemExit:
    pass
with open(sys.argv[1], "w") as f:
    # the runtime's error classes (standard library only) are the kernel's errors: not a plugin
    light = {"envkernel_runtime", "envkernel_runtime.errors"}
    json.dump(sorted(m for m in sys.modules
                     if (m.startswith("envkernel_") and m not in light) or m == "structlog"), f)
"""


@pytest.mark.parametrize("args", [["--help"], ["plugins"]])
def test_help_and_plugins_import_no_plugin(tmp_path: Path, args: list[str]) -> None:
    """Names, versions and summaries come from the entry points' metadata: no plugin, nor the bus
    or structlog, is imported."""
    found = tmp_path / "found.json"
    proc = subprocess.run(
        [sys.executable, "-c", LISTING, str(found), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(found.read_text()) == []
    assert "serve" in proc.stdout and "workspace" in proc.stdout


@pytest.mark.parametrize("n", [0, 3])
def test_rl_parquet_is_written_without_pandas(tmp_path: Path, n: int) -> None:
    """The table is built without pandas (pyarrow's Python conversions import it when it is
    installed)."""
    code = f"""
import json, sys
from envkernel_export.rows import RL_SCHEMA, rl_table
import pyarrow.parquet as pq
rows = [{{"data_source": "envkernel/shop-v1", "prompt": [{{"role": "user", "content": "hi"}}], \
"agent_name": "tool_agent",
         "ability": "tool-use", "reward_model": {{"style": "rule", "ground_truth": {{"calls": \
[{{"name": "f", "arguments": "{{}}"}}],
         "mutates": True, "answer_facts": ["x"], "answer_rows": "[]", "answer_absent": [], \
"answer_ordered": False,
         "masked_arguments": [], "expects": ""}}}},
         "extra_info": {{"task_id": f"t{{i}}", "env_id": "shop-v1", "split": "train", \
"difficulty": 1, "signature": "f",
                        "initial_state": "{{}}", "expected_state": "{{}}", "planted": "[]", \
"tools": "[]"}}, "not_in_schema": 1}} for i in range({n})]
pq.write_table(rl_table(rows), {str(tmp_path / "rl.parquet")!r})
assert "pandas" not in sys.modules, "pandas was imported"
back = pq.read_table({str(tmp_path / "rl.parquet")!r})
assert back.schema.equals(RL_SCHEMA)
got = back.to_pylist()
for r in rows:
    del r["not_in_schema"]
    r["extra_info"]["difficulty"] = 1.0
    r["extra_info"].update(unchanged=None, generated=None, outputs=None)  # optional columns
assert got == rows, (got, rows)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
