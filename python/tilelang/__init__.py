"""tilelang: TileLang's Python API (`import tilelang; import tilelang.language as T`) on a
C++ compiler core. This module loads the core and exposes compile / jit and settings."""

from . import _native

_C = _native.load()

from . import language
from .autotuner import AutoTuner, autotune
from .env import disable_cache, enable_cache, is_cache_enabled, is_emulation_enabled, set_emulation
from .jit import JITKernel, compile, jit
from .math import cdiv, next_power_of_2
from .profiler import TensorSupplyType
from .transform import PassConfigKey
from .utils.target import determine_target

TileLangError = _C.TileLangError
__version__ = "0.1.0"

__all__ = [
    "AutoTuner",
    "JITKernel",
    "PassConfigKey",
    "TensorSupplyType",
    "TileLangError",
    "__version__",
    "autotune",
    "cdiv",
    "compile",
    "determine_target",
    "disable_cache",
    "enable_cache",
    "is_cache_enabled",
    "is_emulation_enabled",
    "jit",
    "language",
    "next_power_of_2",
    "set_emulation",
]
