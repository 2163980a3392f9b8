"""`tilelang.cuda.language.cluster`: the barrier of a thread block cluster
(T.Kernel(..., cluster_dims=...)) and a block's rank in it."""

from __future__ import annotations

from tilelang.language.hopper import _emit, _kernel, _marker
from tilelang.types import Expr


def _cluster_op(what, name):
    _emit(_kernel(what), _marker(name, []))


def cluster_arrive() -> None:
    """The calling thread arrives on its cluster's barrier (release: its earlier memory
    accesses are visible to the threads that pass the matching T.cluster_wait)."""
    _cluster_op("T.cluster_arrive", "cluster_arrive")


def cluster_arrive_relaxed() -> None:
    """T.cluster_arrive without ordering memory: only the meeting itself."""
    _cluster_op("T.cluster_arrive_relaxed", "cluster_arrive_relaxed")


def cluster_wait() -> None:
    """Waits until every thread of the cluster has arrived (T.cluster_arrive)."""
    _cluster_op("T.cluster_wait", "cluster_wait")


def cluster_sync() -> None:
    """A barrier of every thread of every block in the cluster (arrive, then wait)."""
    _cluster_op("T.cluster_sync", "cluster_sync")


def block_rank_in_cluster() -> Expr:
    """The calling block's rank in its cluster, 0 .. cluster size - 1 (x fastest)."""
    _kernel("T.block_rank_in_cluster")
    return _marker("block_rank_in_cluster", [], "int32")


__all__ = [
    "block_rank_in_cluster",
    "cluster_arrive",
    "cluster_arrive_relaxed",
    "cluster_sync",
    "cluster_wait",
]
