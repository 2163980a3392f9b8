// Two adjacent stores of one pair on CUDA: `C[i] = A[j] op B[k]; C[i + 1] = A[j + 1]
// op B[k + 1]` (a T.Ramp vector's lanes, T.add2 ... T.abs2) of float16, bfloat16 or
// float32, with op an add, sub, mul, max, min (or an abs of one load, or an fma of three
// loads: T.fma2), become one call
// of the packed-pair function, `tl::add2<tl::__half2>(&C[i], &A[j], &B[k])`
// (device/cuda/packed.cuh), which rounds each lane as the stores do. Only tensors and
// local arrays (a shared-memory access stays an element access the emulation's race
// detector sees), contiguous along the last index, and only where the second store's
// loads cannot read what the first stored (another buffer, or the same element).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc pair_lane_stores(const PrimFunc& f);

}  // namespace tl
