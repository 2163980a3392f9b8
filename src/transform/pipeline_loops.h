// Multi-stage software pipelines for T.Pipelined loops (the CUDA target; the cpu and
// Metal targets run them as the serial loops they are).
#pragma once

#include <optional>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"
#include "transform/lower_fragments.h"
#include "transform/pass_config.h"

namespace tl {

// The tensor parameter a kTmaMapCall names; nullopt when `c` is not one (or null).
std::optional<int64_t> tma_map_param(const CallNode* c);

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
PrimFunc pipeline_loops(const PrimFunc& f, const Target& target, const PassConfig& configs = {});

// A copy TMA does, outside a pipeline (T.tma_copy, src/transform/lower_explicit_hopper.cpp):
// the tl::tma_load calls of `copy` (a region of a tensor parameter into a whole shared
// tile, planned as a pipeline producer) completing on the mbarrier address `bar`, the
// bytes they bring, and the layout they write the tile in (null: plain). nullopt when
// TMA cannot do the copy. `layouts` as from shared_tile_layouts.
struct TmaTileLoads {
  Stmt loads;
  int64_t bytes = 0;
  std::shared_ptr<const Layout> layout;
};
std::optional<TmaTileLoads> tma_tile_loads(const TileOpNode* copy, const Expr& bar, const KernelLaunchNode* launch,
                                           const std::vector<Param>& params,
                                           const std::map<const BufferNode*, SharedTileLayout>& layouts);

// Whether a TMA box may start at innermost coordinate `start` of a `dtype` tensor:
// when it is a provable multiple of 16 bytes. The H200 stops a copy at any other
// start with an illegal instruction (measured 2026-12-01), which the tensor map
// cannot refuse, so the pipelines keep cp.async for such copies.
bool tma_inner_start_aligned(const Expr& start, DataType dtype);

// Whether every coordinate into `tensor` fits the signed 32 bits that TMA instructions
// take: each dimension is at most 2^31 - 1 (a constant, or an int32 symbolic size,
// which the runtime bounds). Other tensors keep cp.async (docs/design/reliability.md).
bool tma_coordinates_fit(const Buffer& tensor);

// A store TMA does (src/transform/lower_tma_stores.cpp): the tl::tma_store calls of
// `copy`, from a whole shared tile to a region of a tensor parameter, with the
// eligibility, boxes, map and swizzle of the load in the other direction. nullopt
// when TMA cannot do the copy. `layouts` as from shared_tile_layouts. `add`: the
// boxes are added to the tensor's elements (tl::tma_reduce_add) instead.
std::optional<Stmt> tma_tile_stores(const TileOpNode* copy, const KernelLaunchNode* launch,
                                    const std::vector<Param>& params,
                                    const std::map<const BufferNode*, SharedTileLayout>& layouts, bool add);

}  // namespace tl
