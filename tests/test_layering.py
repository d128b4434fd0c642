"""What may import what: read from the sources (ast), so a layering mistake fails here, not at a
user's.

- a plugin imports only the kernel (``envkernel``), ``envkernel_schemas``, ``envkernel_bus``,
  ``envkernel_runtime``, ``envkernel_kit`` and itself: no plugin imports another plugin;
- the kernel imports no plugin and not the kit;
- the runtime imports neither the kernel, the kit nor a plugin, and its executor and engine import
  only the standard library (they run inside sandboxes that hold just those two files);
- the kit imports no plugin;
- each plugin's ``pyproject.toml`` declares every ``envkernel*`` distribution its sources import.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = {"envkernel", "envkernel_schemas", "envkernel_bus", "envkernel_runtime", "envkernel_kit"}
"""What every plugin may import."""


def _packages(src: Path) -> set[str]:
    return {p.name for p in src.iterdir() if p.is_dir() and (p / "__init__.py").exists()}


PLUGINS = {
    d.name: d for d in sorted((ROOT / "plugins").iterdir()) if (d / "pyproject.toml").exists()
}
PLUGIN_PACKAGES = {pkg: name for name, d in PLUGINS.items() for pkg in _packages(d / "src")}


def imports(folder: Path) -> dict[str, set[str]]:
    """Top-level module -> the files under ``folder`` that import it (every import statement,
    including those inside functions; relative imports are the package's own)."""
    out: dict[str, set[str]] = {}
    for f in sorted(folder.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(), str(f))):
            if isinstance(node, ast.Import):
                mods = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                mods = [node.module]
            else:
                continue
            for m in mods:
                out.setdefault(m.split(".")[0], set()).add(str(f.relative_to(ROOT)))
    return out


def _envkernel(found: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: fs for m, fs in found.items() if m.startswith("envkernel")}


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_plugin_imports_no_other_plugin(plugin: str) -> None:
    own = _packages(PLUGINS[plugin] / "src")
    found = _envkernel(imports(PLUGINS[plugin] / "src"))
    wrong = {m: sorted(fs) for m, fs in found.items() if m not in SHARED | own}
    assert not wrong, (
        f"plugin {plugin!r} imports other plugins (move what it needs to envkernel_kit): {wrong}"
    )


def test_the_kernel_imports_no_plugin_and_not_the_kit() -> None:
    found = _envkernel(imports(ROOT / "kernel" / "src"))
    wrong = {
        m: sorted(fs) for m, fs in found.items() if m in PLUGIN_PACKAGES or m == "envkernel_kit"
    }
    assert not wrong, f"the kernel imports {wrong}"


def test_the_runtime_imports_no_kernel_kit_or_plugin() -> None:
    found = _envkernel(imports(ROOT / "runtime" / "src"))
    wrong = {
        m: sorted(fs)
        for m, fs in found.items()
        if m not in ("envkernel_runtime", "envkernel_schemas")
    }
    assert not wrong, f"the runtime imports {wrong}"


SANDBOX_FILES = sorted(
    p.name
    for p in (ROOT / "runtime" / "src" / "envkernel_runtime").glob("*.py")
    if p.name in ("engine.py", "workspace.py") or p.name.startswith("executor")
)
"""The files a sandbox runs (the executor, its parts, the engines it loads from beside it)."""


def test_the_sandbox_files_are_the_ones_runners_ship() -> None:
    from envkernel_runtime import executor_files

    assert sorted(Path(p).name for p in executor_files()) == SANDBOX_FILES


@pytest.mark.parametrize("name", SANDBOX_FILES)
def test_the_sandbox_programs_import_only_the_standard_library(name: str) -> None:
    """Only the standard library and each other (``envkernel_runtime.executor_*``, found beside
    the executor whether it runs as a lone file or as a module)."""
    path = ROOT / "runtime" / "src" / "envkernel_runtime" / name
    siblings = {f"envkernel_runtime.{n.removesuffix('.py')}" for n in SANDBOX_FILES}
    found = {}
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update({a.name: node.lineno for a in node.names})
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, (
                f"{name}:{node.lineno} has a relative import (it runs as a lone file)"
            )
            module = node.module or ""
            if module == "envkernel_runtime":
                found.update({f"{module}.{a.name}": node.lineno for a in node.names})
            else:
                found[module] = node.lineno
    wrong = {
        m: ln
        for m, ln in found.items()
        if m.split(".")[0] not in sys.stdlib_module_names
        and m != "__future__"
        and m not in siblings
    }
    assert not wrong, f"{name} imports modules outside the standard library: {wrong}"


def test_the_kit_imports_no_plugin() -> None:
    found = _envkernel(imports(ROOT / "kit" / "src"))
    wrong = {m: sorted(fs) for m, fs in found.items() if m in PLUGIN_PACKAGES}
    assert not wrong, f"the kit imports plugins {wrong}"


def _dist(module: str) -> str:
    return module.replace("_", "-")


@pytest.mark.parametrize("plugin", sorted(PLUGINS))
def test_a_plugin_declares_what_it_imports(plugin: str) -> None:
    project = tomllib.loads((PLUGINS[plugin] / "pyproject.toml").read_text())["project"]
    declared = {re.split(r"[\[<>=!~; ]", d, maxsplit=1)[0] for d in project.get("dependencies", [])}
    own = _packages(PLUGINS[plugin] / "src")
    used = {_dist(m) for m in _envkernel(imports(PLUGINS[plugin] / "src")) if m not in own}
    missing = sorted(used - declared)
    assert not missing, (
        f"plugin {plugin!r} imports {missing} but its pyproject.toml does not declare them"
    )


def test_the_layering_test_sees_the_tree() -> None:
    assert {"chains", "probe", "openapi", "export"} <= set(PLUGINS)
    assert PLUGIN_PACKAGES["envkernel_chains"] == "chains"
    assert "envkernel_kit" in imports(PLUGINS["chains"] / "src")
