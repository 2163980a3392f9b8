"""JIT diagnostics, as TileLang's `tilelang.jit.diagnostics`: `jit_phase(name, **context)`
logs the start, the end (with the elapsed time) or the failure (with the traceback) of a
step of a compile on the `tilelang.jit.diagnostics` logger at INFO. It is on when
TILELANG_JIT_DIAGNOSTICS is true or the compile is verbose; `enabled=` decides alone.
JITKernel logs its compile as the phase "compile" (the lowering, code generation and
build, or the disk-cache hit that replaces them), KernelCache.cached as "cache.compile"."""

import contextlib
import logging
import time

from tilelang.env import env_flag

__all__ = ["diagnostics_enabled", "jit_phase"]

logger = logging.getLogger("tilelang.jit.diagnostics")


def diagnostics_enabled(*, verbose=False):
    """Whether phases are logged: verbose, or TILELANG_JIT_DIAGNOSTICS set to a true value."""
    return bool(verbose) or env_flag("TILELANG_JIT_DIAGNOSTICS")


def _context_text(context):
    return "".join(f" {k}={v!r}" if i == 0 else f", {k}={v!r}"
                   for i, (k, v) in enumerate(sorted(context.items())))  # fmt: skip


@contextlib.contextmanager
def jit_phase(name, *, enabled=None, verbose=False, **context):
    """`with jit_phase("compile", kernel="gemm", target="cuda -arch=sm_90a"): ...`: logs
    "TileLang JIT phase start: compile kernel='gemm', target=...", then "... done:
    compile elapsed=0.512s ..." or, when the block raises, "... failed: ..." with the
    traceback; the exception propagates unchanged."""
    if enabled is None:
        enabled = diagnostics_enabled(verbose=verbose)
    if not enabled:
        yield
        return
    text = _context_text(context)
    start = time.monotonic()
    logger.info("TileLang JIT phase start: %s%s", name, text)
    try:
        yield
    except BaseException:
        logger.exception(
            "TileLang JIT phase failed: %s elapsed=%.3fs%s", name, time.monotonic() - start, text
        )
        raise
    logger.info("TileLang JIT phase done: %s elapsed=%.3fs%s", name, time.monotonic() - start, text)
