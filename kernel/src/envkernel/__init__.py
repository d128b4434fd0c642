"""envkernel: a small event-driven microkernel for making executable tool environments and the
training data that goes with them. Plugins plug in through :data:`hookimpl` and the roles in
:mod:`envkernel.roles`."""

from typing import TYPE_CHECKING

from .errors import EnvkernelError
from .hookspecs import hookimpl

if TYPE_CHECKING:  # imported on first use: `import envkernel.cli` (--help) stays light
    from .roles import (
        AppliesUpdates,
        Closes,
        Finishes,
        Policy,
        RewardModel,
        Sampler,
        SandboxRunner,
        SandboxSession,
        Synthesizer,
        ToolEnv,
        Trainer,
        Updates,
        Verifier,
    )

__all__ = [
    "EnvkernelError",
    "hookimpl",
    "AppliesUpdates",
    "Closes",
    "Finishes",
    "Policy",
    "RewardModel",
    "Sampler",
    "SandboxRunner",
    "SandboxSession",
    "Synthesizer",
    "ToolEnv",
    "Trainer",
    "Updates",
    "Verifier",
]


def __getattr__(name: str) -> object:
    """``envkernel.make(...)``: a Gymnasium env over ``envkernel serve``, found through the
    ``envkernel.api`` entry point."""
    if name in __all__[2:]:  # the roles
        from . import roles

        return getattr(roles, name)
    if name != "make":
        raise AttributeError(f"module 'envkernel' has no attribute {name!r}")
    from importlib.metadata import entry_points

    found = sorted(entry_points(group="envkernel.api", name="make"), key=lambda ep: ep.value)
    if not found:
        raise AttributeError(
            "envkernel.make needs the envkernel-serve plugin, which envkernel-suite brings: "
            "`envkernel install -f WHEELS envkernel-serve`, WHEELS being the folder of "
            "envkernel wheels you installed from (it is not on PyPI)"
        )
    return found[0].load()
