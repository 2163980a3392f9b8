// Layout inference and register lowering of fragments (GPU targets).
#pragma once

#include <set>

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Gives every T.alloc_fragment buffer whose uses allow it a FragmentLayout and
// turns it into a per-thread register array; lowers the tile ops and T.Parallel
// nests that touch those fragments into per-thread code; lowers T.gemm to the
// register-accumulator tensor-core templates where it fits and swizzles the shared
// tiles they read: on sm_90a the warpgroup wgmma templates where the tiles split
// into whole warpgroups (unless `allow_wgmma` is false: pass config
// tl.disable_wgmma), else mma.sync. Fragments with uses this pass does not
// partition stay block-wide buffers in shared memory, and their ops go to the
// generic lowering after it.
PrimFunc lower_fragments(const PrimFunc& f, const Target& target, bool allow_wgmma = true);

// The gemm accumulators (and register A operands) lower_fragments will lay out for
// wgmma in `f`; empty off sm_90a. pipeline_loops asks, to keep wgmma gemms in flight.
std::set<const BufferNode*> wgmma_accumulators(const PrimFunc& f, const Target& target, bool allow_wgmma = true);

// On a T.gemm: its wgmma may still run when the call returns (one commit group in
// flight); set by pipeline_loops, which then versions its tiles and drains it.
inline constexpr const char* kWgmmaAsyncAttr = "tl.wgmma_async";

}  // namespace tl
