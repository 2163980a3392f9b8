"""tilelang: TileLang's Python API (`import tilelang; import tilelang.language as T`) on a
C++ compiler core. This module loads the core and exposes compile / jit and settings."""

from . import _native

_C = _native.load()

from . import contrib, language, tvm
from .autotuner import AutoTuner, autotune
from .env import disable_cache, enable_cache, is_cache_enabled, is_emulation_enabled, set_emulation
from .jit import JITKernel, compile, jit, par_compile
from .jit.log import set_log_level
from .language.dtypes import dtype as DataType
from .math import cdiv, next_power_of_2
from .profiler import TensorSupplyType
from .transform import PassConfigKey
from .utils.target import determine_target

TileLangError = _C.TileLangError
AssumptionError = _C.AssumptionError


def lower(func_or_mod, target="auto", target_host=None, **kwargs):
    """The generated source and parameters of a kernel without building it
    (tilelang.engine.lower.lower)."""
    from .engine.lower import lower as lower_func

    return lower_func(func_or_mod, target, target_host, **kwargs)


__version__ = "0.1.0"


def __getattr__(name):
    """`tilelang.torch` (kernels as PyTorch operators) imports torch, so it loads on
    first use instead of with the package."""
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'tilelang' has no attribute '{name}'")


def _offer_tvm_facade():
    """`import tvm` after `import tilelang` gives tilelang.tvm, as TileLang's own TVM
    becomes importable with it; a real TVM installed keeps the name."""
    import importlib.util
    import sys

    if "tvm" in sys.modules or importlib.util.find_spec("tvm") is not None:
        return
    sys.modules.update(tvm.modules())
    sys.modules["tvm.tir"] = tvm.tirx
    sys.modules["tvm.ir.transform"] = tvm.transform


_offer_tvm_facade()

from ._compat import install_internal_module_finder

install_internal_module_finder()

__all__ = [
    "AssumptionError",
    "AutoTuner",
    "DataType",
    "JITKernel",
    "PassConfigKey",
    "TensorSupplyType",
    "TileLangError",
    "__version__",
    "autotune",
    "cdiv",
    "compile",
    "contrib",
    "determine_target",
    "disable_cache",
    "enable_cache",
    "is_cache_enabled",
    "is_emulation_enabled",
    "jit",
    "language",
    "lower",
    "next_power_of_2",
    "par_compile",
    "set_emulation",
    "set_log_level",
]
