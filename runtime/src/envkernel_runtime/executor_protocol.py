"""The executor's protocol and state: one loaded environment and the answers to its requests.

Standard library only (see :mod:`envkernel_runtime.executor`, the program a sandbox runs). The
errors, the determinism (the frozen clock, tracked random generators, patched ``time``,
``datetime``, ``uuid``), the database every call runs in a savepoint of, the ``env`` object tools
receive, :class:`Executor` (``load``, ``call``, ``snapshot``, ``restore``, ``patch``, ``dump``,
``ping``), the working folder's capture and restore, and the guards on processes environment
code forks.
"""

from __future__ import annotations

import copy
import datetime as _dt
import inspect
import json
import linecache
import math
import os
import random
import shutil
import signal
import sqlite3
import sys
import time
import types
import uuid
from collections.abc import Callable

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is never imported at run time: it would slow the executor's start
    from typing import Any, TypeAlias

    Request: TypeAlias = dict[str, Any]
    """One request, as decoded from its JSON line."""
    Reply: TypeAlias = dict[str, Any]
    """One answer before it is encoded: ``{"ok": true, "value": ...}`` or
    ``{"ok": false, "error": ...}``."""
    RandomState: TypeAlias = tuple[Any, ...]
    """What ``random.Random.getstate`` returns."""
    Counters: TypeAlias = tuple[
        dict[str, int], tuple[int, int], RandomState, RandomState, RandomState
    ]
    """The ids, the clock and the three generators' states (see :meth:`Executor._counters`)."""
    Files: TypeAlias = dict[str, Any]
    """A working folder's capture: path -> what it held (see :func:`_workspace_scan`)."""
    Globals: TypeAlias = dict[str, Any] | tuple[str, str] | None
    """What a snapshot keeps of env.py's module globals (see :meth:`Executor._globals`)."""
    Snapshot: TypeAlias = tuple["bytes | sqlite3.Connection", Counters, Files, Globals]
    """A snapshot: the database, the counters, the working folder and env.py's globals."""

PROTOCOL = 2
"""The executor protocol's version (see :mod:`envkernel_runtime.executor`)."""
DEFAULT_CLOCK = "2026-01-15T09:00:00Z"
DEFAULT_CALL_TIMEOUT = 10.0
DEFAULT_LOAD_TIMEOUT = 30.0
DEFAULT_MAX_RESPONSE = 32 * 1024 * 1024
ENV_FILENAME = "env.py"
_SAVEPOINT = "envk_call"
_SAVEPOINT_SQL = f"SAVEPOINT {_SAVEPOINT}"
_RELEASE_SQL = f"RELEASE {_SAVEPOINT}"
_PROGRESS_STEPS = 10_000

_real_time = time.time
_real_time_ns = time.time_ns
_real_monotonic = time.monotonic
_real_gmtime = time.gmtime
_real_localtime = time.localtime
_real_strftime = time.strftime
_RealDateTime = _dt.datetime
_RealDate = _dt.date


# --------------------------------------------------------------------------- errors


class ToolError(Exception):
    """An error the environment reports to the agent: a short code and a message."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(code, message)
        self.code = str(code)
        self.message = str(message)

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"


class _Deadline(BaseException):
    """Raised by SIGALRM when a call runs past its timeout (BaseException: `except Exception` in
    environment code does not swallow it)."""


class _Failure(Exception):
    """A request that fails with a protocol error code."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


def _ok(value: Any = None) -> Reply:
    return {"ok": True, "value": value}


def _err(code: str, message: str) -> Reply:
    return {"ok": False, "error": {"code": code, "message": message}}


# --------------------------------------------------------------------------- determinism


class Clock:
    """The frozen clock. ``now()`` advances exactly one second per call; ``time.time()`` and
    ``datetime.now()`` read ``base + seconds + 1 µs per read``, so they move forward too."""

    def __init__(self, start: str = DEFAULT_CLOCK) -> None:
        self.base = _parse_clock(start)
        self.seconds = 0
        self.micros = 0

    def now_iso(self) -> str:
        t = self.base + self.seconds
        self.seconds += 1
        return _real_strftime("%Y-%m-%dT%H:%M:%SZ", _real_gmtime(t))

    def time(self) -> float:
        self.micros += 1
        return self.base + self.seconds + self.micros * 1e-6

    def get(self) -> tuple[int, int]:
        return (self.seconds, self.micros)

    def set(self, state: tuple[int, int]) -> None:
        self.seconds, self.micros = state


def _parse_clock(text: str) -> int:
    try:
        d = _RealDateTime.fromisoformat(str(text).replace("Z", "+00:00"))
    except ValueError:
        raise _Failure(
            "bad_request", f"clock {text!r} is not an ISO-8601 time like {DEFAULT_CLOCK!r}"
        ) from None
    if d.tzinfo is None:
        d = d.replace(tzinfo=_dt.UTC)
    return int(d.timestamp())


_C_RANDOM = random.Random.random  # the C methods of ``_random.Random``
_C_GETRANDBITS = random.Random.getrandbits


class _TrackedRandom(random.Random):
    """A ``random.Random`` that notes (``changed``) whenever its state may have moved, so a call
    that drew nothing from it need not copy its state before and put it back after a failure
    (``getstate`` copies 625 words: 15-45 µs for the three generators, on every call).

    Every draw of ``random.Random`` goes through ``random()`` or ``getrandbits()`` (its Python
    methods call them; ``gauss`` also keeps ``gauss_next``, a property here), and
    ``seed``/``setstate`` change the state, so all of them mark it. What is not seen: environment
    code calling the C methods of ``_random.Random`` unbound on the generator; a *failed* call that
    did so keeps its draws."""

    changed = True
    saved: RandomState | None = None  # the state when ``changed`` was last cleared
    _gauss: float | None = None

    def random(self) -> float:
        """A float in [0, 1), as ``random.Random.random``."""
        self.changed = True
        return _C_RANDOM(self)

    def getrandbits(self, k: int) -> int:
        """``k`` random bits, as ``random.Random.getrandbits``."""
        self.changed = True
        return _C_GETRANDBITS(self, k)

    def randbytes(self, n: int) -> bytes:
        """``n`` random bytes, as ``random.Random.randbytes``."""
        self.changed = True
        return super().randbytes(n)

    def seed(self, *args: Any, **kwargs: Any) -> None:
        """Seed it, as ``random.Random.seed``."""
        self.changed = True
        super().seed(*args, **kwargs)

    def setstate(self, state: RandomState) -> None:
        """Set its state, as ``random.Random.setstate``."""
        self.changed = True
        super().setstate(state)

    @property
    def gauss_next(self) -> float | None:
        """``gauss``'s second value kept for its next call (part of the state)."""
        return self._gauss

    @gauss_next.setter
    def gauss_next(self, value: float | None) -> None:
        self.changed = True
        self._gauss = value

    def take(self) -> RandomState:
        """The state now, copied only when it moved since it was last taken."""
        if self.changed or self.saved is None:
            self.saved = self.getstate()
            self.changed = False
        return self.saved

    def put(self, state: RandomState) -> None:
        """Set the state to ``state`` (from :meth:`take` or ``getstate``), copying nothing when it
        did not move."""
        if self.changed or state is not self.saved:
            self.setstate(state)
            self.saved = state
            self.changed = False


def _track_global_random() -> None:
    """Make the ``random`` module's functions draw from a :class:`_TrackedRandom` (same seeding,
    same values)."""
    old = random._inst
    new = _TrackedRandom()
    new.setstate(old.getstate())
    for name, value in list(vars(random).items()):
        if getattr(value, "__self__", None) is old:
            setattr(random, name, getattr(new, value.__name__))
    random._inst = new


def _take(gen: random.Random) -> RandomState:
    return gen.take() if isinstance(gen, _TrackedRandom) else gen.getstate()


def _put(gen: random.Random, state: RandomState) -> None:
    if isinstance(gen, _TrackedRandom):
        gen.put(state)
    else:
        gen.setstate(state)


class _Patches:
    """Process-wide deterministic stand-ins for clocks and uuids; they read the loaded env's
    state."""

    clock = Clock()
    uuids = _TrackedRandom(0)


class _FrozenMeta(type):
    """``isinstance(x, datetime.datetime)`` stays true for real datetimes after the patch."""

    def __instancecheck__(cls, obj: object) -> bool:
        real = cls.__dict__.get("_real")
        return isinstance(obj, real) if real else type.__instancecheck__(cls, obj)

    def __subclasscheck__(cls, sub: type) -> bool:
        real = cls.__dict__.get("_real")
        return issubclass(sub, real) if real else type.__subclasscheck__(cls, sub)


class _FrozenDateTime(_RealDateTime, metaclass=_FrozenMeta):
    # its constructors give real datetimes (``isinstance`` holds through _FrozenMeta), not Self
    _real = _RealDateTime

    @classmethod
    def now(cls, tz: _dt.tzinfo | None = None) -> _dt.datetime:  # type: ignore[override]
        return _RealDateTime.fromtimestamp(_Patches.clock.time(), tz)

    @classmethod
    def utcnow(cls) -> _dt.datetime:  # type: ignore[override]
        return _RealDateTime.fromtimestamp(_Patches.clock.time(), _dt.UTC).replace(tzinfo=None)

    @classmethod
    def today(cls) -> _dt.datetime:  # type: ignore[override]
        return _RealDateTime.fromtimestamp(_Patches.clock.time())


class _FrozenDate(_RealDate, metaclass=_FrozenMeta):
    # its constructor gives real dates (``isinstance`` holds through _FrozenMeta), not Self
    _real = _RealDate

    @classmethod
    def today(cls) -> _dt.date:  # type: ignore[override]
        return _RealDate.fromtimestamp(_Patches.clock.time())


def _install_patches() -> None:
    os.environ["TZ"] = "UTC"
    if hasattr(time, "tzset"):
        time.tzset()

    def clock() -> float:
        return _Patches.clock.time()

    time.time = clock
    time.time_ns = lambda: int(clock() * 1_000_000_000)
    time.gmtime = lambda secs=None: _real_gmtime(clock() if secs is None else secs)
    time.localtime = lambda secs=None: _real_localtime(clock() if secs is None else secs)
    time.ctime = lambda secs=None: time.asctime(_real_localtime(clock() if secs is None else secs))
    time.strftime = lambda fmt, t=None: _real_strftime(
        fmt, _real_localtime(clock()) if t is None else t
    )
    # the patch proper: the module's classes replaced (typeshed declares them fixed)
    _dt.datetime = _FrozenDateTime  # type: ignore[misc]
    _dt.date = _FrozenDate  # type: ignore[misc]
    sqlite3.register_adapter(_FrozenDateTime, lambda v: v.isoformat(" "))
    sqlite3.register_adapter(_FrozenDate, lambda v: v.isoformat())
    uuid.uuid4 = lambda: uuid.UUID(int=_Patches.uuids.getrandbits(128), version=4)
    uuid.uuid1 = lambda node=None, clock_seq=None: uuid.UUID(
        int=_Patches.uuids.getrandbits(128), version=1
    )
    _track_global_random()


# --------------------------------------------------------------------------- the database


def _dict_row(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> dict[str, Any]:
    return {d[0]: v for d, v in zip(cursor.description, row, strict=False)}


def _split_sql(script: str) -> list[str]:
    """Split a script into complete statements (string literals and triggers stay whole)."""
    out, buf = [], ""
    for part in script.split(";"):
        buf += part + ";"
        if sqlite3.complete_statement(buf):
            out.append(buf)
            buf = ""
    if buf[:-1].strip():
        out.append(buf)
    return out


class _Connection(sqlite3.Connection):
    """The connection environment code sees. Transactions belong to the executor: ``commit`` is a
    no-op, ``rollback`` undoes the current call, ``executescript`` runs statement by statement
    (the stdlib version would COMMIT first) and ``close`` is ignored."""

    def commit(self) -> None:
        pass

    def rollback(self) -> None:
        if self.in_transaction:
            executor = _CURRENT  # noqa: F821  (declared below; serving and nests set it)
            with executor.internal():
                sqlite3.Connection.execute(self, f"ROLLBACK TO {_SAVEPOINT}")

    def executescript(self, script: str) -> sqlite3.Cursor:
        cur = self.cursor()
        for statement in _split_sql(script):
            cur.execute(statement)
        return cur

    def close(self) -> None:
        pass


# --------------------------------------------------------------------------- the env object


class Env:
    """What each tool function receives as ``env``."""

    def __init__(
        self,
        db: sqlite3.Connection,
        seed: int,
        rng: random.Random,
        clock: Clock,
        ids: dict[str, int],
        workspace: str = "",
    ) -> None:
        self.db = db
        self.seed = seed
        self.rng = rng
        self.workspace = workspace or os.getcwd()
        """The sandbox's working folder (also the current directory): the only place it may
        write."""
        self._clock = clock
        self._ids = ids

    def new_id(self, prefix: str) -> str:
        """Next id for ``prefix``: ``prefix_0001``, ``prefix_0002``, ..."""
        n = self._ids.get(prefix, 0) + 1
        self._ids[prefix] = n
        return f"{prefix}_{n:04d}"

    def now(self) -> str:
        """The frozen clock as ISO-8601 UTC; each call advances it by one second."""
        return self._clock.now_iso()

    def error(self, code: str, message: str) -> ToolError:
        """A ToolError to raise."""
        return ToolError(code, message)


# --------------------------------------------------------------------------- the executor


def _load_engine(
    name: str = "engine.py", module_name: str = "envkernel_sandbox_engine"
) -> types.ModuleType | str:
    """engine.py (or workspace.py) beside this file (stdlib only), loaded at import: before main()
    confines the sandbox, while this folder is still readable. A string says why it could not be
    loaded."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), name)
    try:
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None  # a .py path always has a loader
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module
    except Exception as exc:
        return f"{path}: {type(exc).__name__}: {exc}"


def _plain(v: object, depth: int = 0) -> bool:
    """True for data a deep copy restores exactly: numbers, strings, None and lists, tuples, sets
    and dicts of them."""
    if v is None or isinstance(v, (bool, int, float, str, bytes)):
        return True
    if depth > 50:
        return False
    if isinstance(v, dict):
        return all(_plain(k, depth + 1) and _plain(x, depth + 1) for k, x in v.items())
    if isinstance(v, (list, tuple, set, frozenset)):
        return all(_plain(x, depth + 1) for x in v)
    return False


def _made_by_env(v: object, depth: int = 0) -> bool:
    """True when ``v`` is, or holds, an object of a class env.py defined (its module is ``env``)."""
    if getattr(type(v), "__module__", None) == "env":
        return True
    if depth > 50:
        return False
    if isinstance(v, dict):
        return any(_made_by_env(x, depth + 1) for x in v.values())
    if isinstance(v, (list, tuple, set, frozenset)):
        return any(_made_by_env(x, depth + 1) for x in v)
    return False


def _env_module() -> types.ModuleType:
    """A new, empty ``env`` module for env.py (or a workspace's app code) to run in, with
    ``ToolError`` in it."""
    module = types.ModuleType("env")
    module.__file__ = ENV_FILENAME
    vars(module)["ToolError"] = ToolError
    return module


_UNCOPYABLE = "uncopyable"
"""Marks a snapshot whose env.py globals could not be copied (see :meth:`Executor._globals`)."""

_ENGINE = _load_engine()
_WORKSPACE_KIND = _load_engine(
    "workspace.py", "envkernel_sandbox_workspace"
)  # workspace environments


class _LoadPlan:
    """A ``load`` request read and checked: the env's source, seed, timeout and declared tools,
    and the resource model or workspace its behaviour names (either or neither)."""

    def __init__(self, env: dict[str, Any], seed: int, timeout: float) -> None:
        self.env, self.seed, self.timeout = env, seed, timeout
        self.source = ""
        self.model: Any = None
        self.workspace: Any = None
        tools = env.get("tools") or []
        self.declared: list[str] = [
            t["name"] for t in tools if isinstance(t, dict) and isinstance(t.get("name"), str)
        ]

    @classmethod
    def read(cls, req: Request) -> _LoadPlan:
        """Check a ``load`` request (a ``bad_request`` or ``unsupported`` failure if wrong)."""
        env = req.get("env")
        if not isinstance(env, dict):
            raise _Failure("bad_request", "'load' needs 'env': an EnvSpec object")
        try:
            seed = int(req.get("seed", 0) or 0)
        except (TypeError, ValueError):
            raise _Failure("bad_request", "'seed' must be an integer") from None
        plan = cls(env, seed, 0.0)
        behaviour: Any = env.get("behaviour")  # JSON, checked here
        kind = behaviour.get("kind") if isinstance(behaviour, dict) else None
        if kind == "workspace":  # a folder tree with claw tools, run by workspace.py
            _need(_WORKSPACE_KIND, "workspace behaviour needs workspace.py")
            if not _WORKSPACE[0]:
                raise _Failure(
                    "load_failed",
                    "a workspace environment needs a working folder: start the executor with "
                    "--workdir",
                )
            plan.workspace = behaviour
        elif kind == "model":  # a resource model, run by engine.py (loaded beside this file)
            _need(_ENGINE, "model behaviour needs the resource-model engine")
            plan.model = behaviour.get("model")
        elif kind != "code" or not isinstance(behaviour.get("source"), str):
            raise _Failure(
                "bad_request",
                "env.behaviour must be {'kind': 'code', 'source': '...'} or {'kind': 'model', ...}",
            )
        else:
            plan.source = behaviour["source"]
        plan.timeout = _timeout(req.get("timeout"), DEFAULT_LOAD_TIMEOUT)
        return plan


def _need(module: Any, what: str) -> None:
    """An ``unsupported`` failure if a helper module beside this file did not load (``module``
    is then the reason, a string)."""
    if isinstance(module, str):
        raise _Failure("unsupported", f"{what}, which did not load: {module}")


def _failed(template: str, keep_failures: bool = False) -> Callable[[BaseException], _Failure]:
    """How a load step's exception is reported: ``template`` filled with ``type``, ``exc`` and
    ``described``; with ``keep_failures`` a step's own ``_Failure`` passes as it is."""

    def failure(exc: BaseException) -> _Failure:
        if keep_failures and isinstance(exc, _Failure):
            return exc
        text = template.format(type=type(exc).__name__, exc=exc, described=_describe(exc))
        return _Failure("load_failed", text)

    return failure


def _load_step(step: Callable[[], None], fails: Callable[[BaseException], _Failure]) -> None:
    """Run one step of a load; a deadline passes through, any other exception is a failure."""
    try:
        step()
    except _Deadline:
        raise
    except BaseException as exc:
        raise fails(exc) from None


class Executor:
    """Holds one loaded environment and answers requests."""

    def __init__(self, max_response: int = DEFAULT_MAX_RESPONSE) -> None:
        self.max_response = max_response
        self.conn: _Connection | None = None
        self.env: Env | None = None
        self.module: types.ModuleType | None = None
        self.functions: dict[str, Callable[..., Any]] = {}
        self.signatures: dict[str, inspect.Signature] = {}
        # (tool, argument names) -> what is wrong with them ("" for nothing)
        self.checked: dict[tuple[str, ...], str] = {}
        self.declared: list[str] = []
        self.rng: random.Random = _TrackedRandom(0)
        self.clock = Clock()
        self.ids: dict[str, int] = {}
        self.snapshots: dict[str, Snapshot] = {}
        self.snapshot_count = 0
        self.workspace_kind = False
        self.closing = False
        self.direct_calls = 0
        self.code: types.CodeType | None = None
        """The compiled env.py of a code environment (None for a resource model or a workspace): a
        restore runs it again."""
        self.load_counters = self._counters()
        self.load_timeout = DEFAULT_LOAD_TIMEOUT
        self.module_calls = 0
        """Calls that succeeded since the module was made (at load or restore): 0 means its globals
        are as loaded."""
        """Calls that succeeded over the direct lane since the last load or restore (see
        :func:`_serve_connection`)."""
        self._phase = "idle"  # idle | seed | call | internal
        self._deadline_at: float | None = None
        self._armed = False
        signal.signal(signal.SIGALRM, self._on_alarm)

    # ----------------------------------------------------------------- plumbing

    def handle_line(self, line: bytes | str) -> bytes:
        """Answer one request line with one response line (never raises)."""
        try:
            try:
                req = json.loads(line)
            except (ValueError, UnicodeDecodeError) as exc:
                return self._encode(_err("bad_request", f"request is not valid JSON: {exc}"))
            if not isinstance(req, dict):
                return self._encode(
                    _err("bad_request", "request must be a JSON object with an 'op'")
                )
            try:
                return self.handle(req)
            except _Failure as f:
                return self._encode(_err(f.code, f.message))
        except BaseException as exc:
            self._disarm()
            return self._encode(_err("internal", f"executor error: {type(exc).__name__}: {exc}"))

    def handle(self, req: Request) -> bytes:
        op = req.get("op")
        if op == "call":
            return self.op_call(req)
        if op == "load":
            return self._encode(self.op_load(req))
        if op == "snapshot":
            return self._encode(self.op_snapshot())
        if op == "restore":
            return self._encode(self.op_restore(req))
        if op == "dump":
            return self._encode(_ok(self.dump()), sanitize=True)
        if op == "patch":
            return self._encode(self.op_patch(req))
        if op == "close":
            self.closing = True
            return self._encode(_ok())
        if op == "ping":
            return self._encode(
                _ok(
                    {
                        "protocol": PROTOCOL,
                        "loaded": self.module is not None,
                        "confinement": CONFINEMENT,
                    }
                )
            )
        return self._encode(
            _err(
                "bad_request",
                f"unknown op {op!r}; expected load, call, snapshot, restore, dump, patch or close",
            )
        )

    def _encode(self, resp: Reply, sanitize: bool = False) -> bytes:
        if sanitize:
            resp = _jsonable(resp)
        data = (
            json.dumps(resp, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()
            + b"\n"
        )
        if len(data) > self.max_response:
            data = self._encode(
                _err(
                    "too_large",
                    f"response of {len(data)} bytes exceeds the {self.max_response}-byte limit",
                )
            )
        return data

    def _on_alarm(self, signum: int, frame: types.FrameType | None) -> None:
        if self._armed:
            self._armed = False
            raise _Deadline()

    def _arm(self, timeout: float) -> None:
        self._deadline_at = _real_monotonic() + timeout
        self._armed = True
        signal.setitimer(signal.ITIMER_REAL, timeout)

    def _disarm(self) -> None:
        self._armed = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        self._deadline_at = None

    def _progress(self) -> int:
        # Lets a long SQLite statement be interrupted at the deadline (SIGALRM only runs between
        # Python bytecodes, not inside one C call).
        d = self._deadline_at
        return 1 if d is not None and _real_monotonic() > d else 0

    def _authorize(
        self,
        action: int,
        arg1: str | None,
        arg2: str | None,
        dbname: str | None,
        source: str | None,
    ) -> int:
        if self._phase == "internal":  # the executor's own statements (restore uses ATTACH)
            return sqlite3.SQLITE_OK
        if action in (sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH):
            return sqlite3.SQLITE_DENY
        if self._phase == "call" and action in (
            sqlite3.SQLITE_TRANSACTION,
            sqlite3.SQLITE_SAVEPOINT,
        ):
            return sqlite3.SQLITE_DENY
        return sqlite3.SQLITE_OK

    def internal(self) -> _Phase:
        return _Phase(self, "internal")

    def _sql(self, statement: str) -> None:
        with self.internal():
            sqlite3.Connection.execute(self.db, statement)

    @property
    def db(self) -> _Connection:
        """The loaded environment's database (after a load: the ops check
        :meth:`_require_loaded`)."""
        assert self.conn is not None, "no environment is loaded"
        return self.conn

    def _require_loaded(self) -> None:
        if self.module is None or self.conn is None:
            raise _Failure("not_loaded", "no environment is loaded; send a 'load' request first")

    def _counters(self) -> Counters:
        """The ids, the clock and the three generators' states (env.rng, ``random``'s, uuid's); a
        generator's state is copied only when it moved since it was last taken (see
        :class:`_TrackedRandom`)."""
        return (
            dict(self.ids),
            self.clock.get(),
            _take(self.rng),
            _take(random._inst),
            _take(_Patches.uuids),
        )

    def _set_counters(self, state: Counters) -> None:
        ids, clock, rng, glob, uuids = state
        self.ids.clear()
        self.ids.update(ids)
        self.clock.set(clock)
        _put(self.rng, rng)
        _put(random._inst, glob)
        _put(_Patches.uuids, uuids)

    # ----------------------------------------------------------------- load

    def op_load(self, req: Request) -> Reply:
        self.direct_calls = 0
        plan = _LoadPlan.read(req)
        self.module = None
        self.code = None
        self.module_calls = 0
        conn = self._fresh_state(req, plan)
        module = _env_module()
        source = plan.source
        linecache.cache[ENV_FILENAME] = (len(source), None, source.splitlines(True), ENV_FILENAME)
        self._phase = "seed"
        try:
            self._arm(plan.timeout)
            try:
                for step, fails in self._load_steps(plan, module):
                    _load_step(step, fails)
            finally:
                self._disarm()
        except _Deadline:
            raise _Failure("load_failed", f"loading took longer than {plan.timeout:g} s") from None
        finally:
            self._phase = "idle"
        if conn.in_transaction:  # a seed script that left a transaction open
            self._sql("COMMIT")
        return self._publish(module, plan)

    def _fresh_state(self, req: Request, plan: _LoadPlan) -> _Connection:
        """A new database, generators, clock and ids for the environment ``plan`` loads."""
        self.conn = conn = sqlite3.connect(
            ":memory:", isolation_level=None, check_same_thread=False, factory=_Connection
        )
        conn.row_factory = _dict_row
        conn.set_authorizer(self._authorize)
        conn.set_progress_handler(self._progress, _PROGRESS_STEPS)
        seed = plan.seed
        self.rng = _TrackedRandom(seed)
        random.seed(seed)
        _Patches.uuids.seed(f"uuid:{seed}")
        clock = req.get("clock") or plan.env.get("clock") or DEFAULT_CLOCK
        self.clock = _Patches.clock = Clock(clock)
        self.ids = {}
        self.snapshots.clear()
        self.env = Env(conn, seed, self.rng, self.clock, self.ids, _WORKSPACE[0])
        return conn

    def _load_steps(
        self, plan: _LoadPlan, module: types.ModuleType
    ) -> list[tuple[Callable[[], None], Callable[[BaseException], _Failure]]]:
        """What a load runs, in order, each with the failure it reports: the seed SQL, env.py,
        then the resource model or the workspace (if the behaviour is one)."""
        conn = self.db

        def seed_sql() -> None:
            sqlite3.Connection.executescript(conn, plan.env.get("seed_sql") or "")

        def env_py() -> None:
            code = compile(plan.source, ENV_FILENAME, "exec")
            self.code = code if plan.source.strip() else None
            # what a restore runs env.py again with
            self.load_counters, self.load_timeout = self._counters(), plan.timeout
            sys.modules["env"] = module
            exec(code, module.__dict__)

        def model() -> None:  # tables, seed rows (parameterized) and one closure per tool
            assert not isinstance(_ENGINE, str)  # checked when the behaviour was read
            _ENGINE.install(module, plan.model, self.env, ToolError)

        def workspace() -> None:
            assert not isinstance(_WORKSPACE_KIND, str)  # checked as above
            loader = self._app_loader(module)
            _WORKSPACE_KIND.install(module, plan.workspace, self.env, ToolError, _spawned, loader)

        steps = [
            (seed_sql, _failed("seed_sql failed: {type}: {exc}")),
            (env_py, _failed("env.py failed to load: {described}")),
        ]
        if plan.model is not None:
            steps.append((model, _failed("the resource model failed to load: {type}: {exc}")))
        if plan.workspace is not None:
            steps.append((workspace, _failed("the workspace failed to load: {described}", True)))
        return steps

    def _publish(self, module: types.ModuleType, plan: _LoadPlan) -> Reply:
        """Make the loaded module's public functions the tools (the declared ones, if any)."""
        public = {
            name: fn
            for name, fn in vars(module).items()
            if inspect.isfunction(fn)
            and not name.startswith("_")
            and getattr(fn, "__module__", None) == "env"
        }
        names = plan.declared if plan.declared else sorted(public)
        self.functions = {n: public[n] for n in names if n in public}
        self.signatures = {}
        self.checked = {}
        for n, fn in self.functions.items():
            try:
                self.signatures[n] = inspect.signature(fn)
            except (TypeError, ValueError):
                pass
        self.declared = names
        self.module = module
        self.workspace_kind = plan.workspace is not None
        self.snapshot_count = 0
        missing = [n for n in names if n not in self.functions]
        return _ok(
            {
                "protocol": PROTOCOL,
                "tools": sorted(self.functions),
                "missing": missing,
                "confinement": CONFINEMENT,
            }
        )

    @staticmethod
    def _app_loader(module: types.ModuleType) -> Callable[[str], None]:
        """Load a workspace's app code in a namespace of its own (so the tools ``list`` and ``glob``
        never shadow builtins in it) and copy its public functions into ``module``."""

        def load(source: str) -> None:
            app = _env_module()
            linecache.cache[ENV_FILENAME] = (
                len(source),
                None,
                source.splitlines(True),
                ENV_FILENAME,
            )
            try:
                exec(compile(source, ENV_FILENAME, "exec"), app.__dict__)
            except _Deadline:
                raise
            except BaseException as exc:
                raise _Failure(
                    "load_failed", f"the workspace's app code failed to load: {_describe(exc)}"
                ) from None
            for name, fn in vars(app).items():
                if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == "env":
                    setattr(module, name, fn)

        return load

    # ----------------------------------------------------------------- call

    def op_call(self, req: Request) -> bytes:
        self._require_loaded()
        tool, fn, args = self._callable(req)
        timeout = _timeout(req.get("timeout"), DEFAULT_CALL_TIMEOUT)
        saved = self._counters()
        # a workspace's tools check before they write, so a failed call leaves the tree as it was:
        # no copy per call
        files = None if self.workspace_kind else _call_capture(_WORKSPACE[0])
        self._phase = "internal"
        try:
            sqlite3.Connection.execute(self.db, _SAVEPOINT_SQL)
        finally:
            self._phase = "idle"
        data, failure = self._run_tool(tool, fn, args, timeout)
        _Forks.reap()
        if failure is None:
            failure = self._release(tool)
            if failure is None:
                self.module_calls += 1
                return data
        self._undo_call(saved, files, failure)
        return self._encode(failure)

    def _callable(self, req: Request) -> tuple[str, Callable[..., Any], dict[str, Any]]:
        """The tool a ``call`` names, its function and its checked arguments."""
        tool = req.get("tool")
        args = req.get("arguments")
        if args is None:
            args = {}
        if not isinstance(tool, str):
            raise _Failure("bad_request", "'call' needs 'tool': the tool name")
        fn = self.functions.get(tool)
        if fn is None:
            if tool in self.declared:
                raise _Failure(
                    "unknown_tool",
                    f"tool {tool!r} is declared but env.py does not define a function for it",
                )
            known = ", ".join(sorted(self.functions)) or "none"
            raise _Failure("unknown_tool", f"unknown tool {tool!r}; the tools are: {known}")
        if not isinstance(args, dict):
            raise _Failure(
                "invalid_arguments",
                f"arguments of {tool!r} must be a JSON object, got {type(args).__name__}",
            )
        problem = self._argument_problem(tool, args)
        if problem:
            raise _Failure("invalid_arguments", f"{tool}: {problem}")
        return tool, fn, args

    def _argument_problem(self, tool: str, args: dict[str, Any]) -> str:
        """What is wrong with ``args`` for ``tool`` ('' if nothing), kept per (tool, names): the
        check depends on the argument names only."""
        sig = self.signatures.get(tool)
        if sig is None:
            return ""
        key = (tool, *args)
        problem = self.checked.get(key)
        if problem is None:
            problem = _argument_problem(sig, args)
            if len(self.checked) < 4096:
                self.checked[key] = problem
        return problem

    def _run_tool(
        self, tool: str, fn: Callable[..., Any], args: dict[str, Any], timeout: float
    ) -> tuple[bytes, Reply | None]:
        """Call the tool under its deadline: its JSON reply line, or the failure reply."""
        _Forks.started = False
        try:
            self._phase = "call"
            self._arm(timeout)
            try:
                value = fn(self.env, **args)
            finally:
                _Forks.guard()
                self._disarm()
                self._phase = "idle"
        except BaseException as exc:
            _Forks.guard()
            self._disarm()
            self._phase = "idle"
            return b"", self._failure(tool, exc, timeout)
        try:
            return self._reply_line(tool, value)
        except BaseException as exc:  # a value whose encoding raised (MemoryError, ...)
            return b"", self._failure(tool, exc, timeout)

    def _reply_line(self, tool: str, value: Any) -> tuple[bytes, Reply | None]:
        """A tool's value as its reply line, or the failure if it is not JSON or too large."""
        try:
            data = (
                json.dumps(
                    {"ok": True, "value": value},
                    ensure_ascii=False,
                    allow_nan=False,
                    separators=(",", ":"),
                ).encode()
                + b"\n"
            )
        except (TypeError, ValueError, RecursionError) as exc:
            return b"", _err(
                "bad_return",
                f"{tool} returned a value that is not JSON ({type(exc).__name__}: {exc})",
            )
        if len(data) > self.max_response:
            return b"", _err(
                "too_large",
                f"{tool} returned {len(data)} bytes, more than the {self.max_response}-byte limit",
            )
        return data, None

    def _release(self, tool: str) -> Reply | None:
        """Keep the call's changes (release its savepoint), or the failure if that fails."""
        self._phase = "internal"
        try:
            sqlite3.Connection.execute(self.db, _RELEASE_SQL)
        except sqlite3.Error as exc:
            return _err("tool_crashed", f"{tool} left the database in a bad state: {exc}")
        finally:
            self._phase = "idle"
        return None

    def _undo_call(self, saved: Counters, files: Files | None, failure: Reply) -> None:
        """Take a failed call's changes back: the database, the counters, the working folder."""
        self._rollback()
        self._set_counters(saved)
        if files is not None:
            try:
                _workspace_restore(_WORKSPACE[0], files)
            except OSError as exc:
                failure["error"]["message"] += (
                    f" (and its changes to the working folder could not be undone: {exc})"
                )

    def _rollback(self) -> None:
        if self.conn is not None and self.conn.in_transaction:
            try:
                self._sql(f"ROLLBACK TO {_SAVEPOINT}")
                self._sql(f"RELEASE {_SAVEPOINT}")
            except sqlite3.Error:
                self._sql("ROLLBACK")

    def _failure(self, tool: str, exc: BaseException, timeout: float) -> Reply:
        if isinstance(exc, ToolError):
            if (
                exc.code == "crashed"
            ):  # the host's code for a dead executor (infrastructure), never the env's
                return _err(
                    "tool_crashed", f"the environment raised ToolError('crashed'): {exc.message}"
                )
            return _err(exc.code or "error", exc.message)
        if isinstance(exc, _Deadline) or (
            isinstance(exc, sqlite3.OperationalError) and "interrupt" in str(exc)
        ):
            return _err(
                "timeout",
                f"{tool} did not finish within {timeout:g} s; the call was stopped and had "
                "no effect",
            )
        if isinstance(exc, SystemExit):
            return _err(
                "tool_crashed", f"{tool} tried to exit the executor (SystemExit: {exc.code})"
            )
        return _err("tool_crashed", f"{tool} raised {_describe(exc)}")

    # ----------------------------------------------------------------- snapshot / restore / dump

    def op_snapshot(self) -> Reply:
        self._require_loaded()
        try:
            files = _workspace_capture(
                _WORKSPACE[0], _SNAPSHOT_WORKSPACE_BYTES, _SNAPSHOT_WORKSPACE_ENTRIES
            )
        except OSError as exc:
            raise _Failure("snapshot_failed", f"cannot read the working folder: {exc}") from None
        if files is None:
            raise _Failure(
                "too_large",
                f"the working folder holds more than {_SNAPSHOT_WORKSPACE_BYTES} bytes or "
                f"{_SNAPSHOT_WORKSPACE_ENTRIES} "
                "entries; it cannot be snapshotted",
            )
        self.snapshot_count += 1
        handle = f"s{self.snapshot_count}"
        self.snapshots[handle] = (self._serialize(), self._counters(), files, self._globals())
        resp = _ok(handle)
        resp["direct"] = (
            self.direct_calls
        )  # calls since the last load or restore that the runner's log lacks
        return resp

    def op_restore(self, req: Request) -> Reply:
        self._require_loaded()
        self.direct_calls = 0
        handle = req.get("snapshot")
        snap = self.snapshots.get(handle) if isinstance(handle, str) else None
        if snap is None or not isinstance(handle, str):
            raise _Failure("unknown_snapshot", f"no snapshot {handle!r} in this sandbox")
        data, counters, files, globs = snap
        if (
            self.code is not None
        ):  # env.py's own module state (globals, class attributes, closures) comes back too
            self._fresh_module(handle, globs)
        try:
            _workspace_restore(_WORKSPACE[0], files)
        except OSError as exc:
            raise _Failure("restore_failed", f"cannot put the working folder back: {exc}") from None
        self._deserialize(data)
        self._set_counters(counters)
        return _ok()

    def _globals(self) -> Globals:
        """What a snapshot keeps of env.py's module: None when nothing can have changed it since it
        was made (no call succeeded), else a deep copy of its data globals (``_UNCOPYABLE`` when
        they cannot be copied)."""
        if self.code is None or self.module_calls == 0 or self.module is None:
            return None
        data = {}
        for k, v in vars(self.module).items():
            if (
                k.startswith("__")
                or k == "ToolError"
                or isinstance(v, (types.ModuleType, types.FunctionType, type))
            ):
                continue
            if not _plain(v):
                if _made_by_env(
                    v
                ):  # an instance of env.py's own class: a copy would keep the old module's class
                    return (
                        _UNCOPYABLE,
                        f"global {k!r} holds a {type(v).__name__} object of env.py's own",
                    )
                try:
                    v = copy.deepcopy(v)  # a lock, a regex, an itertools.count ...
                except Exception:
                    continue
            else:
                v = copy.deepcopy(v)
            data[k] = v
        return data

    def _fresh_module(self, handle: str, globs: Globals) -> None:
        """Run env.py again in a new module (its globals as loaded), then put back the data globals
        the snapshot copied: state a tool kept outside the database does not leak from one episode
        to the next."""
        if isinstance(globs, tuple):
            raise _Failure(
                "restore_failed",
                f"snapshot {handle!r} was taken after calls changed env.py's globals, and they "
                f"could not be copied ({globs[1]}); open a new sandbox instead",
            )
        assert self.code is not None and self.module is not None  # a loaded code environment
        module = _env_module()
        self._phase = "seed"
        self._set_counters(
            self.load_counters
        )  # module-level random(), uuid4() and time() give what they gave at load
        try:
            self._arm(self.load_timeout)
            try:
                sys.modules["env"] = module
                exec(self.code, module.__dict__)
            finally:
                self._disarm()
        except BaseException as exc:
            sys.modules["env"] = self.module
            raise _Failure(
                "restore_failed", f"env.py failed to run again for the restore: {_describe(exc)}"
            ) from None
        finally:
            self._phase = "idle"
        if globs:
            module.__dict__.update(copy.deepcopy(globs))
        self.functions = {
            n: fn
            for n in self.functions
            if inspect.isfunction(fn := getattr(module, n, None)) and fn.__module__ == "env"
        }
        self.module = module
        self.module_calls = 0 if not globs else 1

    def op_patch(self, req: Request) -> Reply:
        """Insert rows into the state before an episode (a task's planted rows): all of them or,
        when one does not fit (no such table or column, a duplicate key), none, with a clear
        error."""
        self._require_loaded()
        items = req.get("rows")
        if not isinstance(items, list):
            raise _Failure(
                "bad_request",
                "'patch' needs 'rows': a list of {\"table\": ..., \"row\": {column: value}}",
            )
        conn = self.db
        with self.internal():
            tables = {
                r["name"]
                for r in sqlite3.Connection.execute(
                    conn, "SELECT name FROM sqlite_master WHERE type = 'table'"
                ).fetchall()
            }
            sqlite3.Connection.execute(conn, "SAVEPOINT envk_patch")
            try:
                for n, item in enumerate(items):
                    table, row = (
                        (item.get("table"), item.get("row"))
                        if isinstance(item, dict)
                        else (None, None)
                    )
                    if not isinstance(table, str) or not isinstance(row, dict) or not row:
                        raise _Failure(
                            "bad_request",
                            f'patch row {n} must be {{"table": name, "row": {{column: value, '
                            f"...}}}}",
                        )
                    if table not in tables:
                        raise _Failure(
                            "invalid_patch",
                            f"patch row {n}: no table {table!r}; the tables are: "
                            f"{', '.join(sorted(tables))}",
                        )
                    cols = {
                        c["name"]
                        for c in sqlite3.Connection.execute(
                            conn, f"PRAGMA main.table_info({_quote(table)})"
                        ).fetchall()
                    }
                    unknown = sorted(set(row) - cols)
                    if unknown:
                        raise _Failure(
                            "invalid_patch",
                            f"patch row {n}: table {table!r} has no column "
                            f"{', '.join(map(repr, unknown))}",
                        )
                    values = [
                        json.dumps(v) if isinstance(v, (dict, list)) else v for v in row.values()
                    ]
                    try:
                        sqlite3.Connection.execute(
                            conn,
                            f"INSERT INTO {_quote(table)} ({', '.join(map(_quote, row))}) "
                            f"VALUES ({', '.join('?' * len(row))})",
                            values,
                        )
                    except sqlite3.Error as exc:
                        raise _Failure(
                            "invalid_patch", f"patch row {n} does not fit table {table!r}: {exc}"
                        ) from None
            except BaseException:
                sqlite3.Connection.execute(conn, "ROLLBACK TO envk_patch")
                sqlite3.Connection.execute(conn, "RELEASE envk_patch")
                raise
            sqlite3.Connection.execute(conn, "RELEASE envk_patch")
        return _ok(len(items))

    def _serialize(self) -> bytes | sqlite3.Connection:
        if hasattr(self.db, "serialize"):
            try:
                return self.db.serialize()
            except (
                sqlite3.OperationalError
            ):  # an empty database (a workspace without an app) has no page to serialize
                pass
        copy = sqlite3.connect(":memory:", check_same_thread=False)
        with self.internal():
            self.db.backup(copy)
        return copy

    def _deserialize(self, data: bytes | sqlite3.Connection) -> None:
        with self.internal():
            if isinstance(data, bytes):
                self.db.deserialize(data)
            else:
                data.backup(self.db)

    def dump(self) -> dict[str, Any]:
        self._require_loaded()
        conn = self.db
        with self.internal():
            try:
                rows = sqlite3.Connection.execute(conn, "PRAGMA main.table_list").fetchall()
                names = sorted(
                    r["name"]
                    for r in rows
                    if r["type"] == "table" and not r["name"].startswith("sqlite_")
                )
                without_rowid = {r["name"] for r in rows if r.get("wr")}
            except sqlite3.Error:
                rows = sqlite3.Connection.execute(
                    conn,
                    "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT "
                    "LIKE 'sqlite_%' ORDER BY name",
                ).fetchall()
                names = [r["name"] for r in rows]
                without_rowid = {
                    r["name"] for r in rows if "WITHOUT ROWID" in (r["sql"] or "").upper()
                }
            out = {}
            for name in names:
                q = _quote(name)
                cols = sqlite3.Connection.execute(conn, f"PRAGMA main.table_info({q})").fetchall()
                pk = [
                    c["name"] for c in sorted((c for c in cols if c["pk"]), key=lambda c: c["pk"])
                ]
                order = (
                    ", ".join(_quote(c) for c in pk)
                    if pk
                    else ("rowid" if name not in without_rowid else "1")
                )
                out[name] = sqlite3.Connection.execute(
                    conn, f"SELECT * FROM {q} ORDER BY {order}"
                ).fetchall()
        if self.workspace_kind:
            assert not isinstance(_WORKSPACE_KIND, str)  # it loaded the workspace
            out[_WORKSPACE_KIND.TABLE] = (
                _WORKSPACE_KIND.diff()
            )  # files added, changed, removed since load
        return out


class _Phase:
    def __init__(self, executor: Executor, phase: str) -> None:
        self.executor = executor
        self.phase = phase

    def __enter__(self) -> None:
        self.previous = self.executor._phase
        self.executor._phase = self.phase

    def __exit__(self, *exc: object) -> None:
        self.executor._phase = self.previous


_CURRENT: Executor  # set in main()


# --------------------------------------------------------------------------- the working folder

_WORKSPACE = [""]  # set in main(): the sandbox's working folder
_CALL_WORKSPACE_BYTES = 1 << 20
_CALL_WORKSPACE_ENTRIES = 64
_SNAPSHOT_WORKSPACE_BYTES = 64 << 20
_SNAPSHOT_WORKSPACE_ENTRIES = 100_000


def _workspace_scan(
    root: str, max_entries: int | None = None, max_bytes: int | None = None
) -> Files | None:
    """``{relative path: (kind, mode, size, mtime_ns, link target)}`` of everything under ``root``
    (symlinks are not followed; fifos and sockets are ignored), or None as soon as it holds more
    than ``max_entries`` entries or ``max_bytes`` bytes of files."""
    out: Files = {}
    total = 0
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(root, rel) if rel else root) as it:
            for e in it:
                r = os.path.join(rel, e.name) if rel else e.name
                st = e.stat(follow_symlinks=False)
                if e.is_symlink():
                    out[r] = ("l", 0, 0, 0, os.readlink(e.path))
                elif e.is_dir(follow_symlinks=False):
                    out[r] = ("d", st.st_mode & 0o7777, 0, 0, None)
                    stack.append(r)
                elif e.is_file(follow_symlinks=False):
                    out[r] = ("f", st.st_mode & 0o7777, st.st_size, st.st_mtime_ns, None)
                    total += st.st_size
                else:
                    continue
                if (max_entries is not None and len(out) > max_entries) or (
                    max_bytes is not None and total > max_bytes
                ):
                    return None
    return out


_EMPTY_FOLDER: list[tuple[int, int, int, int, int, int] | None] = [None]
"""The working folder's (dev, inode, ctime, mtime, size, links) when a scan last found it empty and
its ctime was older than :data:`_RACY_NS` (see :func:`_call_capture`)."""
# coarser than any file-time granularity in use (1 s on ext4 with small inodes, 2 s on FAT)
_RACY_NS = 2_000_000_000


def _call_capture(root: str) -> Files | None:
    """What a call puts back if it fails: the working folder as :func:`_workspace_capture` gives it
    (small folders only), without scanning it when it is still the empty folder it was.

    Adding, removing or renaming an entry of a folder (or ``utime``, ``chmod`` on it) sets the
    folder's ctime to the current time, which nothing can set back; tmpfs also counts entries in its
    size. So a folder found empty whose (ctime, mtime, size, links) have not changed is still empty,
    provided its ctime was already older than the file-time granularity when it was found empty (a
    change in the same clock tick could keep the same ctime: "racy" as in git's index, so such a
    folder is scanned again; 2 s covers file systems that keep whole seconds). Processes that env
    code starts are killed when its call returns, and a change by a thread of env code sets the
    ctime like any other."""
    if not root:
        return {}
    try:
        st = os.stat(root)  # followed, as the scan follows it
    except OSError:
        return None
    key = (st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_nlink)
    if _EMPTY_FOLDER[0] == key:
        return {}
    files = _workspace_capture(root, _CALL_WORKSPACE_BYTES, _CALL_WORKSPACE_ENTRIES, quiet=True)
    _EMPTY_FOLDER[0] = key if files == {} and st.st_ctime_ns < _real_time_ns() - _RACY_NS else None
    return files


def _workspace_capture(
    root: str, max_bytes: int, max_entries: int, quiet: bool = False
) -> Files | None:
    """The working folder's content, or None when it holds more than ``max_bytes`` (or entries).
    Without a working folder (no ``--workdir``) there is nothing to capture."""
    if not root:
        return {}
    try:
        meta = _workspace_scan(root, max_entries, max_bytes)
        if meta is None:
            return None
        files = {}
        for r, m in meta.items():
            data = None
            if m[0] == "f":
                with open(os.path.join(root, r), "rb") as f:
                    data = f.read(max_bytes + 1)
            files[r] = (m, data)
        return files
    except OSError:
        if quiet:
            return None
        raise


def _workspace_restore(root: str, files: Files) -> None:
    """Make the working folder hold exactly ``files`` again (unchanged files are left alone)."""
    if not root:
        return
    current = _workspace_scan(root) or {}
    if not current and not files:
        return
    depth = lambda r: r.count(os.sep)  # noqa: E731
    kept = set()
    for r in sorted(current, key=depth, reverse=True):  # deepest first
        cur, want = current[r], files.get(r)
        same = (
            want is not None and want[0][0] == cur[0] and (cur[0] == "d" or want[0][1:] == cur[1:])
        )
        if same:
            kept.add(r)
            continue
        path = os.path.join(root, r)
        if cur[0] == "d":
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)
    for r in sorted(files, key=depth):  # shallowest first
        (kind, mode, _size, mtime, target), data = files[r]
        path = os.path.join(root, r)
        if kind == "d":
            if r not in kept:
                os.mkdir(path, 0o700)
            os.chmod(path, mode)
        elif r in kept:
            continue
        elif kind == "l":
            os.symlink(target, path)
        else:
            fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600
            )
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.chmod(path, mode)
            os.utime(path, ns=(mtime, mtime))


# --------------------------------------------------------------------------- processes started by
# env code


class _Forks:
    """Processes that environment code forks. A forked child never runs executor code (it exits
    when control comes back to the executor, and the protocol descriptors are closed in it), and
    every process a call started is killed when the call returns."""

    main_pid = os.getpid()
    forking = 0
    started = False
    children: set[int] = set()
    protocol_fds: list[int] = []
    own_uid = False  # True when this sandbox has a uid of its own: kill(-1) then reaches only it

    @staticmethod
    def guard() -> None:
        if os.getpid() != _Forks.main_pid:
            os._exit(0)

    @staticmethod
    def reap() -> None:
        """Kill every process the call started and reap them. With a uid of its own, one
        ``kill(-1)`` reaches them all (a process forking meanwhile cannot escape it) and, as their
        subreaper, the executor reaps them all; otherwise only its direct children are killed."""
        if not _Forks.started:
            return
        _Forks.started = False
        if _Forks.own_uid:
            try:
                os.kill(-1, signal.SIGKILL)  # every process of this uid but this one
            except OSError:
                pass
        for pid in _Forks.children:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        _Forks.children.clear()
        deadline = _real_monotonic() + 2.0
        while True:
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except OSError:  # ChildProcessError: none left
                return
            if pid == 0:
                if _real_monotonic() > deadline:
                    return
                time.sleep(0.0005)


_real_fork = os.fork


def _spawned(pid: int) -> None:
    """A workspace's ``exec`` started a process: kill what it leaves when the call returns."""
    _Forks.started = True


def _fork() -> int:
    pid = _real_fork()
    if pid > 0:
        _Forks.children.add(pid)
    return pid


def _after_fork_in_child() -> None:
    for fd in _Forks.protocol_fds:
        try:
            os.close(fd)
        except OSError:
            pass
    _Forks.protocol_fds = []
    _Forks.children = set()
    try:
        _set_parent_death_signal(_Forks.forking)  # dies with whoever forked it
    except Exception:
        pass


def _before_fork() -> None:
    _Forks.forking = os.getpid()


def _after_fork_in_parent() -> None:
    _Forks.started = True


def _install_fork_guards() -> None:
    os.fork = _fork
    os.register_at_fork(
        before=_before_fork,
        after_in_child=_after_fork_in_child,
        after_in_parent=_after_fork_in_parent,
    )


# --------------------------------------------------------------------------- helpers


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _timeout(value: Any, default: float) -> float:
    try:
        t = float(value) if value is not None else default
    except (TypeError, ValueError):
        raise _Failure(
            "bad_request", f"timeout must be a number of seconds, got {value!r}"
        ) from None
    if not t > 0:
        raise _Failure("bad_request", f"timeout must be positive, got {value!r}")
    return min(t, 86400.0)


def _argument_problem(sig: inspect.Signature, args: dict[str, Any]) -> str:
    """Why ``args`` do not fit ``def tool(env, ...)``: unexpected and missing names, or ""."""
    params = list(sig.parameters.values())[1:]
    kinds = inspect.Parameter
    named = [p for p in params if p.kind in (kinds.POSITIONAL_OR_KEYWORD, kinds.KEYWORD_ONLY)]
    problems = []
    if not any(p.kind == kinds.VAR_KEYWORD for p in params):
        known = {p.name for p in named}
        unexpected = [k for k in args if k not in known]
        if unexpected:
            problems.append("unexpected argument(s) " + ", ".join(map(repr, unexpected)))
    missing = [p.name for p in named if p.default is p.empty and p.name not in args]
    if missing:
        problems.append("missing required argument(s) " + ", ".join(map(repr, missing)))
    if not problems:
        try:
            sig.bind(None, **args)
        except TypeError as exc:
            problems.append(str(exc))
    if problems:
        accepted = (
            ", ".join(p.name if p.default is p.empty else f"{p.name}?" for p in named) or "none"
        )
        return "; ".join(problems) + f" (arguments: {accepted})"
    return ""


def _describe(exc: BaseException) -> str:
    """``Type: message (env.py line N in func: code)`` — the last frame inside env.py."""
    text = f"{type(exc).__name__}: {exc}"
    where = None
    tb = exc.__traceback__
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == ENV_FILENAME:
            line = linecache.getline(ENV_FILENAME, tb.tb_lineno).strip()
            where = f"env.py line {tb.tb_lineno} in {code.co_name}" + (f": {line}" if line else "")
        tb = tb.tb_next
    if where is None and isinstance(exc, SyntaxError) and exc.lineno:
        where = f"env.py line {exc.lineno}"
    return f"{text} ({where})" if where else text


def _jsonable(value: Any) -> Any:
    """Make a dump JSON-safe: bytes become hex text, non-finite floats become strings."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return str(value)
    return value


# --------------------------------------------------------------------------- libc

CONFINEMENT: dict[str, Any] = {}

_PR_SET_PDEATHSIG = 1


_LIBC: list[tuple[Any, Any]] = []


def _libc() -> tuple[Any, Any]:
    if _LIBC:
        return _LIBC[0]
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    ul = ctypes.c_ulong
    libc.prctl.argtypes = [ctypes.c_int, ul, ul, ul, ul]
    libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ul, ctypes.c_char_p]
    libc.unshare.argtypes = [ctypes.c_int]
    _LIBC.append((ctypes, libc))
    return ctypes, libc


def _set_parent_death_signal(parent: int) -> None:
    """SIGKILL this process when ``parent`` dies (so nothing outlives the runner)."""
    if not parent or not _LIBC:
        return
    ctypes, libc = _LIBC[0]
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(70)
