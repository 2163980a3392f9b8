"""TileLang's `tilelang.autotuner.param`: the compile and profile settings of a tuning
run as values (CompileArgs, ProfileArgs) and its result (AutotuneResult). An AutoTuner
takes them through set_compile_args(**vars(args)) / set_profile_args(...), or as its
`compile_args` / `profile_args` attributes (`tuner.compile_args = CompileArgs(...)`)."""

from __future__ import annotations

import dataclasses
import logging

from .tuner import AutotuneResult

__all__ = ["AutotuneResult", "CompileArgs", "ProfileArgs"]

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class CompileArgs:
    """What tilelang.compile gets for every config (see tilelang.compile)."""

    out_idx: object = None
    execution_backend: str = "auto"
    target: object = "auto"
    target_host: object = None
    verbose: bool = False
    pass_configs: dict | None = None
    compile_flags: object = None

    def compile_program(self, program):
        """tilelang.compile(program) with these settings."""
        import tilelang

        return tilelang.compile(program, **dataclasses.asdict(self))

    def __hash__(self):
        configs = tuple(sorted((str(k), repr(v)) for k, v in (self.pass_configs or {}).items()))
        return hash((repr(self.out_idx), self.execution_backend, str(self.target),
                     str(self.target_host), self.verbose, configs, repr(self.compile_flags)))  # fmt: skip


@dataclasses.dataclass(frozen=True)
class ProfileArgs:
    """How each config is checked and timed (AutoTuner.set_profile_args's arguments).
    `manual_check_prog(outputs, ref_outputs)` replaces the allclose check of ref_prog's
    outputs; `backend` is the profiler's timing method ("event", "cupti", "cudagraph");
    `early_stop_ratio` stops timing a config slower than that factor x the best so far
    (None: time every config fully)."""

    warmup: int = 25
    rep: int = 100
    timeout: int = 100
    backend: str = "event"
    supply_type: object = None
    ref_prog: object = None
    supply_prog: object = None
    rtol: float = 1e-2
    atol: float = 1e-2
    max_mismatched_ratio: float = 0.01
    skip_check: bool = False
    manual_check_prog: object = None
    cache_input_tensors: bool = False
    early_stop_ratio: object = 10.0

    def __hash__(self):
        return hash(tuple(repr(v) for v in dataclasses.astuple(self)))


# The file names of TileLang's on-disk tuning result (best_config.json, kernel_lib.so,
# kernel.cubin, ...): here a result is a JSON decision under <cache dir>/autotuner/ and
# its kernel stays in the kernel cache, so these import and raise when used.
_TILELANG_RESULT_FILES = (
    "BEST_CONFIG_PATH", "FUNCTION_PATH", "OUT_IDX_PATH", "LATENCY_PATH", "DEVICE_KERNEL_PATH",
    "HOST_KERNEL_PATH", "EXECUTABLE_PATH", "KERNEL_LIB_PATH", "KERNEL_CUBIN_PATH",
    "KERNEL_PY_PATH", "PARAMS_PATH",
)  # fmt: skip


def __getattr__(name):
    from tilelang._compat import forwarding_getattr

    return forwarding_getattr(
        __name__, internal=_TILELANG_RESULT_FILES,
        instead="a tuning result is a JSON decision under <cache dir>/autotuner/ (user guide, "
        "'Result cache'); AutotuneResult.kernel is the tuned kernel",
    )(name)  # fmt: skip
