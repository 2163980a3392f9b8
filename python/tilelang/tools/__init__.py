"""TileLang's `tilelang.tools`: `plot_layout` draws a fragment or shared layout
(matplotlib, an optional extra) and `Analyzer` places a kernel on a GPU's roofline from
the FLOPs and global bytes counted in its IR. TileLang's other tools walk TVM's IR
(passes, lowering traces), which tilelang does not have; their names raise an error
saying so."""

from tilelang._compat import forwarding_getattr

from .analyzer import AnalysisResult, Analyzer
from .plot_layout import plot_layout

__all__ = ["AnalysisResult", "Analyzer", "plot_layout"]

__getattr__ = forwarding_getattr(
    "tilelang.tools", internal_all=True,
    instead="read kernel.get_kernel_source() or func.script(), and time kernels with kernel.get_profiler()",
)  # fmt: skip
