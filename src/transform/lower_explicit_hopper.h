// Hopper control written by hand (python/tilelang/language/hopper.py): warpgroup
// regions (T.ws), mbarriers (T.alloc_barrier, T.barrier_arrive / _wait,
// T.mbarrier_expect_tx), TMA copies that complete on a user's mbarrier
// (T.tma_copy) and wgmma gemms left in flight (T.wgmma_gemm, T.wait_wgmma).
#pragma once

#include <utility>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tl {

class LayoutFacts;  // transform/lower_fragments.h

// The threads [first, first + count) of a kWarpGroupAttr, or {0, 0} for another attribute.
std::pair<int64_t, int64_t> warp_group_range(const AttrNode* op);

// The shared tile of a TMA call: the one tl::tma_load writes (`*loads` set to true)
// or the one tl::tma_store / tl::tma_store_add reads; undefined for any other call
// (or nullptr).
Buffer tma_call_tile(const CallNode* c, bool* loads = nullptr);

// The frontend writes explicit Hopper control as call_extern markers named
// kExplicitPrefix + name (and T.tma_copy / T.wgmma_gemm as tile ops annotated with
// kTmaBarrierAttr / kWgmmaExplicitAttr, ir/attr_keys.def); this pass, which runs for
// every target before the target's own passes, turns them into device calls on sm_90+
// and refuses them elsewhere. The shared layouts and wgmma gemms it lowers by are
// those of `facts` (its target is the one compiled for); `allow_wgmma` false: the
// pass config tl.disable_wgmma.
PrimFunc lower_explicit_hopper(const PrimFunc& input, LayoutFacts& facts, bool allow_wgmma = true);

}  // namespace tl
