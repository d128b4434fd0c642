"""Write an environment folder (``envs/<id>/`` of a run, what the recorder keeps of an environment),
and read one back into an EnvSpec.

The folder holds ``env.json`` (the spec without its behaviour and seed, plus
``"behaviour": {"kind": "code", "file": "env.py"}`` or ``{"kind": "model", "file": "model.json"}``),
the behaviour file and ``seed.sql``. Nothing in it is executed here.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import msgspec

from envkernel_schemas import CodeBehaviour, EnvSpec, WorkspaceBehaviour

_BEHAVIOUR_FILES = {"code": "env.py", "model": "model.json", "workspace": "workspace.json"}


class EnvDirError(ValueError):
    """An environment folder is missing a file or holds something that is not an environment.

    The kernel's commands report it as a usage error (exit 2)."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write ``path`` whole or not at all (a temporary file, then rename): a failure (a full disk)
    leaves no partial file."""
    # a name of this writer's own: two writers of the same file (threads, processes) never share one
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        tmp.write_bytes(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def write_env_dir(env: EnvSpec, d: Path) -> Path:
    """Write ``env`` into the folder ``d``: env.json (spec and report), env.py or model.json, and
    seed.sql when there is one (a model environment's seed rows are in model.json); each file
    atomically."""
    d.mkdir(parents=True, exist_ok=True)
    meta = msgspec.to_builtins(env)
    behaviour = meta.pop("behaviour")
    seed_sql = meta.pop("seed_sql")
    meta["behaviour"] = {"kind": behaviour["kind"], "file": _BEHAVIOUR_FILES[behaviour["kind"]]}
    write_atomic(d / "env.json", json.dumps(meta, indent=2))
    if isinstance(env.behaviour, CodeBehaviour):
        write_atomic(d / "env.py", env.behaviour.source)
    elif isinstance(env.behaviour, WorkspaceBehaviour):  # the tree, setup and app code, one object
        write_atomic(
            d / "workspace.json",
            json.dumps({k: v for k, v in behaviour.items() if k != "kind"}, indent=2),
        )
    else:
        write_atomic(d / "model.json", json.dumps(env.behaviour.model, indent=2))
    if seed_sql:
        write_atomic(d / "seed.sql", seed_sql)
    return d


def load_env_dir(path: str | Path) -> EnvSpec:
    """The EnvSpec stored in ``path`` (a folder with env.json, env.py or model.json, seed.sql)."""
    d = Path(path)
    if not d.is_dir():
        raise EnvDirError(
            f"{d} is not a folder; give a run's envs/<id>/ folder (with env.json, env.py, seed.sql)"
        )
    meta_file = d / "env.json"
    if not meta_file.is_file():
        rejected = (
            " (the environment was rejected: see rejected.json there)"
            if (d / "rejected.json").is_file()
            else ""
        )
        raise EnvDirError(f"{d} has no env.json{rejected}; give a run's envs/<id>/ folder")
    try:
        meta: Any = json.loads(meta_file.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise EnvDirError(f"{meta_file} is not valid JSON: {exc}") from None
    if not isinstance(meta, dict):
        raise EnvDirError(f"{meta_file} must hold a JSON object")
    behaviour = meta.get("behaviour")
    kind = behaviour.get("kind") if isinstance(behaviour, dict) else None
    if kind not in _BEHAVIOUR_FILES:
        raise EnvDirError(
            f'{meta_file}: \'behaviour\' must be {{"kind": "code", "model" or "workspace", '
            f'"file": ...}}, got {behaviour!r}'
        )
    assert isinstance(behaviour, dict)  # a known kind came from a dict
    name = behaviour.get("file") or _BEHAVIOUR_FILES[kind]
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise EnvDirError(
            f"{meta_file}: behaviour file {name!r} must be a plain file name inside {d}"
        )
    text = _read(d / name)
    if kind == "code":
        meta["behaviour"] = {"kind": "code", "source": text}
    elif kind == "workspace":
        try:
            meta["behaviour"] = {**json.loads(text), "kind": "workspace"}
        except (json.JSONDecodeError, TypeError) as exc:
            raise EnvDirError(f"{d / name} is not a JSON object: {exc}") from None
    else:
        try:
            model = json.loads(text)
        except json.JSONDecodeError as exc:
            raise EnvDirError(f"{d / name} is not valid JSON: {exc}") from None
        meta["behaviour"] = {"kind": "model", "model": model}
    seed = d / "seed.sql"
    meta["seed_sql"] = _read(seed) if seed.exists() else meta.get("seed_sql", "")
    try:
        return msgspec.convert(meta, EnvSpec)
    except msgspec.ValidationError as exc:
        raise EnvDirError(f"{meta_file} does not describe an environment: {exc}") from None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EnvDirError(f"{path} is missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EnvDirError(f"cannot read {path}: {exc}") from None
