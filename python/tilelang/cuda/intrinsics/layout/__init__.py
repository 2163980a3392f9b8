"""`tilelang.cuda.intrinsics.layout`: the mma fragment / ldmatrix / swizzle index maps."""

from . import mma_layout, utils

__all__ = ["mma_layout", "utils"]
