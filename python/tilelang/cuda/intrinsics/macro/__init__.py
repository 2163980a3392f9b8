"""`tilelang.cuda.intrinsics.macro`: the emitters; mma.sync's is TensorCoreIntrinEmitter.
The wgmma, tcgen05, sm70/sm75/sm120 and sparse emitters are out of scope (T.gemm
emits those instructions itself)."""

from . import mma_macro_generator

__all__ = ["mma_macro_generator"]
