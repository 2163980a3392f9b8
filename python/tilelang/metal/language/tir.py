"""`tilelang.metal.language.tir`: TVM's raw TIR builtins for Metal's simdgroup matrices
(tilelang.language.tir.exports.METAL_ONLY_TIR_EXPORTS). T.gemm on the metal target
writes simdgroup matrices (and Metal 4's tensor ops) itself, so each name is out of
scope and says so (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang.language.tir.exports import METAL_ONLY_TIR_EXPORTS
from tilelang.tvm._scope import refused_name

_INSTEAD = "write T.gemm: on the metal target it computes with simdgroup matrices"

_KIND = "a raw TIR builtin of TVM's Metal code generator"

for _name in METAL_ONLY_TIR_EXPORTS:
    globals()[_name] = refused_name(f"{__name__}.{_name}", _INSTEAD, _KIND)

__all__ = sorted(METAL_ONLY_TIR_EXPORTS)  # noqa: PLE0605 (the names are exports.py's)
