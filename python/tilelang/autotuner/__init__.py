"""Autotuning: `@tilelang.autotune(configs=...)` above `@tilelang.jit`, or
`AutoTuner.from_kernel(fn, configs).set_compile_args(...).set_profile_args(...).run(...)`.
Configs compile in parallel worker processes; results are cached on disk under
`$TILELANG_CACHE_DIR/autotuner/`. `with set_autotune_inputs(a, b):` tunes on given
tensors."""

from . import grouped_compile, param
from .capture import get_autotune_inputs, set_autotune_inputs
from .tuner import AutoTuneError, AutoTuneFunction, AutoTuner, AutotuneResult, autotune

__all__ = [
    "AutoTuneError",
    "AutoTuneFunction",
    "AutoTuner",
    "AutotuneResult",
    "autotune",
    "get_autotune_inputs",
    "grouped_compile",
    "param",
    "set_autotune_inputs",
]
