"""TileLang's `tilelang.engine`: lower (source and parameters without a build), the
kernel parameter type and the CUDA source post-processing callbacks."""

from .callback import register_cuda_postproc, register_cuda_postproc_callback  # noqa: F401
from .lower import CompiledArtifact, lower  # noqa: F401


def __getattr__(name):
    if name == "KernelParam":  # imported late: the jit imports this package while it loads
        from .param import KernelParam

        return KernelParam
    raise AttributeError(f"module 'tilelang.engine' has no attribute {name!r}")
