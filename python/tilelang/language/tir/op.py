"""`tilelang.language.tir.op`: tvm.tirx's functions (T's, and TVM's constructors).
TileLang's TVM intrinsic wrappers that tilelang does not have raise an error saying so.
The builtins a backend owns (tilelang.language.tir.exports.BACKEND_ONLY_TIR_EXPORTS)
are not here, as in TileLang: they live in that backend's dialect
(tilelang.cuda.language.tir, ...)."""

from tilelang._compat import forwarding_getattr
from tilelang.tvm import tirx as _tirx

from .exports import BACKEND_ONLY_TIR_EXPORTS

_forward = forwarding_getattr(
    __name__, (_tirx,), internal_all=True, instead="write the expression with T"
)


def __getattr__(name):
    if name in BACKEND_ONLY_TIR_EXPORTS:
        raise AttributeError(
            f"module {__name__!r} has no attribute {name!r}: it is a backend's builtin "
            "(tilelang.language.tir.exports), in that backend's dialect"
        )
    return _forward(name)
