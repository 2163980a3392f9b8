"""TileLang's `tilelang.autotuner.grouped_compile`: compiling several configs into one
TVM module. tilelang's autotuner compiles each config in a worker process of its pool
(autotuner/compile_pool.py), so these names raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__, internal_all=True, instead="AutoTuner.run compiles configs in parallel itself"
)
