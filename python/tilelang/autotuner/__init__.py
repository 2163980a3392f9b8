"""Autotuning: `@tilelang.autotune(configs=...)` above `@tilelang.jit`, or
`AutoTuner.from_kernel(fn, configs).set_compile_args(...).set_profile_args(...).run(...)`.
Configs compile in parallel worker processes; results are cached on disk under
`$TILELANG_CACHE_DIR/autotuner/`."""

from .tuner import AutoTuneError, AutoTuneFunction, AutoTuner, AutotuneResult, autotune

__all__ = ["AutoTuneError", "AutoTuneFunction", "AutoTuner", "AutotuneResult", "autotune"]
