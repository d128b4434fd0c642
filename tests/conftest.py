"""Shared fixtures: a real nats-server with JetStream on a free loopback port, per test; the real
``envkernel`` command as a subprocess; third-party plugin distributions built for real."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from envkernel_bus import Bus


@pytest.fixture
def nats_server(envkernel_nats: str) -> str:
    """URL of a fresh nats-server (JetStream on, store in tmp_path / "nats"): the kit's fixture."""
    return envkernel_nats


def _wait_for_log(path: Path, text: str, proc: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in (path.read_text() if path.exists() else ""):
        assert proc.poll() is None, f"exited early:\n{path.read_text()[-3000:]}"
        assert time.monotonic() < deadline, f"{text!r} not logged in {timeout} s"
        time.sleep(0.05)


@pytest.fixture
def wait_for_log() -> Any:
    """``wait_for_log(path, text, proc, timeout=60)``: wait until a process's log file contains
    ``text``."""
    return _wait_for_log


def _processes_mentioning(text: str, wait: float = 0.0) -> list[int]:
    deadline = time.monotonic() + wait
    while True:
        found = []
        for d in Path("/proc").iterdir():
            if not d.name.isdigit():
                continue
            try:
                cmd = (d / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                state = (d / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if text in cmd and state != "Z":
                found.append(int(d.name))
        if not found or time.monotonic() >= deadline:
            return found
        time.sleep(0.05)


@pytest.fixture
def processes_mentioning() -> Any:
    """``processes_mentioning(text, wait=0.0)``: pids of live (non-zombie) processes whose command
    line contains ``text``; with ``wait``, polls up to that many seconds for them to be gone
    first."""
    return _processes_mentioning


@pytest.fixture
def worker_process(envk: Any, nats_server: str, tmp_path: Path) -> Any:
    """``with worker_process("plugins") as log:`` — a real ``envkernel worker --plugins ...`` on the
    test's NATS server, serving once the block starts, and stopped cleanly (SIGTERM, exit 0) when it
    ends. ``log`` is its JSON log file."""

    @contextlib.contextmanager
    def serve(plugins: str) -> Iterator[Path]:
        log = tmp_path / "worker.log"
        with log.open("w") as logf:
            worker = envk.popen(
                "--log-level",
                "debug",
                "--json-logs",
                "worker",
                "--plugins",
                plugins,
                "--nats-url",
                nats_server,
                stdout=logf,
                stderr=logf,
            )
        try:
            _wait_for_log(log, "worker serving", worker)
            yield log
            assert worker.poll() is None, "the worker died during the block"
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()

    return serve


@pytest.fixture
def served_pool(envkernel_nats: str) -> Any:
    """``async with served_pool(per_env=N) as pool``: the kernel's sandbox service over the
    ``process`` runner on the test's nats-server, and a worker's
    :class:`~envkernel.sandbox.SandboxPool` on it (all closed at the end)."""
    from envkernel.sandbox import SandboxPool, SandboxService
    from envkernel_kit.checks import process_runner

    @contextlib.asynccontextmanager
    async def serve(per_env: int) -> AsyncIterator[SandboxPool]:
        service_bus, client = await Bus.connect(envkernel_nats), await Bus.connect(envkernel_nats)
        runner = process_runner()
        service = SandboxService(service_bus, "process", runner)
        await service.start()
        pool = SandboxPool(client, per_env=per_env)
        try:
            yield pool
        finally:
            await pool.close()
            await service.stop()
            await runner.aclose()
            await client.close()
            await service_bus.close()

    return serve


@pytest.fixture
async def bus(nats_server: str) -> AsyncIterator[Bus]:
    """A connected Bus with the envkernel stream, bucket and object store."""
    b = await Bus.connect(nats_server)
    try:
        yield b
    finally:
        await b.close()


# --- The `envkernel` command as a subprocess, and third-party plugin distributions
# -----------------
# (used by the end-to-end suites: test_run_e2e, test_plugins_cli, test_config,
# test_third_party_plugin,
# test_failures, test_tap, test_worker)

ENVKERNEL_SCRIPT = Path(sys.executable).with_name("envkernel")
"""The ``envkernel`` console script of this venv."""
THIRDPARTY_SOURCES = Path(__file__).parent / "thirdparty"
"""Source trees of the throwaway third-party plugin distributions."""


@dataclass
class RunFolder:
    """What one ``envkernel run`` left behind."""

    proc: subprocess.CompletedProcess[str]
    dir: Path

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.dir / "summary.json").read_text())

    @property
    def config(self) -> dict[str, Any]:
        return json.loads((self.dir / "config.json").read_text())

    def jsonl(self, name: str) -> list[dict[str, Any]]:
        """Parsed lines of a JSON-lines file of the run folder ([] when it does not exist)."""
        path = self.dir / name
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class EnvkernelCli:
    """Runs the real ``envkernel`` script in a scratch folder, with a clean environment.

    ``ENVKERNEL_*`` and ``OPENAI_*`` variables of the outer shell are dropped, and
    ``XDG_RUNTIME_DIR`` is private, so runs of other sessions are not discovered by ``tap``.
    """

    def __init__(self, root: Path) -> None:
        self.cwd = root / "cwd"
        self.cwd.mkdir(parents=True, exist_ok=True)
        xdg = root / "xdg"
        xdg.mkdir(exist_ok=True)
        self.env = {
            k: v for k, v in os.environ.items() if not k.startswith(("ENVKERNEL_", "OPENAI_"))
        }
        self.env["XDG_RUNTIME_DIR"] = str(xdg)
        self.env.pop("PYTHONPATH", None)

    def _env(self, extra: dict[str, str] | None) -> dict[str, str]:
        return {**self.env, **(extra or {})}

    def __call__(
        self, *args: str, env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[str]:
        """Run ``envkernel ARGS`` to completion; stdout and stderr are captured as text."""
        return subprocess.run(
            [str(ENVKERNEL_SCRIPT), *args],
            cwd=self.cwd,
            env=self._env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def popen(
        self, *args: str, env: dict[str, str] | None = None, **kw: Any
    ) -> subprocess.Popen[str]:
        """Start ``envkernel ARGS`` in the background (stdout and stderr piped unless given)."""
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        return subprocess.Popen(
            [str(ENVKERNEL_SCRIPT), *args], cwd=self.cwd, env=self._env(env), text=True, **kw
        )

    def run(
        self,
        *args: str,
        run_id: str,
        out: str = "out",
        source: str | None = "sample",
        env: dict[str, str] | None = None,
        timeout: float = 150,
    ) -> RunFolder:
        """``envkernel run --out OUT --run-id RUN_ID --no-progress [--source SOURCE] ARGS``.

        ``source`` defaults to ``sample`` (the one hand-written ``shop-v1`` environment: a quick
        run); None leaves the run's own default sources.
        """
        if source:
            args = ("--source", source, *args)
        try:
            proc = self(
                "run",
                "--out",
                out,
                "--run-id",
                run_id,
                "--no-progress",
                *args,
                env=env,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired as exc:
            err = (
                exc.stderr.decode(errors="replace")
                if isinstance(exc.stderr, bytes)
                else (exc.stderr or "")
            )
            (self.cwd / f"{run_id}.stderr").write_text(err)
            pytest.fail(
                f"envkernel run {' '.join(args)} did not finish in {timeout} s; its stderr "
                f"ends with:\n{err[-4000:]}"
            )
        (self.cwd / f"{run_id}.stderr").write_text(proc.stderr)
        return RunFolder(proc, self.cwd / out / run_id)


@pytest.fixture
def envk(tmp_path: Path) -> EnvkernelCli:
    """The real ``envkernel`` CLI, run as a subprocess in a scratch folder."""
    return EnvkernelCli(tmp_path)


@pytest.fixture(scope="session")
def envk_factory(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Make an :class:`EnvkernelCli` in a fresh folder (for module-scoped runs shared by several
    tests)."""
    return lambda name="envk": EnvkernelCli(tmp_path_factory.mktemp(name))


@pytest.fixture(scope="session")
def thirdparty_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder (for ``PYTHONPATH``) where the throwaway plugin distributions of tests/thirdparty
    are installed for real (built by hatchling through ``uv pip install --target``; nothing is
    installed into the venv).
    """
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: cannot build the third-party plugin distributions")
    root = tmp_path_factory.mktemp("thirdparty")
    srcs = []
    for src in sorted(THIRDPARTY_SOURCES.iterdir()):
        if (src / "pyproject.toml").exists():
            dst = root / "src" / src.name
            shutil.copytree(src, dst)
            srcs.append(str(dst))
    site = root / "site"
    base = [
        uv,
        "pip",
        "install",
        "--python",
        sys.executable,
        "--target",
        str(site),
        "--no-deps",
        *srcs,
    ]
    proc = subprocess.run([*base, "--offline"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:  # hatchling not in uv's cache yet: let uv fetch it
        proc = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (
        f"building the third-party plugins failed:\n{proc.stdout}\n{proc.stderr}"
    )
    return site


def install_plugin_dist(
    root: Path, dist: str, module: str, source: str, entry_points: dict[str, str]
) -> Path:
    """Write a one-module plugin distribution ``dist`` (module ``module``, ``envkernel`` entry
    points ``name -> module[:attr]``) under ``root``, build and install it for real (hatchling,
    through ``uv pip install --target``) into ``root/site``, outside the repo, and return that
    folder (for
    ``PYTHONPATH``)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not on PATH: cannot build a plugin distribution")
    src = root / dist
    (src / module).mkdir(parents=True)
    (src / module / "__init__.py").write_text(source)
    eps = "\n".join(f'{name} = "{target}"' for name, target in entry_points.items())
    (src / "pyproject.toml").write_text(
        f'[project]\nname = "{dist}"\nversion = "0.0.1"\nrequires-python = '
        f'">=3.11"\n\n[project.entry-points.envkernel]\n{eps}\n\n[build-system]\nrequires = '
        '["hatchling"]\nbuild-backend = '
        f'"hatchling.build"\n\n[tool.hatch.build.targets.wheel]\npackages = ["{module}"]\n'
    )
    site = root / "site"
    base = [
        uv,
        "pip",
        "install",
        "--python",
        sys.executable,
        "--target",
        str(site),
        "--no-deps",
        str(src),
    ]
    proc = subprocess.run([*base, "--offline"], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:  # hatchling not in uv's cache yet: let uv fetch it
        proc = subprocess.run(base, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"building {dist} failed:\n{proc.stdout}\n{proc.stderr}"
    return site


@pytest.fixture(scope="session")
def plugin_dist() -> Any:
    """:func:`install_plugin_dist`, for tests that write a plugin distribution of their own."""
    return install_plugin_dist


@pytest.fixture
def probe_verify() -> Any:
    """``probe_verify(env)``: the ``probe`` verifier's report on ``env``, run in a fresh ``process``
    sandbox."""
    import asyncio

    from envkernel_kit.testing import RunnerContext
    from envkernel_probe import Probe

    process = pytest.importorskip("envkernel_process")

    def run(env: Any) -> Any:
        async def go() -> Any:
            runner = process.ProcessRunner()
            try:
                return await Probe().verify(env, RunnerContext(runner, component="probe"))
            finally:
                await runner.aclose()

        return asyncio.run(go())

    return run


# --- The real-spec corpus (plugins/openapi/corpus-real), verified in two halves -----------------
# tests/test_openapi_realspecs.py and tests/test_openapi_realspecs_2.py each verify half of it, so
# that `--dist loadfile` runs the two halves on the two workers instead of one file for minutes.

REAL_CORPUS = Path(__file__).resolve().parents[1] / "plugins" / "openapi" / "corpus-real"
"""The real-spec corpus: 36 public specs, their sources in ``sources.json``."""
REAL_HALVES: tuple[list[str], list[str]] = (
    [
        "adyen-transfers-v4.json",
        "amadeus-hotel-list.yaml",
        "dropbox-sign-api/openapi.yaml",
        "intercom-api-2.14.yaml",
        "klaviyo-lists.json",
        "netlify-api.yaml",
        "nhs-personal-demographics/personal-demographics.yaml",
        "ory-kratos.json",
        "outline-api.yaml",
        "pagerduty-scim.json",
        "sendgrid-v3/oas_v3.json",
        "slack-web-api.json",
        "spotify-web-api.yaml",
        "stripe-api-2020-10.yaml",
        "twilio-api-v2010.json",
        "twilio-messaging-v1.json",
        "workos-api.yaml",
        "xero-accounting.yaml",
        "xero-files.yaml",
        "xero-projects.yaml",
    ],
    [
        "adyen-balance-platform-v2.json",
        "adyen-checkout-v71.json",
        "asana-api.yaml",
        "bigcommerce-channels-v3.yaml",
        "bigcommerce-customers-v3/customers.v3.yml",
        "bluesky-atproto-xrpc.json",
        "box-platform.json",
        "calendly-api.yaml",
        "discord-api.json",
        "google-maps-platform/index.yml",
        "klaviyo-catalogs.json",
        "nhs-booking-and-referral/booking-and-referral.yaml",
        "pagerduty-slack-integration.json",
        "plaid-api.yaml",
        "resend-api.yaml",
        "xero-assets.yaml",
    ],
)
"""The corpus's spec files in two halves of about the same size in bytes (a test module names its
half in ``REAL_HALF``). The first holds the specs whose shapes ``test_real_shapes_are_kept``
checks."""


async def _verify_real(envs: list[Any]) -> dict[str, Any]:
    from envkernel_kit.testing import RunnerContext
    from envkernel_probe import Probe

    process = pytest.importorskip("envkernel_process")
    runner = process.ProcessRunner()
    out: dict[str, Any] = {}
    try:
        for env in envs:
            for attempt in range(3):
                try:
                    out[env.id] = await Probe().verify(
                        env, RunnerContext(runner, component="probe")
                    )
                    break
                except process.SandboxError as exc:
                    if attempt == 2:
                        out[env.id] = exc
    finally:
        await runner.aclose()
    return out


@pytest.fixture(scope="module")
def real_corpus(
    request: pytest.FixtureRequest,
) -> tuple[dict[str, Any], dict[str, str], dict[str, Any]]:
    """The half of the real corpus the test module names in ``REAL_HALF`` synthesized and verified
    once (the ``probe`` in ``process`` sandboxes): (envs by id, refusals by file, reports by env
    id)."""
    import asyncio

    from envkernel_openapi import OpenAPISettings, SpecError, synthesize_file

    envs, refused = {}, {}
    for file in REAL_HALVES[request.module.REAL_HALF]:
        try:
            env, _warnings = synthesize_file(
                REAL_CORPUS / file, settings=OpenAPISettings(validate=False)
            )
        except SpecError as exc:  # a refusal is an answer; any other exception fails the test
            refused[file] = str(exc)
            continue
        envs[env.id] = env
    return envs, refused, asyncio.run(_verify_real(list(envs.values())))


def _check_real_corpus(
    corpus: tuple[dict[str, Any], dict[str, str], dict[str, Any]],
    kept_floor: int,
    refused_at_most: int,
) -> None:
    from envkernel_openapi import OpenAPISettings

    sources = json.loads((REAL_CORPUS / "sources.json").read_text())
    assert sorted(REAL_HALVES[0] + REAL_HALVES[1]) == sorted(s["file"] for s in sources), (
        "REAL_HALVES must split sources.json exactly"
    )
    envs, refused, reports = corpus
    for env in envs.values():
        assert env.tools and len(env.tools) <= OpenAPISettings().max_tools, env.id
    # a refusal says why the spec gives no useful environment: no list operation to discover ids
    # with
    assert all("no list operation" in why for why in refused.values()), refused
    assert len(refused) <= refused_at_most, refused
    unloadable = {k: str(v) for k, v in reports.items() if isinstance(v, Exception)}
    assert not unloadable, unloadable
    kept = sorted(k for k, r in reports.items() if r.kept)
    print(
        f"kept {len(kept)} of {len(reports)}:", kept, "not kept:", sorted(set(reports) - set(kept))
    )
    assert len(kept) >= kept_floor, (
        kept,
        {k: r.tools_dropped for k, r in reports.items() if not r.kept},
    )


@pytest.fixture
def check_real_corpus() -> Any:
    """``check_real_corpus(real_corpus, kept_floor, refused_at_most)``: no traceback on any spec,
    each environment within ``max_tools``, refusals only for specs with no list operation (at most
    ``refused_at_most``), every environment loads, and at least ``kept_floor`` are kept."""
    return _check_real_corpus
