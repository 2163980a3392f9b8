"""`tilelang.cuda.intrinsics`: tilelang.intrinsics under TileLang's CUDA dialect path
(TensorCoreIntrinEmitter for mma.sync, ldmatrix / swizzle layouts)."""

from tilelang._compat import forwarding_getattr
from tilelang.intrinsics import (
    TensorCoreIntrinEmitter,
    get_ldmatrix_offset,
    get_mma_micro_size,
    get_swizzle_layout,
    make_mma_swizzle_layout,
    mma_store_index_map,
)

from . import layout, macro, sparse_layout

__all__ = [
    "TensorCoreIntrinEmitter",
    "get_ldmatrix_offset",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "layout",
    "macro",
    "make_mma_swizzle_layout",
    "mma_store_index_map",
    "sparse_layout",
]

_OTHER_EMITTERS = ("TensorCoreIntrinEmitterWithLadderTransform", "TensorCoreIntrinEmitterSM120")
__getattr__ = forwarding_getattr(
    "tilelang.cuda.intrinsics",
    internal=_OTHER_EMITTERS,
    instead="use TensorCoreIntrinEmitter (mma.sync) or T.gemm",
)
