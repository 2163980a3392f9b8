"""`tvm.te.var`: a symbolic size, as T.dynamic makes."""

from ..language.shapes import dynamic
from ._scope import facade_getattr


def var(name="tindex", dtype="int32"):
    """A symbolic integer, usable as a tensor dimension (T.dynamic(name, dtype))."""
    return dynamic(name, dtype)


# TVM's tensor expressions (tvm.te beyond var).
_TVM_NAMES = {
    "Tensor", "comm_reducer", "compute", "const", "create_prim_func", "extern",
    "floordiv", "floormod", "if_then_else", "max", "min", "placeholder", "reduce_axis",
    "scan", "size_var", "sum", "thread_axis",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.te", "var", _TVM_NAMES, "write the kernel with tilelang.language",
    hint="; write the kernel with tilelang.language",
)  # fmt: skip
