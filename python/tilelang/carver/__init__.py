"""TileLang's `tilelang.carver`: the devices tiles are sized for (`arch`: CUDA, CDNA,
METAL, CPU and driver queries) and the operator templates that rank tile configs for
them (`template`, with the hints and search of `roller`)."""

from .arch import auto_infer_current_arch, get_arch
from .template import (
    FlashAttentionTemplate,
    GEMVTemplate,
    GeneralReductionTemplate,
    MatmulTemplate,
)

__all__ = ["FlashAttentionTemplate", "GEMVTemplate", "GeneralReductionTemplate", "MatmulTemplate",
           "auto_infer_current_arch", "get_arch"]  # fmt: skip
