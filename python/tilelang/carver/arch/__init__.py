"""TileLang's `tilelang.carver.arch`: the devices tiles are sized for (CUDA, CDNA,
METAL, CPU, auto_infer_current_arch, get_arch) and device queries (`driver`)."""

from . import driver
from .device import (
    CDNA,
    CPU,
    CUDA,
    METAL,
    TensorInstruction,
    TileDevice,
    auto_infer_current_arch,
    get_arch,
    has_mma_support,
    is_ampere_arch,
    is_cdna_arch,
    is_cpu_arch,
    is_cuda_arch,
    is_hopper_arch,
    is_metal_arch,
)

__all__ = ["CDNA", "CPU", "CUDA", "METAL", "TensorInstruction", "TileDevice", "auto_infer_current_arch",
           "driver", "get_arch", "has_mma_support", "is_ampere_arch", "is_cdna_arch", "is_cpu_arch",
           "is_cuda_arch", "is_hopper_arch", "is_metal_arch"]  # fmt: skip
