// T.gemm_sp: the sparse tensor cores where they fit, else the decoded dense tile.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// T.gemm_sp reaches the compiler as the decoding of A's kept values and metadata
// into a dense shared tile, then a T.gemm of that tile marked kGemmSpDecoded, whose
// regions 3 and 4 are the kept values and the metadata
// (python/tilelang/language/sparse.py). On CUDA targets with mma.sync (sm_80 and
// later, sm_90a included), a gemm that mma.sp can run (the rule below,
// docs/guide/language.md "Sparse GEMM") becomes a T.gemm of the kept values marked
// kGemmSpCompressed (regions A_sparse, B, C, E; lower_fragments emits
// tl::gemm_sp_ss), and the decoding statements and the dense tile go. On sm_90a
// this beats decoding A and running the dense wgmma about 2x on an H100
// (bench/RESULTS.md "gemm_sp_cuda — 2026-12-05": 361.6 vs 104.0-168.2 TFLOP/s at
// 4096^3, 382.0 vs 171.6 at 8192^3), and lower_fragments runs it on
// wgmma.mma_async.sp where the dense wgmma's rule fits (1.6-1.9x mma.sp on an H100,
// "gemm_sp_cuda — 2026-12-06"; the pass config tl.gemm_sp_wgmma=False keeps mma.sp;
// docs/design/cuda_lowering.md). Every other
// T.gemm_sp keeps the decoding and a plain T.gemm (wgmma where the kernel's gemms
// take it); the choice and its reason are logged at debug level. The rule: float16
// or bfloat16 A and B into float32 (mma.sp m16n8k32), or int8 / uint8 (both the
// same) into int32 and fp8 on sm_89 into float32 (mma.sp m16n8k64), C a register
// fragment of whole 2-d shape, A_sparse, B and E in shared memory, K a multiple of
// 32 (64 for 8-bit operands), the block whole warps that split C into m16 x n16 warp
// tiles under the gemm's policy (or, where wgmma.sp may take it, whole warpgroups and
// C of 64-row by 16-column multiples), and A_sparse / B rows a whole number of 16-byte
// chunks.
//
// A_sparse in a register fragment runs on wgmma.mma_async.sp with A from registers
// where `sparse_wgmma` (tl.gemm_sp_wgmma on, wgmma allowed, sm_90a) and the register
// rule of the dense wgmma holds (16-bit, untransposed, whole, every warpgroup along
// M); else it keeps the decoding.
PrimFunc select_gemm_sp(const PrimFunc& f, const Target& target, bool sparse_wgmma);

}  // namespace tl
