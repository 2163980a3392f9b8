"""TileLang's `tilelang.tileop`: its tile operators as Python classes over TVM IR (`Gemm`,
`GemmSP`, `GemmBlockScaled` and their per-architecture implementations in
`tilelang.tileop.gemm.*`). `GemmWarpPolicy` is T.GemmWarpPolicy; the rest is a TileLang
internal (T.gemm and the other T functions are the tile operators here, lowered by the
C++ core), whose names import and raise an error saying so when used."""

from tilelang._compat import forwarding_getattr
from tilelang.language import GemmWarpPolicy

__all__ = ["GemmWarpPolicy"]

__getattr__ = forwarding_getattr(
    __name__, internal_all=True,
    instead="call T.gemm / T.gemm_sp in the kernel; the compiler picks the instruction",
)  # fmt: skip
