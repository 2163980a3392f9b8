"""`tilelang.cuda.intrinsics.macro.mma_macro_generator`: TensorCoreIntrinEmitter."""

from tilelang._compat import forwarding_getattr
from tilelang.intrinsics import mma_macro_generator as _source
from tilelang.intrinsics.mma_macro_generator import TensorCoreIntrinEmitter

__all__ = ["TensorCoreIntrinEmitter"]

__getattr__ = forwarding_getattr(
    __name__, (_source,), internal_all=True,
    instead="TensorCoreIntrinEmitter (mma.sync) is provided; T.gemm covers the other instructions",
)  # fmt: skip
