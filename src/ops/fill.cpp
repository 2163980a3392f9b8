// T.fill / T.clear: set every element of a region to one value.
#include "ops/tile_op.h"

namespace tl {

Stmt make_fill(BufferRegion dst, Expr value, SourceSpan span) {
  if (!value.dtype().is_scalar())
    throw_user_error(span, str_cat("T.fill value must be a scalar, got ", value.dtype().name()));
  value = cast(dst.buffer->dtype, value);
  return tile_op(TileOpKind::Fill, {std::move(dst)}, {value}, {}, span);
}

Stmt make_fill_op(TileOpArgs a) {
  if (a.regions.size() != 1 || a.args.size() != 1)
    throw_user_error(a.span, str_cat("T.fill takes one buffer and one value, got ", a.regions.size(), " buffer(s) and ",
                                     a.args.size(), " value(s)"));
  return make_fill(std::move(a.regions[0]), std::move(a.args[0]), a.span);
}

Stmt lower_fill_serial(const TileOpNode* op) {
  const BufferRegion& d = op->regions[0];
  std::vector<Var> vars;
  std::vector<Expr> idx;
  for (const Range& r : d.ranges) {
    // str_cat, not "i" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    Var v(str_cat("i", vars.size()), r.extent.dtype());
    vars.push_back(v);
    idx.push_back(add(r.min, v));
  }
  Stmt body = buffer_store(d.buffer, op->args[0], idx, op->span);
  Expr ok = in_bounds(d.buffer, idx);
  if (!as_const_int(ok)) body = if_then_else(ok, body);
  for (int i = int(vars.size()) - 1; i >= 0; --i)
    body = for_loop(vars[i], make_const(d.ranges[i].extent.dtype(), 0), d.ranges[i].extent, ForKind::Parallel, body);
  return body;
}

}  // namespace tl
