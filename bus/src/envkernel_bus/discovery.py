"""Find the embedded server of a run in progress on this machine (for ``envkernel tap``)."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any


def registry_dir() -> Path:
    """Folder where running embedded servers announce themselves."""
    base = os.environ.get("XDG_RUNTIME_DIR") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "envkernel" / "servers"


def announce(run: str, url: str, out_dir: Path) -> Path:
    """Record that ``run`` is served at ``url`` by this process; return the file to remove later."""
    d = registry_dir()
    d.mkdir(parents=True, exist_ok=True)
    f = d / f"{run}.json"
    f.write_text(
        json.dumps(
            {"run": run, "url": url, "pid": os.getpid(), "out": str(out_dir), "time": time.time()}
        )
    )
    return f


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def running() -> list[dict[str, Any]]:
    """Runs in progress on this machine, newest first (stale entries are removed)."""
    d = registry_dir()
    found = []
    for f in d.glob("*.json") if d.exists() else []:
        try:
            info = json.loads(f.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if _alive(int(info.get("pid", 0))):
            found.append(info)
        else:
            f.unlink(missing_ok=True)
    return sorted(found, key=lambda i: i.get("time", 0), reverse=True)
