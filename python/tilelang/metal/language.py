"""`tilelang.metal.language`: the Metal dialect of T, which is tilelang.language itself."""

from tilelang import language as _T
from tilelang.language import *

__tilelang_dialect__ = "metal"
__all__ = list(_T.__all__)


def __getattr__(name):
    return getattr(_T, name)
