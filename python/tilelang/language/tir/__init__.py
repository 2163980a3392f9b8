"""TileLang's `tilelang.language.tir`: the TIR-level expression functions under T. In
tilelang they are tvm.tirx's (T's functions plus TVM's constructors in TVM's argument
order); `op` and `ir` are the same names."""

from tilelang._compat import forwarding_getattr
from tilelang.tvm import tirx as _tirx

from . import ir, op

__all__ = ["ir", "op"]

__getattr__ = forwarding_getattr("tilelang.language.tir", (_tirx,))
