"""The part of TVM's Python API that TileLang kernels use, on tilelang.language.

TileLang is built on TVM, so its kernels sometimes reach for TVM names: `from tvm
import tir` for `tir.const` in a dequantization helper, `tvm.DataType(dtype).bits`,
`tvm.te.var("m")` for a symbolic size. This package maps those names onto `T`; it is
not TVM (there is no IRModule, no schedule, no Relay). A name outside it raises an
AttributeError that says so.

`import tilelang` makes this package importable as `tvm` as well (`from tvm import
tir`), unless a real TVM is installed, which then keeps the name.
"""

from ..language.dtypes import dtype as DataType
from . import te, testing, tir

__all__ = ["DataType", "te", "testing", "tir"]


def __getattr__(name):
    raise AttributeError(
        f"tvm.{name} is not part of tilelang's TVM facade (tilelang.tvm offers DataType, "
        f"tir, te and testing); write it with tilelang.language (import tilelang.language as T)"
    )
