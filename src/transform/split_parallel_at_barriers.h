// A barrier in a T.Parallel body (T.sync_threads(), T.sync_grid()) orders every
// iteration's statements before it ahead of every iteration's statements after
// it. Threads run several iterations each, so the loop is split at the barrier
// into one T.Parallel loop per part, with the barrier between them, run by the
// whole block.
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc split_parallel_at_barriers(const PrimFunc& f);

}  // namespace tl
