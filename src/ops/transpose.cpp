// T.transpose(src, dst): dst[..., j, i] = src[..., i, j] on tiles. The last two
// extents of the source, (M, N), appear swapped in the destination, (N, M); any
// leading extents are paired in order after dropping unit dimensions, as T.copy
// does. Parts outside a global tensor are predicated like T.copy.
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

bool same_extent(const Expr& a, const Expr& b) {
  auto x = as_const_int(a), y = as_const_int(b);
  if (x && y) return *x == *y;
  return to_string(a) == to_string(b);
}

// The extents of a region that iterate: the leading non-unit ones, then the last two.
struct TileShape {
  std::vector<int> batch_dims;  // dimensions of the leading non-unit extents
  int row_dim, col_dim;         // the last two dimensions
};

TileShape tile_shape(const BufferRegion& r) {
  TileShape t;
  int n = int(r.ranges.size());
  t.row_dim = n - 2;
  t.col_dim = n - 1;
  for (int d = 0; d < n - 2; ++d)
    if (!is_const_one(r.ranges[d].extent)) t.batch_dims.push_back(d);
  return t;
}

}  // namespace

Stmt make_transpose_op(TileOpArgs a) {
  if (a.regions.size() != 2 || !a.args.empty())
    throw_user_error(a.span, "T.transpose takes a source and a destination: T.transpose(src, dst)");
  // Slices give extents such as (bx + 1) * 64 - bx * 64; compare them simplified.
  for (BufferRegion& r : a.regions)
    for (Range& rg : r.ranges) rg.extent = simplify(rg.extent);
  const BufferRegion& s = a.regions[0];
  const BufferRegion& d = a.regions[1];
  for (const BufferRegion* r : {&s, &d})
    if (r->ranges.size() < 2)
      throw_user_error(a.span, str_cat("T.transpose needs tiles of at least 2 dimensions, but '", r->buffer->name,
                                       "' covers ", extents_str(r->extents())));
  TileShape ts = tile_shape(s), td = tile_shape(d);
  std::vector<Expr> se = s.extents(), de = d.extents();
  bool ok = same_extent(se[ts.row_dim], de[td.col_dim]) && same_extent(se[ts.col_dim], de[td.row_dim]) &&
            ts.batch_dims.size() == td.batch_dims.size();
  for (size_t i = 0; ok && i < ts.batch_dims.size(); ++i) ok = same_extent(se[ts.batch_dims[i]], de[td.batch_dims[i]]);
  if (!ok) {
    std::vector<Expr> want(se.begin(), se.end());
    std::swap(want[want.size() - 2], want[want.size() - 1]);
    throw_user_error(a.span,
                     str_cat("T.transpose shapes do not match: source '", s.buffer->name, "' covers ", extents_str(se),
                             " so destination '", d.buffer->name, "' must cover ", extents_str(want),
                             " (the last two extents swapped), but it covers ", extents_str(de)));
  }
  return tile_op(TileOpKind::Transpose, a.regions, {}, std::move(a.attrs), a.span);
}

Stmt lower_transpose_serial(const TileOpNode* op) {
  const BufferRegion& s = op->regions[0];
  const BufferRegion& d = op->regions[1];
  TileShape ts = tile_shape(s), td = tile_shape(d);
  // Loop variables: one per batch dimension, then i over M and j over N (the source's rows and columns).
  std::vector<Var> vars;
  std::vector<Expr> extents;
  for (size_t b = 0; b < ts.batch_dims.size(); ++b) {
    const Expr& e = s.ranges[ts.batch_dims[b]].extent;
    // str_cat, not "b" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    vars.emplace_back(str_cat("b", b), e.dtype());
    extents.push_back(e);
  }
  Expr m = s.ranges[ts.row_dim].extent, n = s.ranges[ts.col_dim].extent;
  Var i("i", m.dtype()), j("j", n.dtype());
  vars.push_back(i);
  extents.push_back(m);
  vars.push_back(j);
  extents.push_back(n);

  auto indices = [&](const BufferRegion& r, const TileShape& t, const Var& row, const Var& col) {
    std::vector<Expr> idx;
    for (const Range& rg : r.ranges) idx.push_back(rg.min);
    for (size_t b = 0; b < t.batch_dims.size(); ++b) {
      Expr& x = idx[t.batch_dims[b]];
      x = add(x, cast(x.dtype(), vars[b]));
    }
    idx[t.row_dim] = add(idx[t.row_dim], cast(idx[t.row_dim].dtype(), row));
    idx[t.col_dim] = add(idx[t.col_dim], cast(idx[t.col_dim].dtype(), col));
    return idx;
  };
  std::vector<Expr> si = indices(s, ts, i, j), di = indices(d, td, j, i);
  Expr load = buffer_load(s.buffer, si, op->span);
  Expr src_ok = in_bounds(s.buffer, si);
  if (!as_const_int(src_ok)) load = select(src_ok, load, make_const(s.buffer->dtype, 0));
  Stmt body = buffer_store(d.buffer, cast(d.buffer->dtype, load), di, op->span);
  Expr dst_ok = in_bounds(d.buffer, di);
  if (!as_const_int(dst_ok)) body = if_then_else(dst_ok, body);
  for (int k = int(vars.size()) - 1; k >= 0; --k)
    body = for_loop(vars[k], make_const(extents[k].dtype(), 0), extents[k], ForKind::Parallel, body);
  return body;
}

}  // namespace tl
