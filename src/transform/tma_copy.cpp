// How TMA does one copy between a tensor parameter and a whole shared tile: the
// eligibility rules, the tensor map, the boxes and the swizzle (tma_copy.h).
#include "transform/tma_copy.h"

#include <limits>

#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

Expr address_of(const Buffer& b, std::vector<Expr> idx) {
  return call(Intrinsic::AddressOf, {buffer_load(b, std::move(idx))});
}

// Box `blk` of the TMA copy `c` (a global region, then a whole shared tile): the
// address of its part of the tile and its global coordinates, innermost first.
// A multicast copy's box is this block's slice of rows.
std::pair<Expr, std::vector<Expr>> tma_box(const TileOpNode* c, const TmaCopy& tc, int64_t blk) {
  const BufferRegion &global = c->regions[0], &tile = c->regions[1];
  Expr slice;  // the first row of this block's slice
  if (tc.ctas) slice = mul(tc.slice, int_imm(tc.slice_rows));
  std::vector<Expr> at;
  for (const Range& r : tile.ranges) at.push_back(r.min);
  at.back() = add(at.back(), int_imm(blk * tc.block_cols, at.back().dtype()));
  if (tc.ctas) at[at.size() - 2] = add(at[at.size() - 2], cast(at[at.size() - 2].dtype(), slice));
  std::vector<Expr> coords;
  for (size_t d = global.ranges.size(); d-- > 0;) {
    Expr coord = global.ranges[d].min;
    if (d + 1 == global.ranges.size() && blk) coord = add(coord, int_imm(blk * tc.block_cols, coord.dtype()));
    if (tc.ctas && int(d) == tc.row_dim) coord = add(coord, cast(coord.dtype(), slice));
    coords.push_back(coord);
  }
  return {address_of(tile.buffer, at), coords};
}

}  // namespace

// TMA does the copy `c` (a pipeline's producer takes cp.async otherwise) when the
// source is a tensor parameter with a unit innermost stride and no other stride that
// is a known non-multiple of 16 bytes; the destination is a whole shared tile, plain
// or in a swizzle the hardware writes (the 32/64/128-byte modes: the mma.sync swizzle
// of 32, 64 or 128-byte rows, the wgmma one); the boxes keep TMA's limits (<= 256 per
// dim, a 16-byte multiple per row, no wider than the swizzle); the copy pads with
// zeros, as TMA fills out-of-bounds parts.
std::optional<TmaCopy> plan_tma_copy(const TileOpNode* c, const std::vector<Param>& params,
                                     const std::map<const BufferNode*, SharedTileLayout>& layouts) {
  if (attr_int(c->attrs, "disable_tma", 0)) return std::nullopt;
  const BufferRegion &src = c->regions[0], &dst = c->regions[1];
  const Buffer &g = src.buffer, &t = dst.buffer;
  int param = -1;
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].is_tensor() && params[i].buffer.same_as(g)) param = int(i);
  DataType dt = g->dtype;
  bool bytes_type = dt.lanes() == 1 && (dt.is_float() || dt.is_int() || dt.is_uint()) &&
                    (dt.bits() == 8 || dt.bits() == 16 || dt.bits() == 32 || dt.bits() == 64);
  if (param < 0 || !(t->dtype == dt) || !bytes_type || !covers_whole(dst)) return std::nullopt;
  // A tile laid out by T.annotate_layout (apply_shared_layouts) takes TMA only in the
  // swizzle TMA writes (the one below for rows of 32, 64 or 128 bytes).
  std::optional<SharedTileLayout> annotated;
  if (t->layout) {
    auto cols = as_const_int(t->shape.back());
    auto hw = cols ? Layout::swizzle(*cols, dt.bytes()) : nullptr;
    if (!hw || !hw->same_placement(*t->layout)) return std::nullopt;
    annotated = SharedTileLayout{t->layout, false};
  }
  Expr pad = safe_value(c->attrs, dt);
  auto* pad_f = pad.as<FloatImmNode>();
  auto pad_i = as_const_int(pad);
  if (!((pad_f && pad_f->value == 0) || (pad_i && *pad_i == 0))) return std::nullopt;
  const int64_t eb = dt.bytes();
  const int rank = g.ndim();
  std::vector<Expr> strides = g.effective_strides();
  if (rank < 1 || rank > 5 || !is_const_one(strides.back())) return std::nullopt;
  // The driver refuses maps whose innermost extent is not a whole number of 16-byte
  // units (seen on the H200 with a 300-element float16 vector); that extent must be
  // known here, so that such tensors keep cp.async instead of failing at launch.
  auto inner = as_const_int(g->shape.back());
  if (!inner || (*inner * dt.bytes()) % 16 != 0) return std::nullopt;
  if (!tma_inner_start_aligned(src.ranges.back().min, dt)) return std::nullopt;
  if (!tma_coordinates_fit(g)) return std::nullopt;
  uint32_t dynamic = 0;
  for (int d = 0; d < rank; ++d) {
    auto st = as_const_int(strides[d]);
    if (st && d + 1 < rank && (*st * eb) % 16 != 0) return std::nullopt;
    if (!st || !as_const_int(g->shape[d])) dynamic |= 1u << (rank - 1 - d);
  }
  // The box: the source extents; their non-unit ones are the tile's, in order.
  std::vector<int64_t> ext, tile, a, b;
  for (const Range& r : src.ranges) {
    auto e = as_const_int(r.extent);
    if (!e || *e < 1) return std::nullopt;
    ext.push_back(*e);
    if (*e != 1) a.push_back(*e);
  }
  for (const Expr& e : t->shape) {
    tile.push_back(*as_const_int(e));  // covers_whole: constant
    if (tile.back() != 1) b.push_back(tile.back());
  }
  if (a != b || ext.back() != tile.back()) return std::nullopt;
  TmaCopy out;
  int64_t cols = tile.back(), rows = tile.size() >= 2 ? tile[tile.size() - 2] : 1, lead = 1;
  out.bytes = eb;
  for (int64_t n : tile) out.bytes *= n;
  for (size_t d = 0; d + 2 < tile.size(); ++d) lead *= tile[d];
  out.block_cols = cols;
  int64_t swizzle = 0;
  auto it = layouts.find(t.get());
  const SharedTileLayout* chosen = it != layouts.end() ? &it->second : annotated ? &*annotated : nullptr;
  if (chosen) {
    // TMA's swizzle XORs 16-byte chunk bits 4.. with address bits 7.., the pattern
    // of both layouts for rows of one 32, 64 or 128-byte span when the tile starts
    // on a whole pattern (8 rows); the wgmma layout keeps wider tiles as column
    // blocks one span wide, each a box of its own.
    int64_t row_bytes = cols * eb;
    if (chosen->wgmma)
      swizzle = row_bytes % 128 == 0 ? 128 : row_bytes % 64 == 0 ? 64 : row_bytes % 32 == 0 ? 32 : 0;
    else
      swizzle = row_bytes == 32 || row_bytes == 64 || row_bytes == 128 ? row_bytes : 0;
    if (!swizzle || rows % 8 != 0) return std::nullopt;
    out.blocks = row_bytes / swizzle;
    out.block_cols = swizzle / eb;
    if (out.blocks > 1 && lead != 1) return std::nullopt;
    out.layout = chosen->layout;
  } else if ((cols * eb) % 16 != 0 || out.bytes % 128 != 0) {
    return std::nullopt;  // a row of 16-byte multiples; versions of the tile 128-byte aligned
  }
  std::vector<Expr> map{int_imm(param), int_imm(swizzle), int_imm(int64_t(dynamic))};
  for (int d = rank - 1; d >= 0; --d) {
    int64_t box = d == rank - 1 ? out.block_cols : ext[d];
    if (box > kTmaMaxBox) return std::nullopt;
    map.push_back(int_imm(box));
  }
  out.map = call_extern(dtype::Handle, kTmaMapCall, map);
  return out;
}

Stmt tma_loads(const TileOpNode* c, const TmaCopy& tc, const Expr& bar) {
  std::vector<Stmt> out;
  for (int64_t blk = 0; blk < tc.blocks; ++blk) {
    auto [smem, coords] = tma_box(c, tc, blk);
    std::vector<Expr> args{smem, tc.ctas ? tc.slice_map : tc.map, bar};
    if (tc.ctas) args.push_back(tc.mask);
    args.insert(args.end(), coords.begin(), coords.end());
    out.push_back(evaluate(call_extern(
        dtype::Void, device_call_name(tc.ctas ? kTmaLoadMulticastCall : kTmaLoadCall, {coords.size()}), args)));
  }
  return seq(out);
}

std::optional<int64_t> tma_map_param(const CallNode* c) {
  if (!c || c->op != Intrinsic::Extern || c->args.size() < 2 || c->args[0].as<StringImmNode>()->value != kTmaMapCall)
    return std::nullopt;
  return as_const_int(c->args[1]);
}

std::optional<TmaTileLoads> tma_tile_loads(const TileOpNode* copy, const Expr& bar, const KernelLaunchNode* launch,
                                           const std::vector<Param>& params,
                                           const std::map<const BufferNode*, SharedTileLayout>& layouts) {
  if (!launch) return std::nullopt;
  std::optional<TmaCopy> t = plan_tma_copy(copy, params, layouts);
  if (!t) return std::nullopt;
  return TmaTileLoads{tma_loads(copy, *t, bar), t->bytes, t->layout};
}

bool tma_inner_start_aligned(const Expr& start, DataType dtype) {
  auto remainder = as_const_int(simplify(floormod(start, int_imm(16 / dtype.bytes(), start.dtype()))));
  return remainder && *remainder == 0;
}

bool tma_coordinates_fit(const Buffer& tensor) {
  for (const Expr& d : tensor->shape) {
    auto* v = d.as<VarNode>();
    auto c = as_const_int(d);
    if (!(v && v->dtype == dtype::Int32) && !(c && *c <= std::numeric_limits<int32_t>::max())) return false;
  }
  return true;
}

std::optional<Stmt> tma_tile_stores(const TileOpNode* copy, const KernelLaunchNode* launch,
                                    const std::vector<Param>& params,
                                    const std::map<const BufferNode*, SharedTileLayout>& layouts, bool add) {
  // Planned as the load in the other direction would be (the same map, boxes and
  // tile rules).
  if (!launch) return std::nullopt;
  Attrs attrs = copy->attrs;
  attrs.erase("safe_value");  // it would pad reads of the shared side, which are all in bounds
  Stmt mirror = tile_op(TileOpKind::Copy, {copy->regions[1], copy->regions[0]}, copy->args, attrs, copy->span);
  auto* load = mirror.as<TileOpNode>();
  std::optional<TmaCopy> t = plan_tma_copy(load, params, layouts);
  if (!t) return std::nullopt;
  std::vector<Stmt> out;
  for (int64_t blk = 0; blk < t->blocks; ++blk) {
    auto [smem, coords] = tma_box(load, *t, blk);
    std::vector<Expr> args{t->map, smem};
    args.insert(args.end(), coords.begin(), coords.end());
    const char* fn = add ? kTmaStoreAddCall : kTmaStoreCall;
    out.push_back(evaluate(call_extern(dtype::Void, device_call_name(fn, {coords.size()}), args)));
  }
  return seq(out);
}

}  // namespace tl
