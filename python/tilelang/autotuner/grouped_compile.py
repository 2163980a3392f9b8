"""TileLang's `tilelang.autotuner.grouped_compile`: compiling several configs into one
TVM module. tilelang's autotuner compiles each config in a worker process of its pool
(autotuner/compile_pool.py), so these names raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

# TileLang's names of the module (only these: `import tilelang` loads it, and pickle probes
# every loaded module for arbitrary names, which must stay AttributeErrors).
__getattr__ = forwarding_getattr(
    __name__,
    internal=("CompileUnitResult", "compile_grouped_unit_tvm_ffi"),
    instead="AutoTuner.run compiles configs in parallel itself",
)
