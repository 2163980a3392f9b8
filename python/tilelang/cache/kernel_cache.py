"""TileLang's `tilelang.cache.kernel_cache`: the kernel cache as a class. tilelang's
cache lives in its C++ core (src/cache); `KernelCache` answers where its disk entries
are, its size, clears it, and compiles through it (`cached`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from tilelang.jit.diagnostics import jit_phase
from tilelang.jit.kernel import JITKernel
from tilelang.types import PassConfigs, TargetLike

from . import cache_dir, clear_cache, stats

__all__ = ["KernelCache"]

logger = logging.getLogger(__name__)


class KernelCache:
    """The process's kernel cache (memory + disk), one instance."""

    _instance: KernelCache | None = None

    def __new__(cls) -> KernelCache:  # noqa: PYI034  (one instance, of this class)
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get_instance(cls) -> KernelCache:
        return cls()

    @staticmethod
    def _get_cache_root() -> Path:
        """The directory that holds the disk entries (<cache dir>/kernels)."""
        return Path(cache_dir()) / "kernels"

    @property
    def cache_dir(self) -> Path:
        return Path(cache_dir())

    def stats(self) -> dict[str, Any]:
        return stats()

    def clear_cache(self) -> None:
        clear_cache()

    def cached(
        self,
        func: Any = None,
        out_idx: int | list[int] | None = None,
        *args: Any,
        target: TargetLike | None = None,
        target_host: TargetLike | None = None,
        execution_backend: str | None = None,
        verbose: bool = False,
        pass_configs: PassConfigs | None = None,
        compile_flags: str | list[str] | None = None,
    ) -> JITKernel:
        """The JITKernel of `func` (a T.prim_func) for these settings, as
        tilelang.compile makes it: loaded from the disk cache when an entry matches,
        else compiled and stored. None for target / execution_backend means "auto"
        (TILELANG_DEFAULT_TARGET / TILELANG_EXECUTION_BACKEND when set). Logged as the
        JIT phase "cache.compile" (tilelang.jit.diagnostics)."""
        if args:
            raise TypeError(
                f"KernelCache.cached takes func and out_idx positionally, then keywords; got "
                f"{len(args)} more positional argument(s)"
            )
        attrs = getattr(func, "attrs", None) or {}
        name = attrs.get("global_symbol") or getattr(func, "name", None) or type(func).__name__
        with jit_phase(
            "cache.compile",
            verbose=verbose,
            kernel=name,
            target=str("auto" if target is None else target),
            backend=execution_backend or "auto",
        ):
            return JITKernel(
                func,
                out_idx=out_idx,
                target="auto" if target is None else target,
                target_host=target_host,
                execution_backend=execution_backend or "auto",
                verbose=verbose,
                pass_configs=pass_configs,
                compile_flags=compile_flags,
            )
