"""tilelang: TileLang's Python API (`import tilelang; import tilelang.language as T`) on a
C++ compiler core. This module loads the core and exposes compile / jit and settings."""

from . import _native

_C = _native.load()

from . import language  # noqa: E402
from .env import disable_cache, enable_cache, is_cache_enabled  # noqa: E402
from .jit import JITKernel, compile, jit  # noqa: E402
from .transform import PassConfigKey  # noqa: E402
from .utils.target import determine_target  # noqa: E402

TileLangError = _C.TileLangError
__version__ = "0.1.0"

__all__ = [
    "language", "jit", "compile", "JITKernel", "PassConfigKey", "TileLangError", "__version__",
    "disable_cache", "enable_cache", "is_cache_enabled", "determine_target",
]
