"""TileLang's classification of the vendor-specific TIR builtins by the dialect that
owns them (`tilelang.language.tir.exports`): the CUDA-only names live in
`tilelang.cuda.language.tir`, the ROCm-only ones in `tilelang.rocm.language.tir`, the
Metal-only ones in the Metal dialect, and the shared legacy names (PTX spellings both
of TileLang's GPU backends lower) in every dialect. tilelang's dialect modules list
their names by these sets (tilelang/_dialects.py)."""

CUDA_ONLY_TIR_EXPORTS = frozenset(
    {
        "mma_fill",
        "mma_store",
        "ptx_cp_async_bulk",
        "ptx_fence_barrier_init",
        "ptx_ldmatrix",
        "ptx_mma",
        "ptx_mma_block_scale",
        "ptx_mma_sp",
        "ptx_tcgen05_mma_blockscaled_ss",
        "ptx_tcgen05_mma_ss",
        "ptx_tcgen05_mma_ts",
        "ptx_wait_barrier",
        "ptx_wgmma_rs",
        "ptx_wgmma_sp_rs",
        "ptx_wgmma_sp_ss",
        "ptx_wgmma_ss",
    }
)
ROCM_ONLY_TIR_EXPORTS = frozenset(
    {"tvm_mfma", "tvm_mfma_store", "tvm_rdna_wmma", "tvm_rdna_wmma_store"}
)
METAL_ONLY_TIR_EXPORTS = frozenset(
    {
        "make_filled_simdgroup_matrix",
        "simdgroup_load",
        "simdgroup_multiply_accumulate",
        "simdgroup_store",
    }
)
SHARED_LEGACY_TIR_EXPORTS = frozenset(
    {
        "ptx_arrive_barrier",
        "ptx_arrive_barrier_expect_tx",
        "ptx_commit_group",
        "ptx_cp_async",
        "ptx_cp_async_barrier",
        "ptx_init_barrier_thread_count",
        "ptx_wait_group",
    }
)
BACKEND_ONLY_TIR_EXPORTS = CUDA_ONLY_TIR_EXPORTS | METAL_ONLY_TIR_EXPORTS | ROCM_ONLY_TIR_EXPORTS
CLASSIFIED_VENDOR_TIR_EXPORTS = BACKEND_ONLY_TIR_EXPORTS | SHARED_LEGACY_TIR_EXPORTS

__all__ = [
    "BACKEND_ONLY_TIR_EXPORTS",
    "CLASSIFIED_VENDOR_TIR_EXPORTS",
    "CUDA_ONLY_TIR_EXPORTS",
    "METAL_ONLY_TIR_EXPORTS",
    "ROCM_ONLY_TIR_EXPORTS",
    "SHARED_LEGACY_TIR_EXPORTS",
]
