"""`T.PersistentTileScheduler`: TileLang's tile order for persistent kernels, in plain
Python over the language's own pieces. A grid of `num_m_tiles x num_n_tiles` tiles is
walked in a linear order that worker w visits at w, w + num_workers, ...; the order is
column-major (M fastest) or row-major, optionally in panels of `swizzle_size` tiles of
the slow axis (CUTLASS's threadblock swizzle), optionally with M grouped into clusters
of `cluster_size` rows (the scheduler then yields cluster rows).

The stateful form keeps the current tile in `T.alloc_var` scalars (`{name}_m_idx`,
`{name}_n_idx`, `{name}_linear_idx`, `{name}_current_iter`) for a
`while sched.valid(): ... sched.next_tile()` loop; the stateless form
(`stateful=False`) only decodes a tile index, `sched.coord(tile_id) -> (m, n)`.
"""

from __future__ import annotations

from typing import Any

from tilelang.types import Expr, ExprLike

from . import builder_ctx
from .builder_ctx import frontend_error
from .math import ceildiv
from .math import max as tl_max
from .math import min as tl_min
from .ops import alloc_var

_STATE = ("m_idx", "n_idx", "linear_idx", "current_iter")


def _positive_int(what, name, x):
    if isinstance(x, bool) or not isinstance(x, int) or x < 1:
        raise frontend_error(f"{what}: {name} must be a positive Python int, got {x!r}")
    return x


class PersistentTileScheduler:
    """Tile coordinates for a persistent kernel; see the module's description."""

    def __init__(
        self,
        num_m_tiles: ExprLike,
        num_n_tiles: ExprLike,
        num_workers: ExprLike | None = None,
        swizzle_size: int = 1,
        column_major: bool = True,
        cluster_size: int = 1,
        stateful: Any = True,
        name: str | None = None,
    ) -> None:
        what = "T.PersistentTileScheduler"
        self.cluster_size = _positive_int(what, "cluster_size", cluster_size)
        self.swizzle_size = _positive_int(what, "swizzle_size", swizzle_size)
        if num_workers is None:
            from ..carver.arch import driver

            num_workers = max(1, driver.get_num_sms() // cluster_size)
        self.num_workers = num_workers
        self._column_major = bool(column_major)
        self._stateful = bool(stateful)
        m_clusters = ceildiv(num_m_tiles, cluster_size)
        self._total_tiles = m_clusters * num_n_tiles
        self._primary, self._secondary = (
            (m_clusters, num_n_tiles) if column_major else (num_n_tiles, m_clusters)
        )
        self._vars = {}
        if self._stateful:
            ctx = builder_ctx.current(what)
            for field in _STATE:
                ctx.pending_name = f"{name}_{field}" if name else field
                self._vars[field] = alloc_var("int32")

    # ---- state, read as scalar expressions
    def _state(self, field):
        if not self._stateful:
            raise frontend_error(
                f"T.PersistentTileScheduler(stateful=False) keeps no {field}; decode a tile "
                "index with sched.coord(tile_id), or build the scheduler with stateful=True"
            )
        return self._vars[field]

    @property
    def m_idx(self) -> Expr:
        return self._state("m_idx")[0]

    @property
    def n_idx(self) -> Expr:
        return self._state("n_idx")[0]

    @property
    def linear_idx(self) -> Expr:
        return self._state("linear_idx")[0]

    @property
    def current_iter(self) -> Expr:
        """How many tiles this worker has moved past (0 on the first)."""
        return self._state("current_iter")[0]

    # ---- the walk
    def coord(self, tile_id: ExprLike) -> Expr:
        """(m, n) of linear tile `tile_id`: m is the cluster row when cluster_size > 1."""
        primary, secondary, swizzle = self._primary, self._secondary, self.swizzle_size
        panel = primary * swizzle
        group = tile_id // panel
        base = group * swizzle
        # The last panel may be narrower; at least 1, so an index past the end decodes.
        width = tl_max(1, tl_min(swizzle, secondary - base))
        in_group = tile_id - group * panel
        fast = in_group // width
        slow = base + in_group % width
        return (fast, slow) if self._column_major else (slow, fast)

    def _move_to(self, linear):
        m, n = self.coord(linear)
        self._state("m_idx")[0] = m
        self._state("n_idx")[0] = n

    def init(self, worker_id: ExprLike) -> None:
        """Starts this worker at its first tile, linear index `worker_id`."""
        self._state("current_iter")[0] = 0
        self._state("linear_idx")[0] = worker_id
        self._move_to(self.linear_idx)

    def next_tile(self) -> None:
        """Moves this worker `num_workers` tiles on."""
        self._state("current_iter")[0] = self.current_iter + 1
        self._state("linear_idx")[0] = self.linear_idx + self.num_workers
        self._move_to(self.linear_idx)

    def valid(self) -> Expr:
        """Whether the current tile lies in the grid."""
        return self.linear_idx < self._total_tiles


__all__ = ["PersistentTileScheduler"]
