"""Reading OpenAPI documents: JSON or YAML, versions 3.0, 3.1 and 3.2 (Swagger 2.0 converted by
swagger2openapi when it is installed); ``$ref``s resolved with ``referencing``.

Every problem is a :class:`SpecError` that names the file and the JSON path (``$.paths./orders
.get.responses``), never a traceback. An unknown 3.x minor version is a warning, not a refusal.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urldefrag, urljoin, urlparse

import structlog
import yaml
from openapi_spec_validator import (
    OpenAPIV30SpecValidator,
    OpenAPIV31SpecValidator,
    OpenAPIV32SpecValidator,
)
from referencing import Registry, Resource, Specification
from referencing.exceptions import PointerToNowhere, Unresolvable

log = structlog.get_logger("envkernel.openapi")

SUPPORTED = ("3.0", "3.1", "3.2")
"""OpenAPI versions read without a warning."""
METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace", "query")
"""Operation keys of a path item."""
REF_NAME = "x-envkernel-ref"
"""Key added to a resolved schema: the name of the component it came from."""
UNRESOLVED = "x-envkernel-unresolved"
"""Key of the node that stands for a ``$ref`` pointing to nothing (its value says which): the
operations whose parameters, body or answers reach one are skipped, the rest of the spec is kept."""
SUFFIXES = (".json", ".yaml", ".yml")
"""Files a folder source reads."""
RESOLVED = ("paths", "components", "webhooks")
"""Top-level parts whose ``$ref``s are resolved (the rest, such as tags' descriptions, stays as
written)."""


class SpecError(ValueError):
    """A document that cannot be used: the message names the file and the JSON path."""


def jpath(parts: list[Any] | tuple[Any, ...]) -> str:
    """``$.paths./orders.get`` from path parts."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


class _Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """Safe YAML (libyaml's parser where present) without timestamp magic: dates stay strings, as in
    JSON."""


for _first, _resolvers in list(_Loader.yaml_implicit_resolvers.items()):
    _Loader.yaml_implicit_resolvers[_first] = [
        (tag, rx) for tag, rx in _resolvers if tag != "tag:yaml.org,2002:timestamp"
    ]


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    return value


def parse_text(text: str, name: str) -> dict[str, Any]:
    """Parse a document's text (JSON, else YAML) into a dict; errors name the file and line."""
    data = parse_any(text, name)
    if not isinstance(data, dict):
        raise SpecError(
            f"{name}: at $: an OpenAPI document must be an object, got {type(data).__name__}"
        )
    return data


def parse_any(text: str, name: str) -> Any:
    """Parse JSON or YAML text (dates stay strings, keys become strings); errors name the file and
    line."""
    stripped = text.lstrip()
    if not stripped:
        raise SpecError(f"{name}: the file is empty")
    data: Any
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(
                f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
    else:
        try:
            data = yaml.load(text, Loader=_Loader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = (
                f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            )
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecError(f"{name}: not valid YAML{where}: {problem}") from None
    return _stringify_keys(data)


CONVERTER = "swagger2openapi"
"""The Swagger 2.0 converter (Mermade's, from npm: ``npm install -g swagger2openapi``); the
``ENVKERNEL_SWAGGER2OPENAPI`` environment variable names another command."""
CONVERT_SECONDS = 120.0
"""How long one conversion may take."""


def converter() -> str | None:
    """The Swagger 2.0 converter's command, or None when it is not installed."""
    return os.environ.get("ENVKERNEL_SWAGGER2OPENAPI") or shutil.which(CONVERTER)


def convert_swagger(doc: dict[str, Any], name: str) -> tuple[dict[str, Any], list[str]]:
    """A Swagger 2.0 document as OpenAPI 3.0, converted by ``swagger2openapi`` (small errors
    patched, the rest kept as ``x-s2o-warning``s): (document, warnings). Without the converter,
    or when it fails, a :class:`SpecError` says what to do."""
    version = doc.get("swagger")
    if str(version).split(".")[0] != "2":
        raise SpecError(
            f"{name}: at $.swagger: Swagger {version} is not supported; envkernel reads "
            f"OpenAPI {', '.join(SUPPORTED)} and Swagger 2.0"
        )
    cmd = converter()
    if cmd is None:
        raise SpecError(
            f"{name}: at $.swagger: this is Swagger/OpenAPI {version}; convert it to OpenAPI "
            f"3 first (install the converter with `npm install -g {CONVERTER}` and it is "
            "done on reading)"
        )
    with tempfile.TemporaryDirectory(prefix="envkernel-s2o-") as tmp:
        src = Path(tmp) / "swagger.json"
        src.write_text(json.dumps(doc), encoding="utf-8")
        try:
            proc = subprocess.run(
                [*shlex.split(cmd), "--patch", "--warnOnly", str(src)],
                capture_output=True,
                text=True,
                timeout=CONVERT_SECONDS,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SpecError(
                f"{name}: at $.swagger: the Swagger 2.0 converter ({cmd}) could not run: "
                f"{exc}; convert it to OpenAPI 3 first"
            ) from None
    if proc.returncode != 0 or not proc.stdout.strip():
        why = (proc.stderr.strip().splitlines() or ["no output"])[0][:200]
        raise SpecError(
            f"{name}: at $.swagger: the Swagger 2.0 converter failed ({why}); convert it to "
            "OpenAPI 3 by hand"
        )
    out = parse_text(proc.stdout, name)
    log.info("swagger converted", spec=name, converter=cmd)
    return out, [
        f"{name}: Swagger {version} converted to OpenAPI {out.get('openapi')} by {CONVERTER}"
    ]


def check_version(doc: dict[str, Any], name: str) -> tuple[str, list[str]]:
    """The document's version (``3.1``) and warnings; refuses Swagger 2 (see
    :func:`convert_swagger`) and non-3.x documents."""
    if "swagger" in doc:
        raise SpecError(
            f"{name}: at $.swagger: Swagger/OpenAPI {doc['swagger']} is not supported; "
            "convert it to OpenAPI 3 first"
        )
    version = doc.get("openapi")
    if version is None:
        raise SpecError(
            f"{name}: at $: there is no 'openapi' version field; this is not an OpenAPI 3 document"
        )
    text = str(version)
    m = re.match(r"^(\d+)\.(\d+)", text)
    if not m or m.group(1) != "3":
        raise SpecError(
            f"{name}: at $.openapi: version {text!r} is not supported; envkernel reads "
            f"OpenAPI {', '.join(SUPPORTED)}"
        )
    short = f"{m.group(1)}.{m.group(2)}"
    warnings = []
    if short not in SUPPORTED:
        warnings.append(
            f"{name}: OpenAPI {text} is newer than the versions known here "
            f"({', '.join(SUPPORTED)}); read as {SUPPORTED[-1]}"
        )
    return short, warnings


def _expect(value: Any, kind: type, name: str, parts: list[Any], what: str) -> None:
    if not isinstance(value, kind):
        want = {dict: "an object", list: "a list", str: "a string"}.get(kind, kind.__name__)
        got = "null" if value is None else type(value).__name__
        raise SpecError(f"{name}: at {jpath(parts)}: {what} must be {want}, got {got}")


def check_structure(doc: dict[str, Any], name: str) -> None:
    """Refuse a malformed document early (paths, operations, parameters, responses, components)."""
    _expect(doc.get("info", {}), dict, name, ["info"], "info")
    paths = doc.get("paths")
    if paths is None:
        if doc.get("webhooks") or doc.get("components"):
            raise SpecError(
                f"{name}: at $.paths: the document has no paths, so there are no operations "
                "to make tools from"
            )
        raise SpecError(f"{name}: at $: there is no 'paths' object")
    _expect(paths, dict, name, ["paths"], "paths")
    for path, item in paths.items():
        if not str(path).startswith("/"):
            raise SpecError(f"{name}: at {jpath(['paths', path])}: a path must start with '/'")
        _expect(item, dict, name, ["paths", path], "a path item")
        if "parameters" in item:
            _expect(item["parameters"], list, name, ["paths", path, "parameters"], "parameters")
        for method in METHODS:
            if method not in item:
                continue
            op = item[method]
            where = ["paths", path, method]
            _expect(op, dict, name, where, "an operation")
            if "parameters" in op:
                _expect(op["parameters"], list, name, [*where, "parameters"], "parameters")
                for i, p in enumerate(op["parameters"]):
                    _expect(p, dict, name, [*where, "parameters", i], "a parameter")
            if "requestBody" in op:
                _expect(op["requestBody"], dict, name, [*where, "requestBody"], "requestBody")
            if "responses" in op:
                _expect(op["responses"], dict, name, [*where, "responses"], "responses")
                for code, resp in op["responses"].items():
                    _expect(resp, dict, name, [*where, "responses", code], "a response")
    comps = doc.get("components", {})
    _expect(comps, dict, name, ["components"], "components")
    schemas = comps.get("schemas", {})
    _expect(schemas, dict, name, ["components", "schemas"], "components.schemas")
    for sname, schema in schemas.items():
        if not isinstance(schema, (dict, bool)):
            _expect(schema, dict, name, ["components", "schemas", sname], "a schema")


class Resolver:
    """Inlines every ``$ref`` of a document into one self-contained tree, with ``referencing``.

    The ``referencing`` library (the reference engine of ``jsonschema``) resolves each reference:
    local pointers (``#/components/schemas/Order``), relative files (``./paths/orders.yaml``,
    ``schemas.json#/Order``) and pointers inside those files, each relative to the file that holds
    it. Keys starting with ``x-`` (vendor extensions such as ``x-codeSamples``, which often point
    at Markdown or code files) are copied as they are and never resolved, and so are ``example``
    and ``examples`` (often references to sample files; nothing here reads them). A resolved schema
    keeps the name of its component under :data:`REF_NAME`; a reference cycle is cut (the inner
    occurrence becomes ``{"type": "object"}`` with the name kept). Each reference is expanded
    once and the expansion shared (the tree is a DAG: treat it as read-only), so a spec whose
    schemas all reach each other (Stripe's) resolves in linear time.
    """

    def __init__(self, doc: dict[str, Any], name: str, base: Path | None = None) -> None:
        self.doc = doc
        self.name = name
        self.base_uri = (base if base is not None else Path.cwd() / name).resolve().as_uri()
        root = Resource(contents=doc, specification=Specification.OPAQUE)
        self.registry: Registry[Any] = Registry(retrieve=self._retrieve).with_resource(
            self.base_uri, root
        )  # type: ignore[call-arg]
        self.files: list[str] = []
        """Names of the other files read."""
        self.cuts = 0
        """Reference cycles cut so far."""
        self.unresolved: dict[str, str] = {}
        """The references that point to nothing (each left as an :data:`UNRESOLVED` marker), with
        the message of the first place that holds it."""
        self._done: dict[str, Any] = {}

    def _retrieve(self, uri: str) -> Resource[Any]:
        """Read a referenced file (JSON or YAML) next to the document."""
        url = urlparse(uri)
        if url.scheme != "file":
            raise SpecError(f"only local files can be referenced, not {uri!r}")
        path = Path(unquote(url.path))
        text = path.read_text(encoding="utf-8")
        data = parse_any(text, path.name)
        self.files.append(path.name)
        return Resource(contents=data, specification=Specification.OPAQUE)

    def _lookup(self, ref: str, base: str, parts: list[Any]) -> tuple[Any, str]:
        try:
            resolved = self.registry.resolver(base_uri=base).lookup(ref)
        except Unresolvable as exc:
            cause = exc.__cause__ or exc.__context__
            why = (
                "it points to nothing"
                if isinstance(exc, PointerToNowhere)
                else (str(cause) if cause else type(exc).__name__)
            )
            raise SpecError(
                f"{self.name}: at {jpath(parts)}: $ref {ref!r} cannot be resolved: {why} "
                "(points to nothing)"
            ) from None
        target = urldefrag(urljoin(base, ref)).url or base
        return resolved.contents, target

    def resolve(
        self, node: Any, parts: list[Any], stack: tuple[str, ...] = (), base: str = ""
    ) -> Any:
        """A copy of ``node`` with every ``$ref`` (outside ``x-`` keys) replaced by what it points
        to."""
        base = base or self.base_uri
        if isinstance(node, list):
            return [self.resolve(v, [*parts, i], stack, base) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str):
            absolute = urljoin(base, ref)
            comp = ref.rsplit("/", 1)[-1] if "#" in ref else Path(urldefrag(ref).url).stem
            if absolute in stack:
                self.cuts += 1
                return {"type": "object", REF_NAME: comp}
            if absolute in self._done and len(node) == 1:
                return self._done[absolute]
            try:
                target, new_base = self._lookup(ref, base, [*parts, "$ref"])
            except SpecError as exc:  # a dangling $ref: only the operations that reach it go
                self.unresolved.setdefault(ref, str(exc))
                why = str(exc).split(": $ref ", 1)[-1].removesuffix(" (points to nothing)")
                return {UNRESOLVED: f"$ref {why}"}
            out = self.resolve(target, [*parts, "$ref"], (*stack, absolute), new_base)
            if isinstance(out, dict):
                out = dict(out)
                if "/components/schemas/" in absolute or "/definitions/" in absolute:
                    out.setdefault(REF_NAME, comp)
                if len(node) == 1:
                    self._done[absolute] = out
                for k, v in node.items():  # 3.1 allows siblings of $ref (description, ...)
                    if k != "$ref":
                        out[k] = v if _literal(k) else self.resolve(v, [*parts, k], stack, base)
            return out
        return {
            k: (v if _literal(k) else self.resolve(v, [*parts, k], stack, base))
            for k, v in node.items()
        }


def unresolved_refs(node: Any, memo: dict[int, tuple[str, ...]] | None = None) -> tuple[str, ...]:
    """The dangling references (:data:`UNRESOLVED` markers) under ``node``, first seen first.

    The resolved tree shares its expansions (a DAG), so the walk remembers each node it has seen
    (``memo``, by identity; pass one dict to check many operations of a document in linear time).
    """
    memo = {} if memo is None else memo
    seen = memo.get(id(node))
    if seen is not None:
        return seen
    found: dict[str, None] = {}
    if isinstance(node, dict):
        if isinstance(node.get(UNRESOLVED), str):
            found[node[UNRESOLVED]] = None
        for k, v in node.items():
            if isinstance(v, (dict, list)) and not _literal(str(k)):
                found.update(dict.fromkeys(unresolved_refs(v, memo)))
    elif isinstance(node, list):
        for v in node:
            if isinstance(v, (dict, list)):
                found.update(dict.fromkeys(unresolved_refs(v, memo)))
    out = tuple(found)
    memo[id(node)] = out
    return out


def _literal(key: str) -> bool:
    """Keys whose values are kept as written: vendor extensions, and examples (never read here)."""
    return key.startswith("x-") or key in ("example", "examples")


def load(
    path: str | Path, display: str | None = None, *, validate: bool = True
) -> tuple[dict[str, Any], list[str]]:
    """Read, check and resolve one document: (resolved document, warnings).

    Relative-file ``$ref``s resolve against the document's folder. With ``validate``, the
    document is also checked by ``openapi-spec-validator``; what it finds is reported as warnings
    (real specs are often slightly invalid), never a refusal.
    """
    p = Path(path)
    name = display or p.name
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{name}: cannot read it: {exc}") from None
    return load_text(text, name, base=p, validate=validate)


def load_text(
    text: str, name: str, *, base: Path | None = None, validate: bool = False
) -> tuple[dict[str, Any], list[str]]:
    """Like :func:`load`, from text (``base``: the file that relative ``$ref``s are relative to)."""
    doc = parse_text(text, name)
    converted: list[str] = []
    if "swagger" in doc and "openapi" not in doc:
        doc, converted = convert_swagger(doc, name)
    version, warnings = check_version(doc, name)
    warnings = converted + warnings
    _expect(doc.get("info", {}), dict, name, ["info"], "info")
    # the whole `paths` (or a component map) may be one $ref to another file, so the structure
    # is checked on the resolved document
    try:
        resolver = Resolver(doc, name, base)
        resolved = {k: (resolver.resolve(v, [k]) if k in RESOLVED else v) for k, v in doc.items()}
    except RecursionError:
        raise SpecError(f"{name}: at $: the references nest too deeply to resolve") from None
    warnings += [
        f"{problem.removesuffix(' (points to nothing)')}; the operations that reach it are skipped"
        for problem in resolver.unresolved.values()
    ]
    check_structure(resolved, name)
    if validate:
        warnings += validation_warnings(doc, name, version, base)
    return resolved, warnings


MAX_VALIDATION_WARNINGS = 5
"""Validator findings reported per document (the rest are counted)."""


def validation_warnings(
    doc: dict[str, Any], name: str, version: str, base: Path | None
) -> list[str]:
    """What ``openapi-spec-validator`` finds wrong in a document, as warnings (never raises): the
    first :data:`MAX_VALIDATION_WARNINGS` distinct findings by text, then how many more distinct
    ones there are."""
    cls = {"3.0": OpenAPIV30SpecValidator, "3.1": OpenAPIV31SpecValidator}.get(
        version, OpenAPIV32SpecValidator
    )
    found: list[str] = []
    crash = ""
    try:
        for err in cls(
            doc, base_uri=base.resolve().as_uri() if base is not None else ""
        ).iter_errors():
            where = jpath(list(getattr(err, "absolute_path", []) or []))
            found.append(
                f"{name}: the validator reports at {where}: "
                f"{str(getattr(err, 'message', err))[:200]}"
            )
    except Exception as exc:
        crash = f"{name}: the validator could not finish: {type(exc).__name__}: {str(exc)[:200]}"
    # the validator's order of findings follows set order (PYTHONHASHSEED): the first ones by text,
    # so
    # that the same document always gives the same warnings
    found = sorted(dict.fromkeys(found))
    more = max(0, len(found) - MAX_VALIDATION_WARNINGS)
    found = found[:MAX_VALIDATION_WARNINGS] + ([crash] if crash else [])
    if more:
        found.append(f"{name}: the validator reports {more} more problems")
    return found


def spec_files(folder: str | Path) -> list[Path]:
    """The spec files of a folder (``.json``, ``.yaml``, ``.yml``), sorted; not recursive."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
