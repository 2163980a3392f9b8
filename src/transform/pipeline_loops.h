// Multi-stage software pipelines for T.Pipelined loops (GPU targets).
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// The attribute on a producer copy of a pipelined loop: it may complete
// asynchronously (cp.async); the loop's own wait and barrier order it.
inline constexpr const char* kAsyncCopyAttr = "tl.async_copy";

// The TMA tensor map a tl::tma_load reads through (device/cuda/tma.cuh), as that
// argument of the call: call_extern(handle, "tl.tma_map", {tensor parameter index,
// swizzle bytes, dynamic dims bitmask, box innermost first...}). The code generator
// makes each distinct one a `const __grid_constant__ tl::TensorMap` kernel
// parameter (src/codegen/cuda), which the runtime encodes at every launch.
inline constexpr const char* kTmaMapCall = "tl.tma_map";

// T.Pipelined loops become software pipelines. With order=/stage=/group= the
// statements run where the user put them (unit u of iteration k in step
// k + stage[u], at position order[u]); without them, for num_stages = S >= 2, the
// leading copies from global into shared tiles run S - 1 iterations ahead of the
// rest. Copies into shared tiles become asynchronous (cp.async on sm_80+) and their
// tiles get one version per step between the copy and its last reader. Loops whose
// default schedule does not apply are left as they are (correct, not overlapped);
// by-hand schedules that break a dependence are user errors.
// On sm_90a (unless `allow_wgmma` is false), a gemm whose wgmma can stay in flight
// into the next step (see kWgmmaAsyncAttr) reads its tiles one step earlier and
// keeps them one step longer; the loop drains it with tl::wgmma_wait<0>().
// On targets with TMA (sm_90+, unless `allow_tma` is false: pass config
// tl.disable_tma_lower), a copy whose source is a tensor parameter and whose box
// and shared layout TMA can produce is one tl::tma_load per box instead, issued by
// thread 0 and completing on an mbarrier per version of its tiles, which the
// readers wait on (docs/design/hopper.md).
PrimFunc pipeline_loops(const PrimFunc& f, const Target& target, bool allow_wgmma = true, bool allow_tma = true);

}  // namespace tl
