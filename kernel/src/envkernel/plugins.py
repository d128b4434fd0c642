"""Finding, selecting and loading plugins (entry points of the group ``envkernel``) with pluggy."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Any

from .errors import PluginError, RoleError
from .hookspecs import PROJECT, ROLE_HOOKS

if TYPE_CHECKING:
    import pluggy

PRESET_GROUP = "envkernel.presets"
"""Entry-point group where the top-level distribution declares the default preset."""

COMMANDS_GROUP = "envkernel.commands"
"""Entry-point group where a plugin names the top-level commands it adds: ``COMMAND = "PLUGIN"``
(PLUGIN: its name in the ``envkernel`` group). ``envkernel --help`` lists them without importing
the plugin; running one imports that plugin only."""


def _log(event: str, **kw: Any) -> None:
    import structlog  # here, not at import: a CLI that only lists plugins never pays for it

    structlog.get_logger("envkernel.plugins").error(event, **kw)


def plugin_manager() -> pluggy.PluginManager:
    """A fresh plugin manager with envkernel's hook specs (no plugins loaded)."""
    import pluggy

    from . import hookspecs

    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(hookspecs)
    if os.environ.get("ENVKERNEL_TRACE_PLUGINS"):
        pm.trace.root.setwriter(lambda s: print(s, end="", file=sys.stderr))
        pm.enable_tracing()
    return pm


@dataclass
class Component:
    """A registered component: one role played under one name by one plugin."""

    name: str
    role: str
    factory: Callable[..., Any]
    plugin: str

    @property
    def settings_type(self) -> type | None:
        """The component's settings Struct, if it takes settings."""
        return getattr(self.factory, "Settings", None)

    @property
    def sources(self) -> tuple[str, ...]:
        """Source kinds a synthesizer handles (default: its name)."""
        return tuple(getattr(self.factory, "sources", None) or (self.name,))


@dataclass
class PluginInfo:
    """An installed plugin, for ``envkernel plugins``."""

    name: str
    distribution: str
    version: str
    roles: list[str] = field(default_factory=list)
    components: list[str] = field(default_factory=list)
    default: bool = False
    error: str = ""
    summary: str = ""


@dataclass
class DeclaredCommand:
    """A top-level command a plugin declares in :data:`COMMANDS_GROUP`."""

    name: str
    plugins: list[str]
    help: str


def declared_commands() -> dict[str, DeclaredCommand]:
    """The commands installed plugins declare, by name, with their distribution's summary as help
    (read from metadata: nothing is imported)."""
    found: dict[str, DeclaredCommand] = {}
    for ep in entry_points(group=COMMANDS_GROUP):
        summary = (ep.dist.metadata["Summary"] or "") if ep.dist else ""
        got = found.setdefault(ep.name, DeclaredCommand(ep.name, [], summary))
        got.plugins.append(ep.value.strip())
    return found


def installed() -> dict[str, EntryPoint]:
    """Every installed plugin entry point, by name."""
    return {ep.name: ep for ep in entry_points(group=PROJECT)}


def default_preset() -> list[str]:
    """The default preset's plugin names (declared by the top-level distribution)."""
    names: list[str] = []
    for ep in entry_points(group=PRESET_GROUP, name="default"):
        names.extend(n.strip() for n in ep.value.split(",") if n.strip())
    return names


def resolve_selection(
    spec: str | None,
    available: dict[str, EntryPoint] | None = None,
    preset: list[str] | None = None,
) -> list[str]:
    """Turn ``a,b,c`` (a full list) or ``+x,-y`` (changes to the preset) into plugin names."""
    available = installed() if available is None else available
    preset = default_preset() if preset is None else preset
    changes, relative = _selection_items(spec)
    chosen = list(preset) if relative else []
    for op, name in changes:
        if name not in available:
            raise PluginError(
                f"unknown plugin {name!r}; installed plugins: "
                f"{', '.join(sorted(available)) or 'none'}"
            )
        if op == "+" and name not in chosen:
            chosen.append(name)
        elif op == "-" and name in chosen:
            chosen.remove(name)
    missing = [n for n in chosen if n not in available]
    if missing:
        raise PluginError(
            f"the default preset names plugins that are not installed: {', '.join(missing)}"
        )
    return chosen


def _selection_items(spec: str | None) -> tuple[list[tuple[str, str]], bool]:
    """A ``--plugins`` value as (``+`` or ``-``, name) changes, and whether they change the
    preset (every item signed) rather than list the plugins (none signed)."""
    items = [s.strip() for s in (spec or "").split(",") if s.strip()]
    signed = [s[0] in "+-" for s in items]
    relative = all(signed)
    if items and not relative and any(signed):
        raise PluginError(
            f"--plugins {spec!r} mixes a full list with +/- changes; use one or the other"
        )
    return [
        (s[0], s[1:]) if sign else ("+", s) for s, sign in zip(items, signed, strict=True)
    ], relative


class Registry:
    """The components of the loaded plugins, by name and by role."""

    def __init__(self) -> None:
        self.components: dict[str, Component] = {}
        self.broken: dict[str, str] = {}
        self.pm = plugin_manager()

    def by_role(self, role: str) -> list[Component]:
        """Components of ``role``, in load order."""
        return [c for c in self.components.values() if c.role == role]

    def get(self, name: str) -> Component:
        """The component called ``name``."""
        try:
            return self.components[name]
        except KeyError:
            raise PluginError(
                f"no component named {name!r}; loaded: {', '.join(sorted(self.components))}"
            ) from None


def load(names: list[str], *, strict: bool = False) -> Registry:
    """Load only the named plugins and collect their components.

    A plugin that fails to import or register is recorded in ``Registry.broken`` with the reason
    (and raised when ``strict``), so the run can go on with the others.
    """
    reg = Registry()
    loader = _Loader(reg, strict)
    available = installed()
    for name in names:
        ep = available.get(name)
        if ep is None:
            raise PluginError(
                f"unknown plugin {name!r}; installed plugins: "
                f"{', '.join(sorted(available)) or 'none'}"
            )
        loader.import_plugin(name, ep)
    import pluggy

    try:
        reg.pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(f"a plugin implements a hook envkernel does not have: {exc}") from None
    for role, hook_name in ROLE_HOOKS.items():
        hook = getattr(reg.pm.hook, hook_name)
        for impl in hook.get_hookimpls():  # registration order (pluggy calls them in reverse)
            if impl.plugin_name not in reg.broken:
                loader.register_role(role, hook_name, impl)
    return reg


class _Loader:
    """Fills a :class:`Registry`: imports plugins, runs their role hooks, and marks a plugin that
    fails broken (or raises, when ``strict``)."""

    def __init__(self, reg: Registry, strict: bool) -> None:
        self.reg, self.strict = reg, strict

    def import_plugin(self, name: str, ep: EntryPoint) -> None:
        """Import a plugin's module and register it with pluggy."""
        try:
            module = ep.load()
            self.reg.pm.register(module, name=name)
        except Exception as exc:  # a broken plugin must not take the kernel down
            reason = f"{type(exc).__name__}: {exc}"
            if self.strict:
                raise PluginError(
                    f"plugin {name!r} ({ep.value}) failed to load: {reason}"
                ) from None
            self.reg.broken[name] = reason
            _log("plugin failed to load; skipping it", plugin=name, error=reason)

    def register_role(self, role: str, hook_name: str, impl: Any) -> None:
        """Run one plugin's hook for ``role``: the components it registers, or none if it fails."""
        plugin = impl.plugin_name

        def register(cname: str, factory: Callable[..., Any]) -> None:
            self.add(cname, factory, role, plugin)

        try:
            impl.function(register=register)
        except PluginError as exc:
            if not isinstance(exc, RoleError):
                raise
            reason = str(exc)
        except Exception as exc:
            reason = f"{hook_name} raised {type(exc).__name__}: {exc}"
        else:
            return
        if self.strict:
            raise PluginError(f"plugin {plugin!r}: {reason}") from None
        reg = self.reg
        reg.broken[plugin] = reason
        for cname in [n for n, c in reg.components.items() if c.plugin == plugin]:
            del reg.components[cname]  # none of a broken plugin's components run
        _log("plugin failed to register; skipping it", plugin=plugin, error=reason)

    def add(self, cname: str, factory: Callable[..., Any], role: str, plugin: str) -> None:
        """One component, checked: a token name, not taken, a class with its role's methods."""
        from envkernel_schemas import is_token

        from .roles import missing_methods

        components = self.reg.components
        if not is_token(cname):
            raise PluginError(
                f"plugin {plugin!r} registered a component with a bad name "
                f"{cname!r} (letters, digits, - and _)"
            )
        if cname in components:
            other = components[cname].plugin
            raise PluginError(
                f"component name {cname!r} is registered by both {other!r} and {plugin!r}"
            )
        # other factories: checked when built
        missing = missing_methods(role, factory) if isinstance(factory, type) else []
        if missing:
            raise RoleError(
                f"component {cname!r} ({role}) has no method {', '.join(missing)}, "
                "which its role requires"
            )
        components[cname] = Component(cname, role, factory, plugin)


def describe_installed(*, check: bool = True) -> list[PluginInfo]:
    """Every installed plugin with its distribution, version, summary and preset membership, read
    from metadata; with ``check``, each is also loaded for its roles and components (or error)."""
    preset = set(default_preset())
    infos = []
    for name, ep in sorted(installed().items()):
        dist = ep.dist
        info = PluginInfo(
            name=name,
            distribution=dist.metadata["Name"] if dist else "",
            version=dist.version if dist else "",
            default=name in preset,
            summary=(dist.metadata["Summary"] or "") if dist else "",
        )
        if check:
            try:
                reg = load([name], strict=True)
                info.roles = sorted(
                    {c.role for c in reg.components.values()}, key=list(ROLE_HOOKS).index
                )
                info.components = sorted(reg.components)
            except PluginError as exc:
                info.error = str(exc)
        infos.append(info)
    return infos
