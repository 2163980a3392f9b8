"""`tilelang.language.tir.op`: tvm.tirx's functions (T's, and TVM's constructors).
TileLang's TVM intrinsic wrappers that tilelang does not have raise an error saying so."""

from tilelang._compat import forwarding_getattr
from tilelang.tvm import tirx as _tirx

__getattr__ = forwarding_getattr(
    __name__, (_tirx,), internal_all=True, instead="write the expression with T"
)
