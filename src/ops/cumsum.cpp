// T.cumsum / T.cummax: an inclusive scan of a tile along one dimension, forward or
// reversed, into a destination of the same shape (which may be the source itself).
#include "ops/extent_util.h"

namespace tl {
Stmt make_cumsum_op(TileOpArgs a) {
  simplify_extents(a.regions);
  std::string kind = attr_string(a.attrs, "kind", "sum");
  if (kind != "sum" && kind != "max")
    throw_user_error(a.span, str_cat("unknown scan kind '", kind, "'; known kinds: sum, max"));
  std::string what = "T.cum" + kind;
  if (a.regions.size() != 2) throw_user_error(a.span, what + " takes a source and a destination buffer");
  const BufferRegion &src = a.regions[0], &dst = a.regions[1];
  for (const BufferRegion* r : {&src, &dst})
    if (r->buffer->scope == Scope::Global)
      throw_user_error(a.span, str_cat(what, " operands must be in shared or fragment memory, but '", r->buffer->name,
                                       "' is a global tensor; copy it into a T.alloc_shared or T.alloc_fragment "
                                       "buffer first"));
  std::vector<Expr> se = src.extents(), de = dst.extents();
  int rank = int(se.size());
  int64_t dim = attr_int(a.attrs, "dim", 0);
  if (dim < -rank || dim >= rank)
    throw_user_error(a.span,
                     str_cat(what, " dim ", dim, " is out of range for source '", src.buffer->name, "' of rank ", rank,
                             " (shape ", extents_str(se), "); use a dim in [", -rank, ", ", rank - 1, "]"));
  if (dim < 0) dim += rank;
  if (!same_extents(se, de))
    throw_user_error(a.span, str_cat(what, " destination '", dst.buffer->name, "' has shape ", extents_str(de),
                                     " but source '", src.buffer->name, "' has shape ", extents_str(se),
                                     "; a scan writes a tile of the source's shape"));
  Attrs attrs = a.attrs;
  attrs["dim"] = dim;
  attrs["kind"] = kind;
  return tile_op(TileOpKind::Cumsum, std::move(a.regions), {}, std::move(attrs), a.span);
}

// for each line along `dim`: acc = identity; for k: i = reverse ? n-1-k : k;
// acc = acc (+) src[i]; dst[i] = acc. Reading src[i] before writing dst[i] makes the
// in-place scan (dst == src) correct.
Stmt lower_cumsum_serial(const TileOpNode* op) {
  const BufferRegion &src = op->regions[0], &dst = op->regions[1];
  bool is_max = attr_string(op->attrs, "kind", "sum") == "max";
  int dim = int(attr_int(op->attrs, "dim", 0));
  bool reverse = attr_int(op->attrs, "reverse", 0);
  DataType t = dst.buffer->dtype;
  int rank = int(src.ranges.size());

  const Expr& n = src.ranges[dim].extent;
  Var k("k", n.dtype());
  Expr pos = reverse ? sub(sub(n, make_const(n.dtype(), 1)), k) : Expr(k);
  std::vector<Var> outer;
  std::vector<Expr> src_idx, dst_idx;
  for (int d = 0; d < rank; ++d) {
    Expr off = pos;
    if (d != dim) {
      // str_cat, not "i" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
      Var v(str_cat("i", outer.size()), src.ranges[d].extent.dtype());
      outer.push_back(v);
      off = v;
    }
    src_idx.push_back(add(src.ranges[d].min, cast(src.ranges[d].min.dtype(), off)));
    dst_idx.push_back(add(dst.ranges[d].min, cast(dst.ranges[d].min.dtype(), off)));
  }

  Buffer acc = Buffer::make("acc", t, {int_imm(1)}, Scope::Local, {}, op->span);
  Expr acc_val = buffer_load(acc, {int_imm(0)});
  Expr x = cast(t, buffer_load(src.buffer, src_idx, op->span));
  Expr start = !is_max ? make_const(t, 0) : has_infinity(t) ? infinity(t, /*negative=*/true) : min_value(t);
  Stmt step = seq({buffer_store(acc, is_max ? max(acc_val, x) : add(acc_val, x), {int_imm(0)}),
                   buffer_store(dst.buffer, acc_val, dst_idx, op->span)});
  Stmt body = allocate(acc, seq({buffer_store(acc, start, {int_imm(0)}),
                                 for_loop(k, make_const(k.dtype(), 0), n, ForKind::Serial, step)}));
  for (int i = int(outer.size()) - 1, d = rank - 1; i >= 0; --i, --d) {
    if (d == dim) --d;
    body = for_loop(outer[i], make_const(outer[i].dtype(), 0), src.ranges[d].extent, ForKind::Serial, body);
  }
  return body;
}

}  // namespace tl
