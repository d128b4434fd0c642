"""Plugin ``workspace-export``: the ``pinchbench-export`` exporter (not in the default preset;
add it with ``--plugins +workspace-export``). It writes each emitted workspace task as a
PinchBench task file, ``pinchbench/task_<id>.md`` in the run folder."""

from __future__ import annotations

from typing import Any

from envkernel.hookspecs import hookimpl

from . import PinchBenchExporter


@hookimpl
def register_trainers(register: Any) -> None:
    """Register the ``pinchbench-export`` exporter."""
    register("pinchbench-export", PinchBenchExporter)
