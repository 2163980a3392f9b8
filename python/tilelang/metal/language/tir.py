"""`tilelang.metal.language.tir`: TVM's raw TIR builtins for Metal's simdgroup matrices
(tilelang.language.tir.exports.METAL_ONLY_TIR_EXPORTS). T.gemm on the metal target
writes simdgroup matrices (and Metal 4's tensor ops) itself, so each name is out of
scope and says so (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang.tvm._scope import refused_name

_INSTEAD = "write T.gemm: on the metal target it computes with simdgroup matrices"

_KIND = "a raw TIR builtin of TVM's Metal code generator"

make_filled_simdgroup_matrix = refused_name(
    f"{__name__}.make_filled_simdgroup_matrix", _INSTEAD, _KIND
)
simdgroup_load = refused_name(f"{__name__}.simdgroup_load", _INSTEAD, _KIND)
simdgroup_multiply_accumulate = refused_name(
    f"{__name__}.simdgroup_multiply_accumulate", _INSTEAD, _KIND
)
simdgroup_store = refused_name(f"{__name__}.simdgroup_store", _INSTEAD, _KIND)

__all__ = [
    "make_filled_simdgroup_matrix",
    "simdgroup_load",
    "simdgroup_multiply_accumulate",
    "simdgroup_store",
]
