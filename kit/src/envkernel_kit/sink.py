"""An append-only JSON-lines file that drops duplicate keys, across restarts too."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any


def line_hash(line: bytes) -> str:
    """A key for a line that carries none."""
    return "h:" + hashlib.blake2b(line, digest_size=16).hexdigest()


class JsonlSink:
    """Appends one JSON object per line; each line is flushed as it is written.

    ``key_of`` gives a row's deduplication key (None: the line's hash). Keys already in the file
    are loaded on first use, so a redelivered event after a restart is not written twice. A
    partial last line (a crash mid-write) is cut off before appending.
    """

    def __init__(
        self, path: Path, key_of: Callable[[dict[str, Any]], str | None], *, fsync: bool = False
    ) -> None:
        self.path = path
        self.key_of = key_of
        self.fsync = fsync
        self._seen: set[str] | None = None
        self._fh: IO[bytes] | None = None

    def _load(self) -> set[str]:
        seen: set[str] = set()
        if self.path.exists():
            data = self.path.read_bytes()
            if data and not data.endswith(b"\n"):
                cut = data.rfind(b"\n") + 1
                with open(self.path, "r+b") as fh:
                    fh.truncate(cut)
                data = data[:cut]
            for line in data.splitlines():
                if not line.strip():
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                seen.add(self.key_of(row) or line_hash(line))
        return seen

    @property
    def seen(self) -> set[str]:
        """Keys written so far (including by earlier processes)."""
        if self._seen is None:
            self._seen = self._load()
        return self._seen

    def __contains__(self, key: str) -> bool:
        return key in self.seen

    def write(self, row: dict[str, Any]) -> bool:
        """Append ``row`` unless its key was written before; True when written."""
        line = json.dumps(row, ensure_ascii=False, separators=(",", ":"), default=str).encode()
        key = self.key_of(row) or line_hash(line)
        if key in self.seen:
            return False
        if self._fh is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._fh = open(self.path, "ab")
        self._fh.write(line + b"\n")
        self._fh.flush()
        if self.fsync:
            os.fsync(self._fh.fileno())
        self.seen.add(key)
        return True

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every complete row in the file."""
        if self._fh is not None:
            self._fh.flush()
        if not self.path.exists():
            return
        with open(self.path, "rb") as fh:
            for line in fh:
                if line.endswith(b"\n") and line.strip():
                    try:
                        yield json.loads(line)
                    except ValueError:
                        continue

    def close(self) -> None:
        """Close the file (it reopens on the next write)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
