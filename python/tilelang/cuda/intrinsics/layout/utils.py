"""`tilelang.cuda.intrinsics.layout.utils`: tilelang.intrinsics.utils."""

from tilelang._compat import forwarding_getattr
from tilelang.intrinsics import utils as _source

__getattr__ = forwarding_getattr(
    __name__, (_source,), internal_all=True, instead="see tilelang.intrinsics.utils"
)
