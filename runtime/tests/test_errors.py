"""envkernel has one sandbox error: every name for it is the same class, with a code enum."""

from __future__ import annotations

import pytest

import envkernel.errors
import envkernel_podman
import envkernel_process
from envkernel_runtime import session
from envkernel_runtime.errors import InfraError, SandboxError, SandboxErrorCode


def test_every_sandbox_error_name_is_one_class_without_a_diamond() -> None:
    names = [
        envkernel.errors.SandboxError,
        envkernel_process.SandboxError,
        envkernel_podman.SandboxError,
        session.ExecutorSession.error_type,
    ]
    assert all(n is SandboxError for n in names)
    with pytest.warns(DeprecationWarning, match="SessionError is deprecated"):
        assert session.SessionError is SandboxError
    assert envkernel.errors.InfraError is InfraError
    # single inheritance all the way up: no class in the chain has two bases
    assert all(len(c.__bases__) == 1 for c in SandboxError.__mro__[:-1])
    assert SandboxError.__mro__[1:] == (
        InfraError,
        envkernel.errors.EnvkernelError,
        Exception,
        BaseException,
        object,
    )


def test_code_is_an_enum_that_compares_as_its_string() -> None:
    err = SandboxError("sandbox s1: load failed", code="load_failed")
    assert err.code is SandboxErrorCode.LOAD_FAILED and err.code == "load_failed"
    assert f"{err.code}" == "load_failed"
    assert SandboxError("no code").code is SandboxErrorCode.SANDBOX
    assert SandboxError("new executor code", code="what_is_this").code is SandboxErrorCode.OTHER
