"""Logging is configured by ``envkernel_bus.logs`` (shared with workers and the tap); kept here for
old imports."""

from envkernel_bus.logs import configure

__all__ = ["configure"]
