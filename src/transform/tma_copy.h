// How TMA does one copy between a region of a tensor parameter and a whole shared
// tile: its tensor map, its boxes and the swizzle it writes (docs/design/hopper.md).
// The pipelines' producers (pipeline_loops), T.tma_copy (lower_explicit_hopper) and
// the TMA stores (lower_tma_stores) all plan their copies here, so that their tiles,
// maps and swizzles agree.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "ir/ir.h"
#include "transform/lower_fragments.h"

namespace tl {

// A copy TMA does: the map it reads through, and the boxes its tile splits into (one,
// or one per column block of a wgmma tile wider than its swizzle).
struct TmaCopy {
  Expr map;  // the kTmaMapCall
  int64_t blocks = 1;
  int64_t block_cols = 0;  // the tile's last-dim elements per box
  int64_t bytes = 0;       // of the whole tile: what its loads bring to the mbarrier
  std::shared_ptr<const Layout> layout;
  // Multicast in a thread block cluster (plan_multicast in pipeline_loops/ws_choice.cpp):
  // the `ctas` blocks that share the tile each load `slice_rows` rows of it (global
  // dimension `row_dim`), slice `slice` (the block's rank among them), through
  // `slice_map` and multicast them to the blocks of `mask`; `ctas` is 0 when the copy
  // is the block's own.
  int64_t ctas = 0, slice_rows = 0;
  int row_dim = 0;
  Expr slice_map, slice, mask;
};

// How TMA does the copy `c` (a region of a tensor parameter of `params` into a whole
// shared tile), or nullopt when it cannot. `layouts` as from LayoutFacts::shared_tile_layouts: the
// layout the tile's readers expect, which TMA then writes.
std::optional<TmaCopy> plan_tma_copy(const TileOpNode* c, const std::vector<Param>& params,
                                     const std::map<const BufferNode*, SharedTileLayout>& layouts);

// The TMA loads of the copy `c` planned as `tc` (its regions already at their
// iteration): one box per column block of the tile, completing on the mbarrier
// address `bar`; a multicast copy's slices go to every block of the cluster.
Stmt tma_loads(const TileOpNode* c, const TmaCopy& tc, const Expr& bar);

// The tensor parameter a kTmaMapCall names; nullopt when `c` is not one (or null).
std::optional<int64_t> tma_map_param(const CallNode* c);

// A copy TMA does, outside a pipeline (T.tma_copy, src/transform/lower_explicit_hopper.cpp):
// the tl::tma_load calls of `copy` (a region of a tensor parameter into a whole shared
// tile, planned as a pipeline producer) completing on the mbarrier address `bar`, the
// bytes they bring, and the layout they write the tile in (null: plain). nullopt when
// TMA cannot do the copy. `layouts` as from LayoutFacts::shared_tile_layouts.
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
// when TMA cannot do the copy. `layouts` as from LayoutFacts::shared_tile_layouts. `add`: the
// boxes are added to the tensor's elements (tl::tma_store_add) instead.
std::optional<Stmt> tma_tile_stores(const TileOpNode* copy, const KernelLaunchNode* launch,
                                    const std::vector<Param>& params,
                                    const std::map<const BufferNode*, SharedTileLayout>& layouts, bool add);

}  // namespace tl
