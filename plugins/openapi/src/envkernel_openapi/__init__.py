"""envkernel-openapi: the synthesizer ``openapi`` — executable environments from OpenAPI documents.

``envkernel run --source openapi:PATH`` (a spec file, or a folder of them: one environment per
file) reads OpenAPI 3.0, 3.1 and 3.2 documents in JSON or YAML. ``--source openapi`` with no path
means the corpus shipped in this package (7 domains: :func:`corpus_files`).

Each environment's behaviour is **data**: a resource model (``ModelBehaviour``) run by the fixed
engine that ships with the sandbox executor (``envkernel_runtime/engine.py``), over SQLite. Spec
strings never become Python code or SQL text. See :mod:`envkernel_openapi.infer` for how resources,
tools and semantics are inferred, and :mod:`envkernel_openapi.seeddata` for the seed rows.

Problems are reported, never raised as tracebacks: an operation that cannot be supported is
skipped with a warning naming it (logged, and kept in ``model.json`` under ``warnings``); a
malformed document is refused with a :class:`SpecError` naming the file and the JSON path, which
the kernel records as ``plugin.failed`` while the run goes on.
"""

from __future__ import annotations

import re
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import msgspec

from envkernel.hookspecs import hookimpl
from envkernel_kit.policy import domain_policy
from envkernel_schemas import EnvRequested, EnvSpec, ModelBehaviour, Provenance, ToolSpec

from .infer import Builder
from .spec import SpecError, load, parse_any, spec_files

__all__ = [
    "OpenAPISettings",
    "OpenAPISynthesizer",
    "Settings",
    "SpecError",
    "check_source",
    "check_spec_file",
    "corpus_dir",
    "corpus_files",
    "synthesize_file",
    "register_commands",
    "register_synthesizers",
]


class OpenAPISettings(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Settings of the ``openapi`` synthesizer."""

    seed_rows: int = 8
    """Seed rows per top-level resource (resources that refer to others get half again as many)."""
    max_tools: int = 64
    """Keep at most this many tools per document: whole resources, those that can be listed
    first."""
    validate: bool = True
    """Check each document with openapi-spec-validator (its findings become warnings)."""


Settings = OpenAPISettings
"""Alias: the settings of this plugin's component(s)."""


def corpus_dir() -> Path:
    """The folder of the shipped corpus."""
    return Path(str(resources.files(__package__).joinpath("corpus")))


def corpus_files() -> list[Path]:
    """The shipped corpus's spec files, sorted."""
    return spec_files(corpus_dir())


def _version() -> str:
    try:
        return metadata.version("envkernel-openapi")
    except metadata.PackageNotFoundError:
        return "0"


def _slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    return s[:48] or "api"


def synthesize_file(
    path: str | Path,
    *,
    seed: int = 0,
    source: str = "",
    display: str | None = None,
    settings: OpenAPISettings | None = None,
    env_id: str | None = None,
) -> tuple[EnvSpec, list[str]]:
    """One environment from one document: (EnvSpec, warnings). Raises :class:`SpecError`."""
    s = settings or OpenAPISettings()
    p = Path(path)
    name = display or p.name
    doc, warnings = load(p, name, validate=s.validate)
    builder = Builder(doc, name, seed=seed, seed_rows=s.seed_rows, max_tools=s.max_tools)
    built = builder.build()
    model, tools = built["model"], built["tools"]
    warnings = warnings + builder.warnings
    model.warnings = warnings
    info = doc.get("info") if isinstance(doc.get("info"), dict) else {}
    title = str(info.get("title") or p.stem)
    domain = str(info.get("x-domain") or "")
    eid = env_id or _slug(p.stem)
    return (
        EnvSpec(
            id=eid,
            name=title,
            domain=domain,
            description=str(info.get("description") or title).strip(),
            tools=[ToolSpec(**t) for t in tools],
            behaviour=ModelBehaviour(model=model.to_json()),
            seed_sql="",
            operations=builder.operations,
            skipped=dict(builder.skipped.most_common()),
            generated=builder.generated(model),
            policy=domain_policy(info.get("x-policy")),
            provenance=Provenance(
                source_kind="openapi",
                source=source or str(p),
                plugin="openapi",
                plugin_version=_version(),
                seed=seed,
            ),
        ),
        warnings,
    )


_METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")


def _line_of(text: str, key: str) -> int:
    """The 1-based line where a top-level ``key`` is (YAML ``key:`` or JSON ``"key":``), else 1."""
    m = re.search(rf'^\s*"?{re.escape(key)}"?\s*:', text, re.M)
    return text.count("\n", 0, m.start()) + 1 if m else 1


def check_spec_file(path: str | Path) -> str | None:
    """What makes the spec file at ``path`` unusable before anything runs, or None: it cannot be
    read, it is not JSON or YAML (the message names the line), it is empty, or it has no operation.
    A cheap check (no ``$ref`` resolution, no conversion): a spec it passes may still be refused
    by the synthesizer, with the reason in the run's failures."""
    p = Path(path).expanduser()
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return f"{p}: cannot read it: {exc}"
    try:
        doc = parse_any(text, str(p))
    except SpecError as exc:
        return str(exc)
    if not isinstance(doc, dict):
        return f"{p}:1: an OpenAPI document must be an object, got {type(doc).__name__}"
    paths = doc.get("paths")
    line = _line_of(text, "paths")
    if not isinstance(paths, dict) or not paths:
        where = f"{p}:{line}" if "paths" in doc else f"{p}"
        return f"{where}: the document has no operations (its 'paths' is empty or missing)"
    for item in paths.values():
        if isinstance(item, dict) and ("$ref" in item or any(m in item for m in _METHODS)):
            return None
    return (
        f"{p}:{line}: the document has no operations (no path has a get, post, put, patch or "
        "delete)"
    )


def check_source(value: str) -> str | None:
    """The up-front check of ``--source openapi:PATH`` (the kernel calls it before a run starts):
    a file must pass :func:`check_spec_file`; a folder must hold a spec file, and at least one
    that passes (the others are refused during the run, as they are today). None when fine."""
    target = Path(value).expanduser()
    if not target.exists():
        return None  # the kernel says "no such file or folder"
    if not target.is_dir():
        return check_spec_file(target)
    files = spec_files(target)
    if not files:
        return f"{value}: the folder holds no .json, .yaml or .yml file"
    problems = [check_spec_file(f) for f in files]
    if all(problems):
        return "no spec file of the folder can be used: " + "; ".join(str(x) for x in problems)
    return None


class OpenAPISynthesizer:
    """Synthesizer ``openapi``: one environment per OpenAPI document (see the module docstring)."""

    Settings = OpenAPISettings
    sources = ("openapi",)
    accepts_paths = True  # a bare `--source PATH` (a spec file or a folder of them) comes here
    check_source = staticmethod(check_source)  # the kernel checks `openapi:PATH` before the run

    def __init__(self, settings: OpenAPISettings | None = None) -> None:
        self.settings = settings or OpenAPISettings()

    def synthesize(self, request: EnvRequested, ctx: Any) -> list[EnvSpec]:
        """Environments for ``openapi:PATH`` (a file or a folder) or ``openapi`` (the corpus)."""
        value = (request.source or "").strip()
        log = ctx.log
        base_seed = ctx.seed
        suffix = f"-s{request.seed}" if request.seed != base_seed else ""
        if not value:
            files, label = corpus_files(), "corpus"
        else:
            target = Path(value).expanduser()
            if target.is_dir():
                files, label = spec_files(target), str(target)
                if not files:
                    raise SpecError(f"{value}: the folder holds no .json, .yaml or .yml file")
            elif target.exists():
                files, label = [target], ""
            else:
                raise SpecError(f"{value}: no such file or folder")
        envs: list[EnvSpec] = []
        errors: list[str] = []
        for f in files:
            source = f"corpus:{f.name}" if label == "corpus" else str(f)
            try:
                env, warnings = synthesize_file(
                    f,
                    seed=request.seed,
                    source=source,
                    display=f.name if label else value,
                    settings=self.settings,
                    env_id=_slug(f.stem) + suffix,
                )
            except SpecError as exc:
                if len(files) == 1:
                    raise
                errors.append(str(exc))
                log.error("spec refused", error=str(exc))
                continue
            for w in warnings:
                log.warning("spec warning", warning=w)
            envs.append(env)
        if not envs:
            raise SpecError(
                "; ".join(errors) or f"{value or 'corpus'}: no environment could be made"
            )
        ids = [e.id for e in envs]
        if len(set(ids)) != len(ids):
            raise SpecError(
                f"{value}: two spec files give the same environment id "
                f"({', '.join(sorted(i for i in ids if ids.count(i) > 1))}); rename one"
            )
        return envs


@hookimpl
def register_commands(cli: Any) -> None:
    """Add ``envkernel env serve`` (the HTTP face of an environment:
    :mod:`envkernel_openapi.httpface`)."""
    env_group = cli.commands.get("env")
    if env_group is not None and "serve" not in env_group.commands:
        from .httpface import serve_command

        env_group.add_command(serve_command())


@hookimpl
def register_synthesizers(register: Any) -> None:
    """Register the ``openapi`` synthesizer."""
    register("openapi", OpenAPISynthesizer)
