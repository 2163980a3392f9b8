"""`tilelang.cuda.language.tir`: TVM's raw TIR builtins for CUDA instructions, which
TileLang's CUDA dialect lists (tilelang.language.tir.exports.CUDA_ONLY_TIR_EXPORTS).
TileLang's passes emit them from its tile ops; here the tile ops and the warp-level
emitter write those instructions themselves, so each name is out of scope and says
what writes its instruction instead (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang.language.tir.exports import CUDA_ONLY_TIR_EXPORTS
from tilelang.tvm._scope import refused_name

_KIND = "a raw TIR builtin of TVM's CUDA code generator"
_MMA = (
    "write T.gemm, or the warp-level emitter tilelang.intrinsics.TensorCoreIntrinEmitter "
    "(ldmatrix, mma.sync and the accumulator's stores)"
)
_INSTEAD = {
    "mma_fill": _MMA,
    "mma_store": _MMA,
    "ptx_ldmatrix": _MMA,
    "ptx_mma": _MMA,
    "ptx_mma_block_scale": "block-scaled mma is sm_120; tilelang's CUDA targets are sm_80 to sm_90a",
    "ptx_mma_sp": "write T.gemm_sp (2:4 sparse mma.sp)",
    "ptx_wgmma_ss": "write T.gemm or T.wgmma_gemm (wgmma on sm_90a)",
    "ptx_wgmma_rs": "write T.gemm or T.wgmma_gemm with A in a fragment (wgmma on sm_90a)",
    "ptx_wgmma_sp_ss": "write T.gemm_sp (wgmma.sp on sm_90a)",
    "ptx_wgmma_sp_rs": "write T.gemm_sp (wgmma.sp on sm_90a)",
    "ptx_wait_barrier": "wait on an mbarrier with T.mbarrier_wait_parity(bar, parity)",
    "ptx_fence_barrier_init": (
        "T.alloc_cluster_barrier fences its barriers' initialization for the cluster"
    ),
    "ptx_cp_async_bulk": "write T.copy or T.tma_copy (bulk copies on sm_90)",
}
_SM100 = "tcgen05 is sm_100 (Blackwell); tilelang's CUDA targets are sm_80 to sm_90a"


for _name in CUDA_ONLY_TIR_EXPORTS:
    globals()[_name] = refused_name(f"{__name__}.{_name}", _INSTEAD.get(_name, _SM100), _KIND)

__all__ = sorted(CUDA_ONLY_TIR_EXPORTS)  # noqa: PLE0605 (the names are exports.py's)
