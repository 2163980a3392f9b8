"""`tilelang.cuda.language.pdl`: programmatic dependent launch (sm_90+), with TileLang's
names."""

from __future__ import annotations

from tilelang.language import builder_ctx
from tilelang.language.warp import _kernel

_C = builder_ctx._C


def pdl_trigger() -> None:
    """Programmatic dependent launch: lets the next grid start (sm_90+). Grids launched
    here run one after another, so this only marks the point (a no-op elsewhere)."""
    _kernel("T.pdl_trigger").builder.evaluate(_C.call_extern("void", "tl::pdl_trigger", []))


def pdl_sync() -> None:
    """Programmatic dependent launch: waits until the previous grid's memory is
    visible (sm_90+); grids launched here already run one after another."""
    _kernel("T.pdl_sync").builder.evaluate(_C.call_extern("void", "tl::pdl_sync", []))


__all__ = ["pdl_sync", "pdl_trigger"]
