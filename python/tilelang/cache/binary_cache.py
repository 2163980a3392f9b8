"""TileLang's `tilelang.cache.binary_cache`: the base class of its per-backend binary
caches (`BinaryCache`). tilelang's kernel cache is its C++ core's (src/cache), so this
is a TileLang internal: its names import, and using one raises an error saying so."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__, internal=("BinaryCache",),
    instead="tilelang.cache (cache_dir, stats, prune, clear_cache) manages the kernel cache",
)  # fmt: skip
