"""TileLang's `tilelang.backend`: target resolution (`backend.target.determine_target`)
is tilelang's; its backend contexts (pass pipelines and codegen registered per target
with TVM) are out of scope: the pipeline is src/transform/pipeline.cpp."""

from tilelang._compat import forwarding_getattr

from . import target
from .target import determine_target

__all__ = ["determine_target", "target"]

__getattr__ = forwarding_getattr(
    "tilelang.backend", internal_all=True,
    instead="compile with tilelang.compile / tilelang.lower (target= picks the backend)",
)  # fmt: skip
