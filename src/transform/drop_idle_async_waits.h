// T.ptx_commit_group / T.ptx_wait_group in a kernel that issues no cp.async itself
// (CUDA). There, every cp.async in flight is one the compiler issued for a T.copy (or
// T.async_copy, which is T.copy from global to shared memory): T.Pipelined's
// prefetches, which the pipeline's own waits complete before their tiles are read.
// The hand-written group calls then wait for nothing of the kernel's own; left in a
// pipelined loop, a `T.ptx_wait_group(0)` after a T.async_copy would wait for the
// prefetch of the next stages too and undo the pipeline (TileLang's pipeliner folds
// such a wait into the copy it follows).
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// In each T.Kernel whose body has no tl::cp_async_gs / tl::cp_async_gs_conditional
// call (T.ptx_cp_async), removes the tl::cp_async_commit and tl::cp_async_wait<n>
// calls (T.ptx_commit_group, T.ptx_wait_group). Runs before pipeline_loops, which
// issues the compiler's own cp.async copies, commits and waits. On an arch without TMA
// (before sm_90) it also removes T.tma_store_arrive / T.tma_store_wait: no store there
// is a bulk group.
PrimFunc drop_idle_async_waits(const PrimFunc& f, const Target& t);

}  // namespace tl
