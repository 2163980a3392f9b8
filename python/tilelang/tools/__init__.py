"""TileLang's `tilelang.tools`: its IR analyzers and layout plotters walk TVM's IR
(statements, Call nodes of tile ops), which tilelang does not have; their names raise
an error saying so."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.tools", internal_all=True,
    instead="read kernel.get_kernel_source() or func.script(), and time kernels with kernel.get_profiler()",
)  # fmt: skip
