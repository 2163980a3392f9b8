"""TileLang's `tilelang.intrinsics`: the warp-level tensor-core emitter
(TensorCoreIntrinEmitter, mma.sync on CUDA sm_80+ and its emulator) and the
fragment, ldmatrix and swizzle index maps that kernels written with it import."""

from .mma_layout import get_swizzle_layout, make_mma_swizzle_layout
from .mma_macro_generator import TensorCoreIntrinEmitter
from .utils import get_ldmatrix_offset, get_mma_micro_size, mma_store_index_map

__all__ = [
    "TensorCoreIntrinEmitter",
    "get_ldmatrix_offset",
    "get_mma_micro_size",
    "get_swizzle_layout",
    "make_mma_swizzle_layout",
    "mma_store_index_map",
]
