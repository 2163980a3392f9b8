"""`tvm.tir` expression helpers that TileLang kernels use, mapped onto tilelang.language.

Each takes TVM's argument order: `const(value, dtype)`, `Cast(dtype, value)`,
`reinterpret(dtype, value)`, `call_extern(dtype, name, *args)`."""

from .. import _C
from ..language import math as _math
from ..language.dtypes import dtype as _dtype
from ..language.prim_func import PrimFunc
from ..language.shapes import Tensor as Buffer

PrimExpr = _C.Expr

# Expressions: the same functions as T's.
Select = if_then_else = _math.if_then_else
call_extern = _math.call_extern
max = _math.max
min = _math.min
floordiv = _math.floordiv
floormod = _math.floormod
exp, log, sqrt, rsqrt = _math.exp, _math.log, _math.sqrt, _math.rsqrt
__all__ = [
    "Buffer",
    "Cast",
    "FloatImm",
    "IntImm",
    "PrimExpr",
    "PrimFunc",
    "Select",
    "Var",
    "call_extern",
    "const",
    "exp",
    "floordiv",
    "floormod",
    "if_then_else",
    "log",
    "max",
    "min",
    "reinterpret",
    "rsqrt",
    "sqrt",
]


def const(value, dtype=None):
    """A constant of `dtype` (TVM's default: int32 for ints, float32 for floats, bool)."""
    if dtype is None:
        dtype = (
            "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
        )
    return _dtype(dtype)(value)


def IntImm(dtype, value):
    return const(int(value), dtype)


def FloatImm(dtype, value):
    return const(float(value), dtype)


def Cast(dtype, value):
    return _math.cast(value, dtype)


def reinterpret(dtype, value):
    return _math.reinterpret(value, dtype)


def Var(name, dtype="int32"):
    """A scalar variable of `dtype`; as a kernel size it is symbolic (T.dynamic)."""
    return _C.Var(name, _dtype(dtype))


def __getattr__(name):
    raise AttributeError(
        f"tvm.tir.{name} is not part of tilelang's TVM facade (tvm.tir offers "
        f"{', '.join(__all__)}); write it with tilelang.language (import tilelang.language as T)"
    )
