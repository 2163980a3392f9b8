"""tilelang: TileLang's Python API (`import tilelang; import tilelang.language as T`) on a
C++ compiler core. This module loads the core and exposes compile / jit and settings."""

from typing import Any


def _refuse_mixed_distributions() -> None:
    """Raises ImportError when the folder this package sits in also holds the files of
    TileLang's own `tilelang` distribution: both install a `tilelang/` folder, and pip
    puts one over the other, so what is left is a mix of the two that neither works as."""
    import os

    here = os.path.dirname(os.path.abspath(__file__))
    site = os.path.dirname(here)
    try:
        entries = os.listdir(site)
    except OSError:
        return
    ours = [e for e in entries if e.startswith("tilelang_cpp-") and e.endswith(".dist-info")]
    for entry in entries:
        if not (entry.startswith("tilelang-") and entry.endswith(".dist-info")):
            continue
        try:
            with open(os.path.join(site, entry, "RECORD"), encoding="utf-8") as f:
                mixed = any(line.startswith("tilelang/") for line in f)
        except OSError:
            continue
        if mixed:
            other = entry[: -len(".dist-info")].replace("-", " ", 1)
            mine = ours[0][: -len(".dist-info")].replace("-", " ", 1) if ours else "tilelang_cpp"
            raise ImportError(
                f"{here} holds the files of two distributions of the package 'tilelang': "
                f"{mine.replace('_', '-', 1)} (this package, a C++ core) and {other} "
                "(TileLang's, on TVM), installed one over the other. Remove both "
                "(pip uninstall -y tilelang tilelang-cpp) and install the one you want, or "
                "keep them in separate virtual environments"
            )


_refuse_mixed_distributions()

from . import _native

_C = _native.load()

from . import contrib, language, tvm
from .autotuner import AutoTuner, autotune

# As in TileLang, `tilelang.env` is the settings object (tilelang/env.py's `env`), which this
# import binds over the module; `from tilelang.env import ...` still imports from the module.
from .env import (
    disable_cache,
    enable_cache,
    env,
    is_cache_enabled,
    is_emulation_enabled,
    set_emulation,
)
from .jit import JITKernel, compile, jit, par_compile
from .jit.log import set_log_level
from .language.dtypes import dtype as DataType
from .math import cdiv, next_power_of_2
from .profiler import TensorSupplyType
from .transform import PassConfigKey
from .utils.target import determine_target

TileLangError = _C.TileLangError
AssumptionError = _C.AssumptionError


def lower(func_or_mod: Any, target: Any = "auto", target_host: Any = None, **kwargs: Any) -> Any:
    """The generated source and parameters of a kernel without building it
    (tilelang.engine.lower.lower)."""
    from .engine.lower import lower as lower_func

    return lower_func(func_or_mod, target, target_host, **kwargs)


__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """`tilelang.torch` (kernels as PyTorch operators) imports torch, so it loads on
    first use instead of with the package."""
    if name == "torch":
        import importlib

        return importlib.import_module(".torch", __name__)
    raise AttributeError(f"module 'tilelang' has no attribute '{name}'")


def _offer_tvm_facade() -> None:
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
    "env",
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
