"""TileLang's `tilelang.language.common`: the dialect-neutral T. tilelang has one T for
every target (a name a target cannot lower is an error at compile time, naming it), so
this is tilelang.language itself."""

from tilelang import language as _T
from tilelang.language import *

__tilelang_dialect__ = "common"
__all__ = list(_T.__all__)


def __getattr__(name):
    return getattr(_T, name)
