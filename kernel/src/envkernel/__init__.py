"""envkernel: a small event-driven microkernel for making executable tool environments and the
training data that goes with them. Plugins plug in through :data:`hookimpl` and the roles in
:mod:`envkernel.roles`."""

from .errors import EnvkernelError
from .hookspecs import hookimpl
from .roles import (AppliesUpdates, Closes, Finishes, Policy, RewardModel, Sampler, SandboxRunner, SandboxSession, Synthesizer,
                    ToolEnv, Trainer, Updates, Verifier)

__all__ = ["EnvkernelError", "hookimpl", "AppliesUpdates", "Closes", "Finishes", "Policy", "RewardModel", "Sampler", "SandboxRunner",
           "SandboxSession", "Synthesizer", "ToolEnv", "Trainer", "Updates", "Verifier"]
