"""envkernel: a small event-driven microkernel for making executable tool environments and the
training data that goes with them. Plugins plug in through :data:`hookimpl` and the roles in
:mod:`envkernel.roles`."""

from .errors import EnvkernelError
from .hookspecs import hookimpl
from .roles import Policy, RewardModel, Sampler, SandboxRunner, SandboxSession, Synthesizer, ToolEnv, Trainer, Verifier

__all__ = [
    "EnvkernelError",
    "hookimpl",
    "Policy",
    "RewardModel",
    "Sampler",
    "SandboxRunner",
    "SandboxSession",
    "Synthesizer",
    "ToolEnv",
    "Trainer",
    "Verifier",
]
