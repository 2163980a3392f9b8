// T.copy: moves a tile between any two memories, with TileLang's rules for
// matching the two sides. Either side is a whole buffer, a slice, or a start
// point whose extents come from the other side. Extents are right-aligned; when
// the sides differ in how many non-unit extents they have, a unit extent adopts
// the other side's extent (so `A[r, 0:BK]` against a [BM, BK] tile covers BM
// rows). The non-unit extents are then paired in order. Parts outside a buffer
// are predicated: reads give the safe value (0 unless `safe_value` is set by
// T.annotate_safe_value), writes are dropped.
#include <cmath>
#include <sstream>

#include "arith/simplify.h"
#include "ir/printer.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

std::string extents_str(const std::vector<Expr>& ext) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < ext.size(); ++i) os << (i ? ", " : "") << to_string(ext[i]);
  os << "]";
  return os.str();
}

std::vector<Expr> non_unit(const std::vector<Expr>& ext) {
  std::vector<Expr> out;
  for (const Expr& e : ext)
    if (!is_const_one(e)) out.push_back(e);
  return out;
}

bool same_extent(const Expr& a, const Expr& b) {
  auto x = as_const_int(a), y = as_const_int(b);
  if (x && y) return *x == *y;
  return to_string(a) == to_string(b);
}

// Two extents that can be paired: equal, or at least one symbolic (the copy then
// runs over the larger one and predicates each side by its own extent).
bool compatible_extent(const Expr& a, const Expr& b) {
  auto x = as_const_int(a), y = as_const_int(b);
  return !(x && y) || *x == *y;
}

std::vector<Expr> ones(size_t n) {
  return std::vector<Expr>(n, int_imm(1));
}

// TileLang's pairwise legalization: when both sides have the same number of
// non-unit extents nothing changes; otherwise, right-aligned, a unit extent
// takes the other side's extent.
void legalize_pairwise(std::vector<Expr>& a, std::vector<Expr>& b) {
  if (non_unit(a).size() == non_unit(b).size()) return;
  for (size_t k = 1; k <= std::min(a.size(), b.size()); ++k) {
    Expr& x = a[a.size() - k];
    Expr& y = b[b.size() - k];
    if (same_extent(x, y)) continue;
    if (is_const_one(x)) {
      x = y;
    } else if (is_const_one(y)) {
      y = x;
    }
  }
}

// The region one side covers, given its (legalized) extents. A start point's
// extents are laid over its trailing dimensions.
BufferRegion to_region(const CopyOperand& side, std::vector<Expr> extents, const std::vector<Expr>& other_extents,
                       const char* which, SourceSpan span) {
  const Buffer& b = side.buffer;
  if (int(side.mins.size()) != b.ndim())
    throw_user_error(span, str_cat("T.copy ", which, " '", b->name, "' has ", b.ndim(), " dimension(s) but ",
                                   side.mins.size(), " index(es) were given"));
  TL_ICHECK(side.extents.empty() || extents.size() == size_t(b.ndim()),
            "a T.copy region's extents must match its rank");
  while (extents.size() > size_t(b.ndim()) && is_const_one(extents.front())) extents.erase(extents.begin());
  if (extents.size() > size_t(b.ndim()))
    throw_user_error(
        span, str_cat("T.copy ", which, " '", b->name, "' is a start point with ", b.ndim(),
                      " dimension(s), but the other side covers ", extents_str(other_extents), "; index the ", which,
                      " with slices, or use a tile of at most ", b.ndim(), " non-unit dimension(s)"));
  extents.insert(extents.begin(), b.ndim() - extents.size(), int_imm(1));
  BufferRegion r{b, {}};
  for (int d = 0; d < b.ndim(); ++d) {
    Expr e = extents[d];
    if (e.dtype() != side.mins[d].dtype() && side.mins[d].dtype().is_int()) e = cast(side.mins[d].dtype(), e);
    r.ranges.push_back({side.mins[d], e});
  }
  return r;
}

std::string region_str(const BufferRegion& r) {
  return str_cat("'", r.buffer->name, "' covers ", extents_str(r.extents()));
}

// On-chip buffers have no predicated tail: a tile must fit inside them.
void check_fits(const BufferRegion& r, SourceSpan span) {
  if (r.buffer->scope == Scope::Global) return;
  for (size_t i = 0; i < r.ranges.size(); ++i) {
    auto ext = as_const_int(r.ranges[i].extent);
    auto lo = as_const_int(r.ranges[i].min);
    auto n = as_const_int(r.buffer->shape[i]);
    if (!ext || !n) continue;
    if (*ext > *n)
      throw_user_error(span, str_cat("T.copy region of '", r.buffer->name, "' has extent ", *ext, " in dimension ", i,
                                     " but the buffer has only ", *n));
    if (lo && (*lo < 0 || *lo + *ext > *n))
      throw_user_error(
          span, str_cat("T.copy region of '", r.buffer->name, "' covers [", *lo, ", ", *lo + *ext, ") in dimension ", i,
                        ", outside the buffer's extent ", *n, "; start the tile at most at ", *n - *ext));
  }
}

}  // namespace

// The value an out-of-bounds read gives: the `safe_value` attribute, else 0.
Expr safe_value(const Attrs& attrs, DataType t) {
  auto it = attrs.find("safe_value");
  if (it == attrs.end()) return make_const(t, 0);
  if (auto* i = std::get_if<int64_t>(&it->second)) return make_const(t, double(*i));
  if (auto* f = std::get_if<double>(&it->second)) {
    if (std::isinf(*f)) return infinity(t, *f < 0);
    return make_const(t, *f);
  }
  if (auto* e = std::get_if<Expr>(&it->second)) return cast(t, *e);
  TL_ICHECK(false, "the T.copy safe_value attribute has an unexpected kind");
  return {};
}

Stmt make_copy(const CopyOperand& src, const CopyOperand& dst, Attrs attrs, SourceSpan span) {
  // TileLang refuses this pair in the same words: only sm_100's TMA unpacks fp4.
  if (src.buffer->dtype == dtype::Float4E2M1FN && dst.buffer->dtype == dtype::Float4E2M1Unpacked)
    throw_user_error(span, str_cat("SIMT copy from packed global float4_e2m1fn to unpacked shared "
                                   "float4_e2m1_unpacked is not supported (src=",
                                   src.buffer->name, ", dst=", dst.buffer->name,
                                   "): only sm_100's TMA unpacks fp4, and no target here has it; keep the shared "
                                   "tile float4_e2m1fn"));
  if (src.extents.empty() && dst.extents.empty()) {
    // Two start points: an element copy.
    CopyOperand s = src;
    s.extents = ones(src.mins.size());
    return make_copy(s, dst, std::move(attrs), span);
  }
  // Slices give extents such as (bx + 1) * 64 - bx * 64; pair them once simplified.
  auto simplified = [](std::vector<Expr> ext) {
    for (Expr& e : ext) e = simplify(e);
    return ext;
  };
  std::vector<Expr> se = src.extents.empty() ? ones(dst.extents.size()) : simplified(src.extents);
  std::vector<Expr> de = dst.extents.empty() ? ones(src.extents.size()) : simplified(dst.extents);
  legalize_pairwise(se, de);
  BufferRegion s = to_region(src, se, de, "source", span);
  BufferRegion d = to_region(dst, de, se, "destination", span);
  std::vector<Expr> sn = non_unit(s.extents()), dn = non_unit(d.extents());
  bool ok = sn.size() == dn.size();
  for (size_t i = 0; ok && i < sn.size(); ++i) ok = compatible_extent(sn[i], dn[i]);
  // Regions of the same rank whose constant extents differ: as TileLang, the copy runs
  // over the region of the side in the deeper memory (local / fragment, then shared,
  // then global; the source when both are alike), and the other side becomes a start
  // point covering as much. Elements outside a tensor read as zeros and are not
  // written; those past the other region but inside its buffer are read and written
  // too (a 32-row global slice copied into a 64-row tile covers the whole tile). The
  // destination's region is the base only when it is at least the source's in every
  // dimension; a smaller one stays an error, as in TileLang.
  if (!ok && sn.size() == dn.size() && !src.extents.empty() && !dst.extents.empty()) {
    auto level = [](Scope sc) {
      return sc == Scope::Global ? 0 : sc == Scope::Shared || sc == Scope::SharedDyn ? 1 : 2;
    };
    const bool base_is_src = level(src.buffer->scope) >= level(dst.buffer->scope);
    bool usable = true;
    for (size_t i = 0; usable && i < sn.size(); ++i) {
      auto se_i = as_const_int(sn[i]), de_i = as_const_int(dn[i]);
      usable = se_i && de_i && (base_is_src || *de_i >= *se_i);
    }
    if (usable) {
      CopyOperand s2 = src, d2 = dst;
      (base_is_src ? d2 : s2).extents.clear();
      return make_copy(s2, d2, std::move(attrs), span);
    }
  }
  if (!ok)
    throw_user_error(
        span, str_cat("T.copy extents cannot be reconciled: source ", region_str(s), " but destination ", region_str(d),
                      "; extents are paired right-aligned after dropping unit dimensions, so slice one "
                      "side to match the other (make the destination cover ",
                      extents_str(sn), " or the source cover ", extents_str(dn), ")"));
  check_fits(s, span);
  check_fits(d, span);
  return tile_op(TileOpKind::Copy, {s, d}, {}, std::move(attrs), span);
}

Stmt make_copy_op(TileOpArgs a) {
  if (a.regions.size() != 2)
    throw_user_error(a.span, str_cat("T.copy takes a source and a destination region, got ", a.regions.size()));
  auto operand = [](const BufferRegion& r) {
    CopyOperand o{r.buffer, {}, {}};
    for (const Range& rg : r.ranges) {
      o.mins.push_back(rg.min);
      o.extents.push_back(rg.extent);
    }
    return o;
  };
  return make_copy(operand(a.regions[0]), operand(a.regions[1]), std::move(a.attrs), a.span);
}

Stmt lower_copy_serial(const TileOpNode* op) {
  const BufferRegion& s = op->regions[0];
  const BufferRegion& d = op->regions[1];
  std::vector<Expr> sn = non_unit(s.extents()), dn = non_unit(d.extents());
  TL_ICHECK(sn.size() == dn.size(), "T.copy regions were not reconciled by make_copy");
  // One loop per paired non-unit extent; when a pair differs (symbolic), the loop
  // runs over the larger and each side is predicated by its own extent.
  std::vector<Var> vars;
  std::vector<Expr> extents;
  Expr src_ok = bool_imm(true), dst_ok = bool_imm(true);
  for (size_t i = 0; i < dn.size(); ++i) {
    // str_cat, not "i" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    Var v(str_cat("i", i), dn[i].dtype());
    vars.push_back(v);
    if (same_extent(sn[i], dn[i])) {
      extents.push_back(dn[i]);
      continue;
    }
    Expr se = cast(dn[i].dtype(), sn[i]);
    extents.push_back(max(se, dn[i]));
    src_ok = logical_and(src_ok, lt(v, se));
    dst_ok = logical_and(dst_ok, lt(v, dn[i]));
  }
  auto indices = [&](const BufferRegion& region) {
    std::vector<Expr> idx;
    size_t v = 0;
    for (const Range& r : region.ranges) {
      if (is_const_one(r.extent)) {
        idx.push_back(r.min);
        continue;
      }
      idx.push_back(add(r.min, cast(r.min.dtype(), vars[v++])));
    }
    return idx;
  };
  std::vector<Expr> si = indices(s), di = indices(d);
  src_ok = logical_and(src_ok, in_bounds(s.buffer, si));
  dst_ok = logical_and(dst_ok, in_bounds(d.buffer, di));
  Expr load = buffer_load(s.buffer, si, op->span);
  if (!as_const_int(src_ok)) load = select(src_ok, load, safe_value(op->attrs, s.buffer->dtype));
  Stmt body = buffer_store(d.buffer, cast(d.buffer->dtype, load), di, op->span);
  if (!as_const_int(dst_ok)) body = if_then_else(dst_ok, body);
  for (int i = int(vars.size()) - 1; i >= 0; --i)
    body = for_loop(vars[i], make_const(extents[i].dtype(), 0), extents[i], ForKind::Parallel, body);
  return body;
}

}  // namespace tl
