// T.gemm on Apple GPUs: simdgroup_matrix 8x8 tiles (every Apple GPU) or Metal 4
// cooperative tensors (target key metal4), decided per accumulator.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Path 1: an accumulator fragment all of whose gemms fit 8x8 tiles over the
// simdgroups (split by GemmWarpPolicy) becomes an array of simdgroup matrices per
// thread; T.gemm becomes simdgroup_load / simdgroup_multiply_accumulate, T.clear a
// fill, and T.copy to memory simdgroup_store (straight to device memory when the
// tile is in bounds and the dtype matches, else through a per-simdgroup staging
// tile). Every other use of the accumulator (T.Parallel, reduce, copy into
// fragments) runs on a threadgroup copy, written before and read back after it.
// Path 2 (target.has_metal4()): gemms whose tiles fit matmul2d's 16 x 32 x 16 rules
// keep their accumulator in threadgroup memory and run through
// mpp::tensor_ops::matmul2d per simdgroup. Other gemms are left for the generic
// lowering. Fragment operands of rewritten gemms move to threadgroup memory.
PrimFunc lower_simdgroup_gemm(const PrimFunc& f, const Target& target);

// The simdgroups along M for an M x N tile over `simdgroups` simdgroups under
// `policy` (0 Square, 1 FullRow, 2 FullCol) when each simdgroup's block must be a
// multiple of tm x tn; 0 when no split fits. The policy's own split is taken when
// it fits, else the squarest one that does.
int64_t simdgroup_split(int64_t m, int64_t n, int64_t simdgroups, int64_t policy, int64_t tm, int64_t tn);

}  // namespace tl
