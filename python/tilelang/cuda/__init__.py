"""TileLang's `tilelang.cuda`: the CUDA dialect's modules. `tilelang.cuda.intrinsics`
is the warp-level tensor-core emitter and its layouts (tilelang.intrinsics),
`tilelang.cuda.language` is the CUDA dialect of T (tilelang.language's names) and
`tilelang.cuda.debug` has T.device_assert and T.print. TileLang's CUDA backend
internals (its GEMM implementation classes, pass pipeline, NVCC/NVRTC wrappers) are
TVM-side code that tilelang does not have; their names raise an error saying so
(docs/design/tilelang_compat.md, "Out of scope"). The submodules load when first
asked for (tilelang.language imports some of tilelang.cuda.language's)."""

import importlib

__all__ = ["debug", "intrinsics", "language"]
_INTERNAL = ("backend", "pipeline", "op", "target", "codegen", "transform")


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    from tilelang._compat import forwarding_getattr

    return forwarding_getattr(
        "tilelang.cuda", internal=_INTERNAL,
        instead="compile with tilelang.compile and read kernel.get_kernel_source()",
    )(name)  # fmt: skip
