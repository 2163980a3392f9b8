// Layout inference and register lowering of fragments (GPU targets).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "layout/fragment.h"
#include "layout/layout.h"
#include "target/target.h"

namespace tl {

// The layout a shared operand tile of a register gemm gets: the wgmma form
// (Layout::wgmma_swizzle) or the mma.sync one (Layout::swizzle).
struct SharedTileLayout {
  std::shared_ptr<const Layout> layout;
  bool wgmma = false;
};

namespace fragments {
struct KernelPlan;
}

// Layout inference of a function's T.Kernel blocks, run once per kernel: the passes
// before lower_fragments (lower_explicit_hopper, pipeline_loops, lower_tma_stores)
// read the choices it will lower by, and lower_fragments lowers by the same plan.
// lower() keeps one for the whole pass list. A kernel is inferred the first time a
// pass asks about it; a pass that rewrites it makes a new kernel node (IR is
// immutable), which is inferred again when asked about, and a kernel no pass
// changed keeps its plan. The functions asked about are kept alive, so a node's
// address names one kernel for the object's lifetime.
class LayoutFacts {
 public:
  // For `target`; `allow_wgmma` false: the pass config tl.disable_wgmma;
  // `gemm_sp_wgmma`: the pass config tl.gemm_sp_wgmma (T.gemm_sp on wgmma.sp).
  LayoutFacts(const Target& target, bool allow_wgmma = true, bool gemm_sp_wgmma = true);
  ~LayoutFacts();
  LayoutFacts(const LayoutFacts&) = delete;
  LayoutFacts& operator=(const LayoutFacts&) = delete;

  // The gemm accumulators (and register A operands) laid out for wgmma in `f`;
  // empty off sm_90a. pipeline_loops keeps those gemms in flight.
  std::set<const BufferNode*> wgmma_accumulators(const PrimFunc& f);
  // The layout of each shared operand tile of the register gemms of `f`, and of the
  // tiles only stored to global memory: TMA writes them in the layout their readers
  // expect (pipeline_loops, lower_tma_stores give the tiles that layout themselves).
  std::map<const BufferNode*, SharedTileLayout> shared_tile_layouts(const PrimFunc& f);
  // The layout of each fragment of `f` that keeps its registers (JITKernel.plot_layouts
  // draws them).
  std::map<const BufferNode*, FragmentLayoutPtr> fragment_layouts(const PrimFunc& f);
  // The plan of kernel `op` of `f` (lower_fragments).
  const fragments::KernelPlan& plan(const PrimFunc& f, const KernelLaunchNode* op);

  const Target& target() const { return target_; }
  // How many kernels were inferred (TILELANG_TIME_PASSES prints it).
  int64_t inferences() const { return inferences_; }

 private:
  const Target& target_;
  bool wgmma_;
  bool gemm_sp_wgmma_;
  std::vector<Stmt> seen_;  // the bodies asked about: they keep the kernels of plans_ alive
  std::map<const KernelLaunchNode*, std::unique_ptr<fragments::KernelPlan>> plans_;
  int64_t inferences_ = 0;
};

// Gives every T.alloc_fragment buffer whose uses allow it a FragmentLayout and
// turns it into a per-thread register array; lowers the tile ops and T.Parallel
// nests that touch those fragments into per-thread code; lowers T.gemm to the
// register-accumulator tensor-core templates where it fits and swizzles the shared
// tiles they read: on sm_90a the warpgroup wgmma templates where the tiles split
// into whole warpgroups (unless `allow_wgmma` is false: pass config
// tl.disable_wgmma), else mma.sync. Fragments with uses this pass does not
// partition stay block-wide buffers in shared memory, and their ops go to the
// generic lowering after it.
PrimFunc lower_fragments(const PrimFunc& f, LayoutFacts& facts);
PrimFunc lower_fragments(const PrimFunc& f, const Target& target, bool allow_wgmma = true);

}  // namespace tl
