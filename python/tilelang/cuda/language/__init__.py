"""`tilelang.cuda.language`: the CUDA dialect of T, which is tilelang.language itself
(every T name works on the CUDA target)."""

from tilelang import language as _T
from tilelang.language import *

__tilelang_dialect__ = "cuda"
__all__ = list(_T.__all__)


def __getattr__(name):
    return getattr(_T, name)
