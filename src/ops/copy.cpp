// T.copy: moves a tile between any two memories. Either side may be a whole
// buffer, a slice, or a start point whose extent comes from the other side.
// Extents are matched right-aligned after dropping unit dimensions, as TileLang
// does; parts outside a buffer are predicated (reads give 0, writes are dropped).
#include <sstream>

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

// Gives a start-point operand the extents of `other`, right-aligned.
BufferRegion resolve(const CopyOperand& side, const std::vector<Expr>& other_extents, const char* which,
                     SourceSpan span) {
  const Buffer& b = side.buffer;
  BufferRegion r{b, {}};
  if (int(side.mins.size()) != b.ndim())
    throw_user_error(span, str_cat("T.copy ", which, " '", b->name, "' has ", b.ndim(), " dimension(s) but ",
                                   side.mins.size(), " index(es) were given"));
  if (!side.extents.empty()) {
    for (int d = 0; d < b.ndim(); ++d) r.ranges.push_back({side.mins[d], side.extents[d]});
    return r;
  }
  std::vector<Expr> ext = non_unit(other_extents);
  if (ext.size() > size_t(b.ndim()))
    throw_user_error(span,
                     str_cat("T.copy ", which, " '", b->name, "' is a start point with ", b.ndim(),
                             " dimension(s), but the other side has the tile extents ", extents_str(other_extents),
                             "; index the ", which, " with slices or use a buffer of matching rank"));
  size_t pad = b.ndim() - ext.size();
  for (int d = 0; d < b.ndim(); ++d) {
    Expr e = size_t(d) < pad ? make_const(side.mins[d].dtype(), 1) : ext[d - pad];
    r.ranges.push_back({side.mins[d], e});
  }
  return r;
}

}  // namespace

Stmt make_copy(const CopyOperand& src, const CopyOperand& dst, Attrs attrs, SourceSpan span) {
  if (src.extents.empty() && dst.extents.empty()) {
    // Two start points: an element copy.
    std::vector<Expr> one;
    for (size_t i = 0; i < src.mins.size(); ++i) one.push_back(int_imm(1));
    CopyOperand s = src;
    s.extents = one;
    return make_copy(s, dst, attrs, span);
  }
  BufferRegion s = resolve(src, dst.extents, "source", span);
  BufferRegion d = resolve(dst, s.extents(), "destination", span);
  std::vector<Expr> se = non_unit(s.extents()), de = non_unit(d.extents());
  bool ok = se.size() == de.size();
  for (size_t i = 0; ok && i < se.size(); ++i) ok = same_extent(se[i], de[i]);
  if (!ok)
    throw_user_error(
        span, str_cat("T.copy extents do not match: source '", s.buffer->name, "' covers ", extents_str(s.extents()),
                      " but destination '", d.buffer->name, "' covers ", extents_str(d.extents()),
                      "; after dropping unit dimensions both sides must have the same extents"));
  // A tile may hang over the edge of a tensor (that part is predicated), but it
  // cannot be larger than an on-chip buffer.
  for (const BufferRegion* r : {&s, &d}) {
    if (r->buffer->scope == Scope::Global) continue;
    for (size_t i = 0; i < r->ranges.size(); ++i) {
      auto ext = as_const_int(r->ranges[i].extent);
      auto n = as_const_int(r->buffer->shape[i]);
      if (ext && n && *ext > *n)
        throw_user_error(span, str_cat("T.copy region of '", r->buffer->name, "' has extent ", *ext, " in dimension ",
                                       i, " but the buffer has only ", *n));
    }
  }
  return tile_op(TileOpKind::Copy, {s, d}, {}, std::move(attrs), span);
}

Stmt make_copy_op(TileOpArgs a) {
  if (a.regions.size() != 2) throw_user_error(a.span, "T.copy takes a source and a destination");
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
  // One loop per non-unit extent of the destination.
  std::vector<Var> vars;
  std::vector<Expr> extents;
  for (const Range& r : d.ranges) {
    if (is_const_one(r.extent)) continue;
    vars.push_back(Var("i" + std::to_string(vars.size()), r.extent.dtype()));
    extents.push_back(r.extent);
  }
  auto indices = [&](const BufferRegion& region) {
    std::vector<Expr> idx;
    size_t v = 0;
    for (const Range& r : region.ranges) {
      if (is_const_one(r.extent)) {
        idx.push_back(r.min);
        continue;
      }
      Expr iv = vars[v++];
      idx.push_back(add(r.min, cast(r.min.dtype(), iv)));
    }
    return idx;
  };
  std::vector<Expr> si = indices(s), di = indices(d);
  Expr load = buffer_load(s.buffer, si, op->span);
  Expr src_ok = in_bounds(s.buffer, si);
  if (!as_const_int(src_ok)) load = select(src_ok, load, make_const(s.buffer->dtype, 0));
  Stmt body = buffer_store(d.buffer, cast(d.buffer->dtype, load), di, op->span);
  Expr dst_ok = in_bounds(d.buffer, di);
  if (!as_const_int(dst_ok)) body = if_then_else(dst_ok, body);
  for (int i = int(vars.size()) - 1; i >= 0; --i)
    body = for_loop(vars[i], make_const(extents[i].dtype(), 0), extents[i], ForKind::Serial, body);
  return body;
}

}  // namespace tl
