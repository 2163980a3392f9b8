"""`tilelang.cuda.language.warpgroup`: warp-specialized regions, `with T.ws(*groups):`
(TileLang's T.WarpSpecialize). A region's threads are whole warpgroups of 128."""

from __future__ import annotations

from typing import Any

from tilelang.language import builder_ctx
from tilelang.language.builder_ctx import frontend_error
from tilelang.language.hopper import (
    WARP_GROUP_FRAME,
    WARPGROUP,
    _block_threads,
    _describe,
    _kernel,
    _marker,
)

_C = builder_ctx._C


class ws:
    """`with T.ws(*groups):` the body runs only on the threads of the given warpgroups
    (warpgroup g: threads [128 g, 128 g + 128)). Inside, fragments, T.Parallel loops, tile
    ops and T.gemm are spread over the region's threads and T.sync_threads is a barrier of
    those threads only. The groups are consecutive and the first is a multiple of their
    number (ws(0), ws(1), ws(2, 3) ...)."""

    __tl_with__ = True

    def __init__(self, *warp_group_ids: Any) -> None:
        what = "T.ws"
        ctx = _kernel(what)
        ids: Any = warp_group_ids
        if len(ids) == 1 and isinstance(ids[0], (list, tuple)):
            ids = ids[0]  # T.ws([0, 1])
        ids = list(ids)
        if not ids:
            raise frontend_error(f"{what} needs at least one warpgroup index, such as T.ws(0)")
        for g in ids:
            if isinstance(g, bool) or not isinstance(g, int) or g < 0:
                raise frontend_error(
                    f"{what} warpgroup indices must be non-negative Python ints, got {_describe(g)}"
                )
        ids = sorted(set(ids))
        threads = _block_threads(ctx)
        if ids != list(range(ids[0], ids[0] + len(ids))):
            raise frontend_error(f"{what} warpgroups must be consecutive, got {ids}")
        if ids[0] % len(ids) != 0:
            raise frontend_error(
                f"{what}: a region of {len(ids)} warpgroups must start at a multiple of {len(ids)} "
                f"(its gemms split the warpgroups from there), got warpgroups {ids}"
            )
        if WARPGROUP * (ids[-1] + 1) > threads:
            raise frontend_error(
                f"{what}({', '.join(map(str, ids))}) needs threads up to {WARPGROUP * (ids[-1] + 1)}, but the "
                f"kernel has {threads} (warpgroups of {WARPGROUP} threads: 0..{threads // WARPGROUP - 1})"
            )
        self.first = WARPGROUP * ids[0]
        self.count = WARPGROUP * len(ids)

    def __enter__(self):
        ctx = _kernel("T.ws")
        if WARP_GROUP_FRAME in ctx.frames:
            raise frontend_error("T.ws regions do not nest: close the outer `with T.ws(...)` first")
        cond = _marker("ws", [_C.const(self.first, "int32"), _C.const(self.count, "int32")], "bool")
        ctx.builder.begin_if(cond)
        ctx.frames.append(WARP_GROUP_FRAME)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        ctx = builder_ctx.current("T.ws")
        ctx.frames.pop()
        ctx.builder.end_if()
        return False


WarpSpecialize = ws

__all__ = ["WarpSpecialize", "ws"]
