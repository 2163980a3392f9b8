"""The kernel language, used as `import tilelang.language as T`: dtypes, parameter
annotations, T.Kernel, allocations, loops, tile operators and math."""

from ..layout import Fragment, Layout
from . import dtypes as _dtypes
from .allreduce import comm_reducer, tvm_thread_allreduce
from .annotations import (
    annotate_compile_flags,
    annotate_l2_hit_ratio,
    annotate_layout,
    annotate_min_blocks_per_sm,
    annotate_pass_configs,
    disable_warp_group_reg_alloc,
    func_attr,
    no_set_max_nreg,
    use_swizzle,
)
from .async_copy import async_copy, ptx_commit_group, ptx_cp_async, ptx_wait_group
from .atomic import *
from .buffer import Buffer as BufferHandle
from .buffer import PrimExpr, Region, VarBuffer
from .debug import *
from .dtypes import dtype
from .frames import Else, If, Then, attr, reads, sblock, writes
from .hopper import *
from .kernel import (
    ClusterKernel,
    CUDASourceCodeKernel,
    Kernel,
    get_block_binding,
    get_block_bindings,
    get_block_extent,
    get_block_extents,
    get_thread_binding,
    get_thread_bindings,
    get_thread_extent,
    get_thread_extents,
    import_source,
    launch_thread,
    thread_binding,
)
from .loops import (
    Parallel,
    Persistent,
    Pipelined,
    Serial,
    Unroll,
    Vectorized,
    While,
    grid,
    loop_break,
    parallel,
    serial,
    unroll,
    vectorized,
)
from .math import *
from .math import abs, max, min, pow
from .movement import annotate_safe_value, c2d_im2col, im2col, transpose
from .ops import (
    GemmWarpPolicy,
    alloc_buffer,
    alloc_fragment,
    alloc_global,
    alloc_local,
    alloc_shared,
    alloc_var,
    clear,
    copy,
    evaluate,
    fill,
    gemm,
    gemm_v2,
    named_barrier_arrive,
    sync_grid,
    sync_threads,
    tvm_storage_sync,
)
from .pointers import handle, make_tensor, match_buffer, ptr
from .prim_func import Macro, PrimFunc, Ref, macro, prim_func
from .reduce import *
from .shapes import (
    Buffer,
    FragmentBuffer,
    LocalBuffer,
    LocalTensor,
    SharedBuffer,
    SharedTensor,
    StridedTensor,
    Tensor,
    const,
    dynamic,
    empty,
    symbolic,
)
from .sparse import gemm_sp, gemm_sp_v2
from .tile_schedule import PersistentTileScheduler
from .vector import *
from .vector import __ldg
from .views import reshape, view
from .warp import *

# isort: split
# TileLang's CUDA-only parts, which live under tilelang.cuda.language as in TileLang
# (they import the modules above).
from tilelang.cuda.language.cluster import *
from tilelang.cuda.language.pdl import pdl_sync as pdl_sync
from tilelang.cuda.language.pdl import pdl_trigger as pdl_trigger
from tilelang.cuda.language.random import rng_init, rng_rand, rng_rand_float
from tilelang.cuda.language.tcgen05 import *
from tilelang.cuda.language.tir import *
from tilelang.cuda.language.warpgroup import WarpSpecialize, ws

from .hopper import wgmma_gemm as wgmma_mma  # noqa: F401 (TileLang's other name for it)

globals().update(_dtypes.DTYPES)

# TileLang's dialect name of the default T: its CUDA facade (tilelang.cuda.language is
# this module's names; here one T serves every target).
__tilelang_dialect__ = "cuda"


def __getattr__(name):
    found = _dtypes.lookup(name)
    if found is None:
        raise AttributeError(f"module 'tilelang.language' has no attribute {name!r}")
    return found


__all__ = [
    "Buffer",
    "BufferHandle",
    "CUDASourceCodeKernel",
    "ClusterKernel",
    "Else",
    "FragmentBuffer",
    "GemmWarpPolicy",
    "If",
    "Kernel",
    "LocalBuffer",
    "LocalTensor",
    "Macro",
    "Parallel",
    "Persistent",
    "Pipelined",
    "PrimExpr",
    "PrimFunc",
    "Ref",
    "Region",
    "Serial",
    "SharedBuffer",
    "SharedTensor",
    "StridedTensor",
    "Tensor",
    "Then",
    "Unroll",
    "VarBuffer",
    "Vectorized",
    "While",
    "abs",
    "alloc_buffer",
    "alloc_fragment",
    "alloc_global",
    "alloc_local",
    "alloc_shared",
    "alloc_var",
    "attr",
    "clear",
    "comm_reducer",
    "const",
    "copy",
    "dtype",
    "dynamic",
    "empty",
    "evaluate",
    "fill",
    "gemm",
    "gemm_sp",
    "gemm_sp_v2",
    "gemm_v2",
    "get_block_binding",
    "get_block_bindings",
    "get_block_extent",
    "get_block_extents",
    "get_thread_binding",
    "get_thread_bindings",
    "get_thread_extent",
    "get_thread_extents",
    "grid",
    "loop_break",
    "macro",
    "max",
    "min",
    "named_barrier_arrive",
    "parallel",
    "pow",
    "prim_func",
    "reshape",
    "serial",
    "symbolic",
    "sync_grid",
    "sync_threads",
    "tvm_storage_sync",
    "tvm_thread_allreduce",
    "unroll",
    "vectorized",
    "view",
]
__all__ += ["WarpSpecialize", "alloc_barrier", "alloc_cluster_barrier", "annotate_consumer_reg_alloc", "annotate_producer_reg_dealloc", "barrier_arrive", "barrier_wait", "block_rank_in_cluster", "cluster_arrive", "cluster_arrive_relaxed", "cluster_sync", "cluster_wait", "copy_cluster", "cp_async_barrier_noinc", "create_list_of_mbarrier", "dec_max_nreg", "inc_max_nreg", "mbarrier_arrive", "mbarrier_expect_tx", "mbarrier_wait_parity", "tma_copy", "wait_wgmma", "wgmma_gemm", "ws"]  # fmt: skip
__all__ += ["Fragment", "Layout", "annotate_layout", "annotate_safe_value", "c2d_im2col", "im2col", "transpose", "use_swizzle"]  # fmt: skip
__all__ += [
    "annotate_compile_flags",
    "annotate_l2_hit_ratio",
    "annotate_min_blocks_per_sm",
    "annotate_pass_configs",
    "disable_warp_group_reg_alloc",
    "func_attr",
    "import_source",
    "launch_thread",
    "no_set_max_nreg",
    "thread_binding",
]
__all__ += ["reads", "sblock", "writes"]
__all__ += ["handle", "make_tensor", "match_buffer", "ptr"]
__all__ += ["async_copy", "ptx_commit_group", "ptx_cp_async", "ptx_wait_group"]
__all__ += ["PersistentTileScheduler", "rng_init", "rng_rand", "rng_rand_float"]
__all__ += [
    "Broadcast",
    "Ramp",
    "Shuffle",
    "abs2",
    "add2",
    "extract_lane",
    "fma2",
    "max2",
    "min2",
    "mul2",
    "sub2",
]
__all__ += ["__ldg", "ldg32", "ldg64", "ldg128", "ldg256", "lds32", "lds64", "lds128", "stg32", "stg64", "stg128", "stg256", "sts32", "sts64", "sts128"]  # fmt: skip

# Every public name of T (the lists above name the classic surface; the star imports
# and dtypes add the rest): TileLang's CUDA dialect, tilelang.cuda.language, lists the
# same (tilelang/_dialects.py).
__all__ += [
    _name
    for _name, _value in sorted(globals().items())
    if _name.isidentifier()
    and (not _name.startswith("_") or (_name.startswith("__") and not _name.endswith("__")))
    and type(_value).__name__ != "module"
    and _name not in __all__
]
