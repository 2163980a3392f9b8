// T.gemm_sp: the sparse tensor cores where they fit, else the decoded dense tile.
#pragma once

#include "ir/ir.h"
#include "target/target.h"
#include "transform/pass_config.h"

namespace tl {

// T.gemm_sp reaches the compiler as the decoding of A's kept values and metadata
// into a dense shared tile, then a T.gemm of that tile marked kGemmSpDecoded, whose
// regions 3 and 4 are the kept values and the metadata
// (python/tilelang/language/sparse.py). On CUDA targets with mma.sync whose gemms
// do not take wgmma (sm_80 .. sm_89, and sm_90a with tl.disable_wgmma), a gemm
// that mma.sp m16n8k32 can run (the rule below, docs/user_guide.md "Sparse GEMM")
// becomes a T.gemm of the kept values marked kGemmSpCompressed (regions A_sparse,
// B, C, E; lower_fragments emits tl::gemm_sp_ss), and the decoding statements and
// the dense tile go. Every other T.gemm_sp keeps the decoding and a plain T.gemm;
// the choice and its reason are logged at debug level. The rule: float16 or
// bfloat16 A and B, a float32 register fragment C of whole 2-d shape, A_sparse, B
// and E in shared memory, K a multiple of 32, the block whole warps that split C
// into m16 x n16 warp tiles under the gemm's policy, and A_sparse / B rows a
// whole number of 16-byte chunks.
PrimFunc select_gemm_sp(const PrimFunc& f, const Target& target, const PassConfig& configs);

}  // namespace tl
