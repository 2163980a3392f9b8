"""TileLang's `tilelang.carver.roller`: the hints the templates of
tilelang.carver.template recommend (Hint), their rasterization plans, and the search
that ranks them (policy). TileLang's roller internals over TVM's IR (node graphs,
shape inference, bestfit) are out of scope."""

from tilelang._compat import forwarding_getattr

from . import policy, rasterization
from .hint import Hint
from .rasterization import NoRasterization, Rasterization2DColumn, Rasterization2DRow

__all__ = ["Hint", "NoRasterization", "Rasterization2DColumn", "Rasterization2DRow", "policy",
           "rasterization"]  # fmt: skip

__getattr__ = forwarding_getattr(
    "tilelang.carver.roller", internal_all=True,
    instead="use the templates of tilelang.carver.template (MatmulTemplate(...).recommend_hints())",
)  # fmt: skip
