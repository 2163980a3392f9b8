"""TileLang's `tilelang.cache.kernel_cache`: the kernel cache as a class. tilelang's
cache lives in its C++ core (src/cache); `KernelCache` answers where its disk entries
are, its size, and clears it."""

import logging
from pathlib import Path

from . import cache_dir, clear_cache, stats

__all__ = ["KernelCache"]

logger = logging.getLogger(__name__)


class KernelCache:
    """The process's kernel cache (memory + disk), one instance."""

    _instance = None

    def __new__(cls):
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    @classmethod
    def get_instance(cls):
        return cls()

    @staticmethod
    def _get_cache_root():
        """The directory that holds the disk entries (<cache dir>/kernels)."""
        return Path(cache_dir()) / "kernels"

    @property
    def cache_dir(self):
        return Path(cache_dir())

    def stats(self):
        return stats()

    def clear_cache(self):
        clear_cache()
