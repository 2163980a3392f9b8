"""`tilelang.cuda.language.intrinsics`: the warp-level emitters; TensorCoreIntrinEmitter
(mma.sync) is tilelang.intrinsics'; the wgmma / tcgen05 / sm120 emitters are out of
scope (T.gemm emits those instructions itself)."""

from tilelang import intrinsics as _intrinsics
from tilelang._compat import forwarding_getattr
from tilelang.intrinsics import TensorCoreIntrinEmitter, get_swizzle_layout

__all__ = ["TensorCoreIntrinEmitter", "get_swizzle_layout"]

__getattr__ = forwarding_getattr(
    __name__, (_intrinsics,), internal_all=True,
    instead="TensorCoreIntrinEmitter (mma.sync) is provided; T.gemm covers the other instructions",
)  # fmt: skip
