// Index arithmetic is int32 where that is provably exact and int64 where it is not:
// every global-memory index (loads, stores, the addresses that copies, atomics and
// T.access_ptr pass on), every int32 value widened to int64 and both sides of every
// int32 comparison (the tail guards) are checked with the interval analysis, and the
// int32 operations whose range may leave int32 are recomputed in int64. Kernels whose indices fit keep their int32 code
// unchanged. The rule is written down in docs/design/reliability.md ("64-bit indexing").
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc widen_indices(const PrimFunc& f);

}  // namespace tl
