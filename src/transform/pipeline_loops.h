// Multi-stage software pipelines for T.Pipelined loops (the CUDA target; the cpu and
// Metal targets run them as the serial loops they are). The phases live in
// src/transform/pipeline_loops/ (plan.h); how TMA does one copy, in tma_copy.h.
#pragma once

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"
#include "transform/pass_config.h"

namespace tl {

class LayoutFacts;  // transform/lower_fragments.h

// T.Pipelined loops become software pipelines. With order=/stage=/group= the
// statements run where the user put them (unit u of iteration k in step
// k + stage[u], at position order[u]); without them, for num_stages = S >= 2, the
// leading copies from global into shared tiles run S - 1 iterations ahead of the
// rest. Copies into shared tiles become asynchronous (cp.async on sm_80+) and their
// tiles get one version per step between the copy and its last reader. Loops whose
// default schedule does not apply are left as they are (correct, not overlapped);
// by-hand schedules that break a dependence are user errors.
// On sm_90a (unless `configs.wgmma` is false), a gemm whose wgmma can stay in flight
// into the next step (see kWgmmaAsyncAttr) reads its tiles one step earlier and
// keeps them one step longer; the loop drains it with tl::wgmma_wait<0>().
// On targets with TMA (sm_90+, unless `configs.tma_lower` is false: pass config
// tl.disable_tma_lower), a copy whose source is a tensor parameter and whose box
// and shared layout TMA can produce is one tl::tma_load per box instead, issued by
// thread 0 and completing on an mbarrier per version of its tiles, which the
// readers wait on (docs/design/hopper.md).
// With `configs.warp_specialized` (sm_90a, unless pass config tl.disable_warp_specialized), the
// first such loop at the top of a kernel whose copies are all TMA copies is
// warp-specialized: an extra producer warpgroup issues the copies, the block's own
// threads consume (src/transform/warp_specialize.cpp does the split). In a kernel
// with thread block clusters, such a loop multicasts the tiles every block of a
// cluster loads alike, unless `configs.tma_multicast` is false (pass config
// tl.disable_tma_multicast).
// The wgmma gemms and the layouts of the tiles TMA fills are those of `facts`, the
// layout inference lower_fragments lowers by (its target is the one compiled for).
PrimFunc pipeline_loops(const PrimFunc& f, LayoutFacts& facts, const PassConfig& configs = {});

}  // namespace tl
