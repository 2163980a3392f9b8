// Layout inference and register lowering of fragments (GPU targets).
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Gives every T.alloc_fragment buffer whose uses allow it a FragmentLayout and
// turns it into a per-thread register array; lowers the tile ops and T.Parallel
// nests that touch those fragments into per-thread code; lowers T.gemm to the
// register-accumulator tensor-core templates where it fits and swizzles the shared
// tiles they read. Fragments with uses this pass does not partition stay block-wide
// buffers in shared memory, and their ops go to the generic lowering after it.
PrimFunc lower_fragments(const PrimFunc& f, const Target& target);

}  // namespace tl
