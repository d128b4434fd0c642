"""envkernel-broken: a plugin whose module raises on import (the kernel must survive it)."""

raise RuntimeError("envkernel_broken cannot be imported (on purpose)")
