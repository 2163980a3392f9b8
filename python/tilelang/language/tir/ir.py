"""`tilelang.language.tir.ir`: tvm.tirx's functions (T's, and TVM's constructors).
TileLang's TVM intrinsic wrappers that tilelang does not have raise an error saying so."""

from tilelang._compat import forwarding_getattr
from tilelang.language.math import CAST_ROUNDING_MODES as _VALID_CAST_ROUNDING_MODES
from tilelang.language.math import cast
from tilelang.language.vector import Shuffle
from tilelang.tvm import tirx as _tirx

__all__ = ["_VALID_CAST_ROUNDING_MODES", "Shuffle", "cast"]

__getattr__ = forwarding_getattr(
    __name__, (_tirx,), internal_all=True, instead="write the expression with T"
)
