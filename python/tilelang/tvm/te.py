"""`tvm.te.var`: a symbolic size, as T.dynamic makes."""

from ..language.shapes import dynamic


def var(name="tindex", dtype="int32"):
    """A symbolic integer, usable as a tensor dimension (T.dynamic(name, dtype))."""
    return dynamic(name, dtype)


def __getattr__(name):
    raise AttributeError(
        f"tvm.te.{name} is not part of tilelang's TVM facade (tvm.te offers var); "
        f"tensor expressions are not supported, write the kernel with tilelang.language"
    )
