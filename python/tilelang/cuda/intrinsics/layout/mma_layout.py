"""`tilelang.cuda.intrinsics.layout.mma_layout`: tilelang.intrinsics.mma_layout."""

from tilelang._compat import forwarding_getattr
from tilelang.intrinsics import mma_layout as _source

__getattr__ = forwarding_getattr(
    __name__, (_source,), internal_all=True,
    instead="tilelang.intrinsics.mma_layout has the mma.sync m16n8k16 layouts",
)  # fmt: skip
