// T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad): gathers
// one tile of the im2col matrix of a 2-D convolution, so that a convolution
// becomes a GEMM of col [N*OH*OW, KH*KW*C] with the filter [KH*KW*C, F].
//
// img is an NHWC tensor [N, H, W, C]; col a [BM, BK] tile. Row i of the tile is
// output pixel m = nhw_step*BM + i (m = (n*OH + oh)*OW + ow); column j is filter
// tap k = c_step*BK + j (k = (kh*KW + kw)*C + c). The element is
//   img[n, oh*stride + kh*dilation - pad, ow*stride + kw*dilation - pad, c]
// and 0 where that lies in the padding or where m or k is past the matrix.
// KH = KW = kernel; OH = (H + 2*pad - dilation*(kernel-1) - 1) / stride + 1, OW alike.
#include <sstream>

#include "arith/simplify.h"
#include "ir/printer.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

constexpr const char* kSignature = "T.im2col(img, col, nhw_step, c_step, kernel, stride, dilation, pad)";

// kernel, stride, dilation and pad: constant integers with a lower bound.
int64_t conv_param(const TileOpArgs& a, size_t i, const char* name, int64_t at_least) {
  auto v = as_const_int(a.args[i]);
  if (!v)
    throw_user_error(a.span,
                     str_cat(kSignature, ": ", name, " must be a constant integer, got ", to_string(a.args[i])));
  if (*v < at_least)
    throw_user_error(a.span, str_cat(kSignature, ": ", name, " must be at least ", at_least, ", got ", *v));
  return *v;
}

bool is_whole(const BufferRegion& r) {
  for (size_t d = 0; d < r.ranges.size(); ++d) {
    auto lo = as_const_int(r.ranges[d].min);
    if (!lo || *lo != 0 || to_string(r.ranges[d].extent) != to_string(r.buffer->shape[d])) return false;
  }
  return true;
}

}  // namespace

Stmt make_im2col_op(TileOpArgs a) {
  if (a.regions.size() != 2 || a.args.size() != 6)
    throw_user_error(a.span, str_cat(kSignature, " takes an image, a column tile and six scalars"));
  for (BufferRegion& r : a.regions)
    for (Range& rg : r.ranges) rg.extent = simplify(rg.extent);
  const BufferRegion& img = a.regions[0];
  const BufferRegion& col = a.regions[1];
  if (img.buffer.ndim() != 4 || !is_whole(img))
    throw_user_error(a.span, str_cat("T.im2col image '", img.buffer->name,
                                     "' must be a whole NHWC tensor of 4 dimensions [N, H, W, C], got ",
                                     img.buffer.ndim(), " dimension(s); pass the buffer itself, not a slice"));
  if (col.ranges.size() != 2)
    throw_user_error(a.span, str_cat("T.im2col column tile '", col.buffer->name,
                                     "' must have 2 dimensions [block_M, block_K], got ", col.ranges.size()));
  for (size_t i : {0, 1})
    if (!a.args[i].dtype().is_int())
      throw_user_error(
          a.span, str_cat(kSignature, ": ", i == 0 ? "nhw_step" : "c_step", " must be an integer (a block index), got ",
                          to_string(a.args[i]), " of ", a.args[i].dtype().name()));
  conv_param(a, 2, "kernel", 1);
  conv_param(a, 3, "stride", 1);
  conv_param(a, 4, "dilation", 1);
  conv_param(a, 5, "pad", 0);
  return tile_op(TileOpKind::Im2col, a.regions, a.args, std::move(a.attrs), a.span);
}

Stmt lower_im2col_serial(const TileOpNode* op) {
  const Buffer& img = op->regions[0].buffer;
  const BufferRegion& col = op->regions[1];
  DataType t = op->args[0].dtype();
  auto c = [&](int64_t v) { return make_const(t, double(v)); };
  auto dim = [&](int d) { return cast(t, img->shape[d]); };
  int64_t kernel = *as_const_int(op->args[2]), stride = *as_const_int(op->args[3]);
  int64_t dilation = *as_const_int(op->args[4]), pad = *as_const_int(op->args[5]);
  Expr n_img = dim(0), h_img = dim(1), w_img = dim(2), ch = dim(3);
  auto out_extent = [&](Expr e) {
    return add(floordiv(sub(add(std::move(e), c(2 * pad)), c(dilation * (kernel - 1) + 1)), c(stride)), c(1));
  };
  Expr oh_n = out_extent(h_img), ow_n = out_extent(w_img);
  Expr bm = cast(t, col.ranges[0].extent), bk = cast(t, col.ranges[1].extent);

  Var i("i", t), j("j", t);
  Expr m = add(mul(cast(t, op->args[0]), bm), i);
  Expr k = add(mul(cast(t, op->args[1]), bk), j);
  Expr n = floordiv(m, mul(oh_n, ow_n));
  Expr oh = floordiv(floormod(m, mul(oh_n, ow_n)), ow_n);
  Expr ow = floormod(m, ow_n);
  Expr kh = floordiv(k, mul(c(kernel), ch));
  Expr kw = floormod(floordiv(k, ch), c(kernel));
  Expr cc = floormod(k, ch);
  Expr h = sub(add(mul(oh, c(stride)), mul(kh, c(dilation))), c(pad));
  Expr w = sub(add(mul(ow, c(stride)), mul(kw, c(dilation))), c(pad));
  Expr ok = logical_and(lt(m, mul(n_img, mul(oh_n, ow_n))), lt(k, mul(c(kernel * kernel), ch)));
  ok = logical_and(ok, logical_and(logical_and(ge(h, c(0)), lt(h, h_img)), logical_and(ge(w, c(0)), lt(w, w_img))));
  Expr value = select(ok, buffer_load(img, {n, h, w, cc}, op->span), make_const(img->dtype, 0));

  std::vector<Expr> di = {add(col.ranges[0].min, cast(col.ranges[0].min.dtype(), i)),
                          add(col.ranges[1].min, cast(col.ranges[1].min.dtype(), j))};
  Stmt body = buffer_store(col.buffer, cast(col.buffer->dtype, value), di, op->span);
  Expr dst_ok = in_bounds(col.buffer, di);
  if (!as_const_int(dst_ok)) body = if_then_else(dst_ok, body);
  body = for_loop(j, c(0), bk, ForKind::Parallel, body);
  return for_loop(i, c(0), bm, ForKind::Parallel, body);
}

}  // namespace tl
