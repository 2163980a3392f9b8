"""TileLang's `tilelang.cache.cuda_binary_cache`: how TileLang shares an nvcc-built
binary between its adapters (`CUDABinaryCache`). tilelang compiles with NVRTC in its
C++ core and caches the result there (src/cache), so this is a TileLang internal: its
names import, and using one raises an error saying so."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__, internal=("CUDABinaryCache",),
    instead="tilelang.cache (cache_dir, stats, prune, clear_cache) manages the kernel cache",
)  # fmt: skip
