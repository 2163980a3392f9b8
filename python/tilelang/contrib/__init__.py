"""TileLang's `tilelang.contrib` helpers that kernels and their scripts import:
`tilelang.contrib.nvcc` (compute capabilities of CUDA targets and GPUs)."""

from . import nvcc

__all__ = ["nvcc"]
