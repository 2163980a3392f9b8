// T.reduce over threadgroup memory on Metal: one simdgroup per row, its lanes
// striding over the row and combining with simd_sum / simd_max / ... .
#pragma once

#include "ir/ir.h"

namespace tl {

// Rewrites every T.reduce left after layout inference (its operands are in shared
// memory or block-wide fragments) that folds the last dim of its source with sum,
// abssum, max, min, absmax or a bitwise kind, into per-thread code: simdgroup s
// takes rows s, s + S, ...; each lane folds columns lane, lane + 32, ...; a simd
// reduction combines the lanes and lane 0 writes the row's result. Other reductions
// (another dim, 64-bit types, a threadgroup that is not whole simdgroups) are left
// for the generic lowering.
PrimFunc lower_simd_reduce(const PrimFunc& f);

}  // namespace tl
