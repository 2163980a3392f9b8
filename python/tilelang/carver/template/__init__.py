"""TileLang's `tilelang.carver.template`: describe an operator (shapes, dtypes), give it
a device (`.with_arch(CUDA("cuda"))`) and ask for ranked tile configs
(`.recommend_hints(topk)`), which become @tilelang.autotune(configs=...) entries."""

from tilelang._compat import forwarding_getattr

from .templates import (
    BaseTemplate,
    FlashAttentionTemplate,
    GEMVTemplate,
    GeneralReductionTemplate,
    MatmulTemplate,
)

__all__ = ["BaseTemplate", "FlashAttentionTemplate", "GEMVTemplate", "GeneralReductionTemplate",
           "MatmulTemplate"]  # fmt: skip

__getattr__ = forwarding_getattr(
    "tilelang.carver.template", internal_all=True,
    instead="MatmulTemplate, GEMVTemplate, GeneralReductionTemplate and FlashAttentionTemplate "
    "are provided; list other configs for @tilelang.autotune(configs=...) by hand",
)  # fmt: skip
