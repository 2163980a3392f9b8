// Hopper control written by hand (python/tilelang/language/hopper.py): warpgroup
// regions (T.ws), mbarriers (T.alloc_barrier, T.barrier_arrive / _wait,
// T.mbarrier_expect_tx), TMA copies that complete on a user's mbarrier
// (T.tma_copy) and wgmma gemms left in flight (T.wgmma_gemm, T.wait_wgmma).
#pragma once

#include <utility>

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// The frontend writes these as `call_extern` markers (and T.tma_copy / T.wgmma_gemm
// as tile ops with the attributes below); this pass, which runs for every target
// before the target's own passes, turns them into device calls on sm_90+ and refuses
// them elsewhere.
inline constexpr const char* kExplicitPrefix = "tl.hopper.";
// On a T.copy: it is a T.tma_copy completing on this mbarrier (an element load).
inline constexpr const char* kTmaBarrierAttr = "tl.tma_barrier";
// On a T.gemm: it is a T.wgmma_gemm (wgmma only, left in flight).
inline constexpr const char* kWgmmaExplicitAttr = "tl.wgmma_explicit";

// Around the `if` of a T.ws region: {first thread, thread count}. Code inside runs
// on those threads only: lower_fragments lays out the region's fragments over them,
// block ops spread over them and block barriers become named barriers of them.
inline constexpr const char* kWarpGroupAttr = "tl.warp_group";

// The threads [first, first + count) of a kWarpGroupAttr, or {0, 0} for another attribute.
std::pair<int64_t, int64_t> warp_group_range(const AttrNode* op);

// The shared tile of a TMA call: the one tl::tma_load writes (`*loads` set to true)
// or the one tl::tma_store / tl::tma_reduce_add reads; undefined for any other call
// (or nullptr).
Buffer tma_call_tile(const CallNode* c, bool* loads = nullptr);

PrimFunc lower_explicit_hopper(const PrimFunc& f, const Target& target, bool allow_wgmma = true);

}  // namespace tl
