"""Every Python block of README.md and docs/ either runs in the test command or says it does not
(issue 32 item 2).

A block that is not meant to run has ``<!-- not run: WHY -->`` on the line before its fence (a
protocol's signature, a sketch with elided parts, a fragment of a stage's code). Every other block
is listed in ``RUN`` with the test that executes it as written (pytest-examples finds the blocks),
or in ``NOT_YET`` with the reason it is not run yet; a new block that is in none of them fails
here. The blocks that need nothing but the workspace run in this file.
"""

from __future__ import annotations

import ast
import re
import sys
import types
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner
from pytest_examples import CodeExample, find_examples

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
NOT_RUN = re.compile(r"<!-- not run: [^>]+-->\s*$")

RUN: dict[tuple[str, str], str] = {
    ("docs/chat.md", "from typing import ClassVar"): "tests/test_docs_blocks.py::test_chat_md",
    ("docs/hooks.md", "import click"): "tests/test_docs_blocks.py::test_hooks_md_commands",
    ("docs/hooks.md", "from envkernel.hookspecs import hookimpl"): (
        "tests/test_docs_serve_examples.py::test_the_hooks_users_block"
    ),
    (
        "docs/events.md",
        "import asyncio",
    ): "tests/test_docs_serve_examples.py::test_the_events_blocks",
    (
        "docs/events.md",
        "import msgspec",
    ): "tests/test_docs_serve_examples.py::test_the_events_blocks",
    ("docs/events.md", "from envkernel_schemas import TaskGated, decode, encode, event_id"): (
        "tests/test_docs_serve_examples.py::test_the_events_blocks"
    ),
    ("docs/serve.md", "import httpx"): "tests/test_docs_serve_examples.py::test_the_http_block",
    ("docs/serve.md", "import envkernel"): (
        "tests/test_docs_serve_examples.py::test_the_gymnasium_make_block"
    ),
    ("docs/serve.md", "import gymnasium as gym"): (
        "tests/test_docs_serve_examples.py::test_the_gymnasium_registry_block"
    ),
    ("docs/serve.md", "import pandas as pd, yaml"): (
        "tests/test_docs_serve_examples.py::test_the_verl_block_writes_a_tool_config_and_rows"
    ),
    ("docs/serve.md", "from openenv.core.generic_client import GenericEnvClient"): (
        "tests/test_docs_serve_examples.py::test_the_openenv_block"
    ),
    ("docs/serve.md", "from mcp.client.session import ClientSession"): (
        "tests/test_docs_serve_examples.py::test_the_mcp_blocks"
    ),
    ("docs/serve.md", "async with ("): "tests/test_docs_serve_examples.py::test_the_mcp_blocks",
    ("docs/serve.md", "from datasets import Dataset"): (
        "tests/test_docs_serve_examples.py::test_the_trl_block_trains_one_grpo_step"
    ),
    ("docs/writing-a-plugin.md", '"""envkernel-exact: the ``exact`` reward model.'): (
        "tests/test_docs_examples.py::test_the_exact_plugin_of_the_page_builds_and_its_tests_pass"
    ),
    (
        "docs/training.md",
        '"""Score a model\'s reply with envkernel\'s trace + outcome reward, outside envkernel.',
    ): "tests/test_docs_training_examples.py::test_the_reward_block_scores_as_traceoutcome",
    ("docs/training.md", "import pandas as pd"): (
        "tests/test_docs_training_examples.py::test_the_pandas_block_splits_rl_parquet"
    ),
    ("docs/training.md", '"""envkernel-mytrainer: the ``mytrainer`` trainer.'): (
        "tests/test_docs_training_examples.py::"
        "test_the_mytrainer_block_registers_and_keeps_groups_with_signal"
    ),
    ("docs/training.md", "from trl import DPOConfig, DPOTrainer"): (
        "tests/test_docs_training_examples.py::test_the_sft_and_dpo_blocks_train_one_step_each"
    ),
    ("docs/writing-a-plugin.md", "import json"): (
        "tests/test_docs_examples.py::test_the_exact_plugin_of_the_page_builds_and_its_tests_pass"
    ),
}
"""(page, the block's first line) -> the test that runs it."""

NOT_YET: dict[tuple[str, str], str] = {
    ("docs/training.md", "import json"): (
        "two blocks start so: the SFT one runs in tests/test_docs_training_examples.py::"
        "test_the_sft_and_dpo_blocks_train_one_step_each; the GRPO one does not yet (it imports "
        "the reward block, whose envkernel packages the trainers venv does not have)"
    ),
}
"""Blocks meant to run that the test command does not run yet, and why."""


def python_blocks() -> list[tuple[str, str, CodeExample]]:
    """(page, first line, example) of every Python block, with the line before its fence."""
    out = []
    for page in PAGES:
        lines = page.read_text().splitlines()
        for ex in find_examples(page):
            if ex.prefix != "py" and ex.prefix != "python":
                continue
            fence = ex.start_line - 2  # 0-based index of the line before the fence
            before = lines[fence] if fence >= 0 else ""
            if NOT_RUN.search(before):
                continue
            first = ex.source.strip().splitlines()[0]
            out.append((str(page.relative_to(ROOT)), first, ex))
    return out


def test_every_python_block_runs_or_says_it_does_not() -> None:
    found = {(page, first) for page, first, _ex in python_blocks()}
    unlisted = found - set(RUN) - set(NOT_YET)
    assert not unlisted, (
        f"blocks neither run by a test nor marked `<!-- not run: WHY -->`: {sorted(unlisted)}"
    )
    stale = (set(RUN) | set(NOT_YET)) - found
    assert not stale, f"listed blocks no page has (or that are marked not run): {sorted(stale)}"


@pytest.mark.parametrize("test", sorted(set(RUN.values())))
def test_the_test_that_runs_a_block_exists(test: str) -> None:
    path, _, name = test.partition("::")
    tree = ast.parse((ROOT / path).read_text())
    names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
    assert name in names, f"{path} has no {name}"


def block(page: str, first_line: str) -> str:
    """The page's Python block that starts with ``first_line``."""
    for p, first, ex in python_blocks():
        if p == page and first == first_line:
            return ex.source
    raise AssertionError(f"{page} has no Python block starting {first_line!r}")


def module_scope(names: dict[str, Any]) -> dict[str, Any]:
    """The globals of a new module (in ``sys.modules``: msgspec resolves a Struct's annotations
    through it), holding ``names``."""
    module = types.ModuleType(f"docs_block_{len(sys.modules)}")
    sys.modules[module.__name__] = module
    module.__dict__.update(names)
    return module.__dict__


def test_chat_md() -> None:
    """The critic of docs/chat.md: its settings are a ChatSettings struct (a shared setting's
    default changed), and the critic is a UsesChat with one client made on first use."""
    from envkernel_kit.chat import ChatSettings, UsesChat

    scope = module_scope({})
    exec(compile(block("docs/chat.md", "from typing import ClassVar"), "chat.md", "exec"), scope)
    settings = scope["CriticSettings"]()
    assert isinstance(settings, ChatSettings) and settings.concurrency == 8
    assert settings.temperature == 0.0 and scope["CriticSettings"].section == "critic"
    critic = scope["Critic"]()
    assert isinstance(critic, UsesChat) and critic.settings == settings


def test_hooks_md_commands() -> None:
    """docs/hooks.md's ``register_commands``: the block's hook adds ``lint`` to a click group."""
    from envkernel.hookspecs import hookimpl

    scope = module_scope({"hookimpl": hookimpl})  # imported by the page's block before it
    exec(compile(block("docs/hooks.md", "import click"), "hooks.md", "exec"), scope)
    group = click.Group("envkernel")
    scope["register_commands"](group)
    out = CliRunner().invoke(group, ["lint", "--help"])
    assert out.exit_code == 0 and "Check an environment folder." in out.output
    assert CliRunner().invoke(group, ["lint", "some/env"]).exit_code == 0
