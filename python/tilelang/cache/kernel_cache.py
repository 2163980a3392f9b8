"""TileLang's `tilelang.cache.kernel_cache`: the kernel cache as a class. tilelang's
cache lives in its C++ core (src/cache); `KernelCache` answers where its disk entries
are, its size, clears it, and compiles through it (`cached`)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, NoReturn

from tilelang.jit.diagnostics import jit_phase
from tilelang.jit.kernel import JITKernel
from tilelang.types import PassConfigs, TargetLike

from . import cache_dir, clear_cache, stats

__all__ = ["KernelCache"]

logger = logging.getLogger(__name__)


# TileLang's Python cache layer (tilelang/cache/kernel_cache.py of 0.1.15 and of
# a35008a): its entry's file names and its private helpers. The cache here is the C++
# core's (src/cache), with its own entry format and atomic writes, so these are refused
# by name, on the class and its instance.
_TILELANG_CACHE_INTERNALS = frozenset(
    (
        "device_kernel_path", "host_kernel_path", "kernel_lib_path", "params_path",
        "resource_usage_path", "_build_kernel", "_cleanup_stale_staging_dirs",
        "_clear_disk_cache", "_create_dirs", "_format_version_namespace", "_generate_key",
        "_get_base_key", "_get_cache_namespace", "_get_cache_path", "_get_complete_cache_files",
        "_get_export_link_args", "_get_missing_complete_cache_files", "_get_namespace_root",
        "_get_required_files", "_get_source_compile_args", "_get_staging_root",
        "_get_tilelang_lib_stamp", "_is_complete_cache_dir", "_is_rename_collision",
        "_load_binary", "_load_kernel_from_disk", "_load_kernel_source",
        "_remove_incomplete_cache_dir", "_safe_write_executable", "_safe_write_file",
        "_sanitize_path_component", "_save_kernel_source_code_to_disk", "_save_kernel_to_disk",
        "_save_so_cubin_to_disk", "_save_wrapper_kernel_code_to_disk", "_set_adapter_cache_path",
        "_tag_kernel_cache_entry",
    )
)  # fmt: skip


def _refuse_cache_internal(name: str) -> NoReturn:
    from tilelang._compat import out_of_scope

    out_of_scope(
        f"tilelang.cache.kernel_cache.KernelCache.{name}",
        "tilelang's kernel cache is its C++ core's (src/cache: its own entry format, written "
        "atomically); KernelCache answers where it is, its size, clears it and compiles "
        "through it (user guide, jit_and_cache.md, 'Cache')",
        kind="a TileLang internal",
    )


class _KernelCacheClass(type):
    def __getattr__(cls, name: str) -> Any:
        if name in _TILELANG_CACHE_INTERNALS:
            _refuse_cache_internal(name)
        raise AttributeError(f"type object 'KernelCache' has no attribute '{name}'")


class KernelCache(metaclass=_KernelCacheClass):
    """The process's kernel cache (memory + disk), one instance."""

    def __getattr__(self, name: str) -> Any:
        if name in _TILELANG_CACHE_INTERNALS:
            _refuse_cache_internal(name)
        raise AttributeError(f"'KernelCache' object has no attribute '{name}'")

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
