"""Reading OpenAPI documents: JSON or YAML, versions 3.0, 3.1 and 3.2, local ``$ref`` resolution.

Every problem is a :class:`SpecError` that names the file and the JSON path (``$.paths./orders
.get.responses``), never a traceback. An unknown 3.x minor version is a warning, not a refusal.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import yaml

SUPPORTED = ("3.0", "3.1", "3.2")
"""OpenAPI versions read without a warning."""
METHODS = ("get", "put", "post", "delete", "patch", "options", "head", "trace", "query")
"""Operation keys of a path item."""
REF_NAME = "x-envkernel-ref"
"""Key added to a resolved schema: the name of the component it came from."""
SUFFIXES = (".json", ".yaml", ".yml")
"""Files a folder source reads."""


class SpecError(ValueError):
    """A document that cannot be used: the message names the file and the JSON path."""


def jpath(parts: list[Any] | tuple[Any, ...]) -> str:
    """``$.paths./orders.get`` from path parts."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


class _Loader(yaml.SafeLoader):
    """Safe YAML without timestamp magic (dates stay strings, as JSON would have them)."""


for _first, _resolvers in list(_Loader.yaml_implicit_resolvers.items()):
    _Loader.yaml_implicit_resolvers[_first] = [(tag, rx) for tag, rx in _resolvers if tag != "tag:yaml.org,2002:timestamp"]


def _stringify_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _stringify_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stringify_keys(v) for v in value]
    return value


def parse_text(text: str, name: str) -> dict[str, Any]:
    """Parse a document's text (JSON, else YAML) into a dict; errors name the file and line."""
    stripped = text.lstrip()
    if not stripped:
        raise SpecError(f"{name}: the file is empty")
    data: Any
    if stripped.startswith(("{", "[")):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecError(f"{name}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    else:
        try:
            data = yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecError(f"{name}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SpecError(f"{name}: at $: an OpenAPI document must be an object, got {type(data).__name__}")
    return _stringify_keys(data)


def check_version(doc: dict[str, Any], name: str) -> tuple[str, list[str]]:
    """The document's version (``3.1``) and warnings; refuses Swagger 2 and non-3.x documents."""
    if "swagger" in doc:
        raise SpecError(f"{name}: at $.swagger: Swagger/OpenAPI {doc['swagger']} is not supported; convert it to OpenAPI 3 first")
    version = doc.get("openapi")
    if version is None:
        raise SpecError(f"{name}: at $: there is no 'openapi' version field; this is not an OpenAPI 3 document")
    text = str(version)
    m = re.match(r"^(\d+)\.(\d+)", text)
    if not m or m.group(1) != "3":
        raise SpecError(f"{name}: at $.openapi: version {text!r} is not supported; envkernel reads OpenAPI {', '.join(SUPPORTED)}")
    short = f"{m.group(1)}.{m.group(2)}"
    warnings = []
    if short not in SUPPORTED:
        warnings.append(f"{name}: OpenAPI {text} is newer than the versions known here ({', '.join(SUPPORTED)}); read as {SUPPORTED[-1]}")
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
            raise SpecError(f"{name}: at $.paths: the document has no paths, so there are no operations to make tools from")
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
    """Resolves local ``$ref``s (``#/components/schemas/Order``) into one self-contained tree.

    A resolved schema keeps the name of its component under :data:`REF_NAME`. A reference cycle
    is cut (the inner occurrence becomes ``{"type": "object"}`` with the name kept).
    """

    def __init__(self, doc: dict[str, Any], name: str) -> None:
        self.doc = doc
        self.name = name
        self._cache: dict[str, Any] = {}

    def lookup(self, ref: str, parts: list[Any]) -> Any:
        if not isinstance(ref, str) or not ref.startswith("#"):
            raise SpecError(f"{self.name}: at {jpath(parts)}: only local references (#/...) are supported, got {ref!r}")
        node: Any = self.doc
        for raw in ref[1:].split("/")[1:] if ref.startswith("#/") else []:
            key = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise SpecError(f"{self.name}: at {jpath(parts)}: $ref {ref!r} points to nothing")
        return node

    def resolve(self, node: Any, parts: list[Any], stack: tuple[str, ...] = ()) -> Any:
        """A copy of ``node`` with every local $ref replaced by what it points to."""
        if isinstance(node, list):
            return [self.resolve(v, [*parts, i], stack) for i, v in enumerate(node)]
        if not isinstance(node, dict):
            return node
        if "$ref" in node:
            ref = node["$ref"]
            comp = ref.rsplit("/", 1)[-1] if isinstance(ref, str) else ""
            if ref in stack:
                return {"type": "object", REF_NAME: comp}
            target = self.lookup(ref, [*parts, "$ref"])
            out = self.resolve(target, [*parts, "$ref"], (*stack, ref))
            if isinstance(out, dict):
                out = dict(out)
                if "/components/schemas/" in str(ref):
                    out.setdefault(REF_NAME, comp)
                for k, v in node.items():  # 3.1 allows siblings of $ref (description, ...)
                    if k != "$ref":
                        out[k] = self.resolve(v, [*parts, k], stack)
            return out
        return {k: self.resolve(v, [*parts, k], stack) for k, v in node.items()}


def load(path: str | Path, display: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Read, check and resolve one document: (resolved document, warnings)."""
    p = Path(path)
    name = display or p.name
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError(f"{name}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"{name}: cannot read it: {exc}") from None
    return load_text(text, name)


def load_text(text: str, name: str) -> tuple[dict[str, Any], list[str]]:
    """Like :func:`load`, from text."""
    doc = parse_text(text, name)
    _version, warnings = check_version(doc, name)
    check_structure(doc, name)
    resolved = Resolver(doc, name).resolve(doc, [])
    return resolved, warnings


def spec_files(folder: str | Path) -> list[Path]:
    """The spec files of a folder (``.json``, ``.yaml``, ``.yml``), sorted; not recursive."""
    return sorted(p for p in Path(folder).iterdir() if p.is_file() and p.suffix.lower() in SUFFIXES)
