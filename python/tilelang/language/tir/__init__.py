"""TileLang's `tilelang.language.tir`: the TIR-level expression functions under T. In
tilelang they are tvm.tirx's (T's functions plus TVM's constructors in TVM's argument
order); `op` and `ir` are the same names, and `exports` classifies the vendor builtins
by the dialect that owns them. The submodules load when first asked for (T imports
`exports` while tvm.tirx is still loading)."""

import importlib

__all__ = ["ir", "op"]


def __getattr__(name):
    if name in ("exports", "ir", "op"):
        return importlib.import_module(f"{__name__}.{name}")
    from tilelang._compat import forwarding_getattr
    from tilelang.tvm import tirx

    return forwarding_getattr("tilelang.language.tir", (tirx,))(name)
