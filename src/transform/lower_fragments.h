// Layout inference and register lowering of fragments (GPU targets).
#pragma once

#include <map>
#include <set>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "layout/fragment.h"
#include "layout/layout.h"
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

// The layout lower_fragments gives each shared operand tile of the register gemms
// of `f`: the wgmma form (Layout::wgmma_swizzle) or the mma.sync one
// (Layout::swizzle). pipeline_loops asks, so that TMA writes those tiles in the
// layout their readers expect (and gives the tiles that layout itself; this pass
// checks that it agrees).
struct SharedTileLayout {
  std::shared_ptr<const Layout> layout;
  bool wgmma = false;
};
std::map<const BufferNode*, SharedTileLayout> shared_tile_layouts(const PrimFunc& f, const Target& target,
                                                                  bool allow_wgmma = true);

// The layout lower_fragments gives each fragment of `f` that keeps its registers
// (JITKernel.plot_layouts draws them).
std::map<const BufferNode*, FragmentLayoutPtr> fragment_layouts(const PrimFunc& f, const Target& target,
                                                                bool allow_wgmma = true);

}  // namespace tl
