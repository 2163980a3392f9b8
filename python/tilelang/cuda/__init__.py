"""TileLang's `tilelang.cuda`: the CUDA dialect's modules. `tilelang.cuda.intrinsics`
is the warp-level tensor-core emitter and its layouts (tilelang.intrinsics), and
`tilelang.cuda.language` is tilelang.language (every T name works on CUDA). TileLang's
CUDA backend internals (its GEMM implementation classes, pass pipeline, NVCC/NVRTC
wrappers) are TVM-side code that tilelang does not have; their names raise an error
saying so (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang._compat import forwarding_getattr

from . import intrinsics, language

__all__ = ["intrinsics", "language"]

__getattr__ = forwarding_getattr(
    "tilelang.cuda",
    internal=("backend", "pipeline", "op", "target", "codegen", "debug", "transform"),
    instead="compile with tilelang.compile and read kernel.get_kernel_source()",
)
