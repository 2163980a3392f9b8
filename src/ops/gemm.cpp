// T.gemm: C += op(A) @ op(B) on tiles, op = transpose when asked. Operands may be
// in shared or fragment memory; products accumulate in C's dtype.
#include <cmath>

#include "arith/simplify.h"
#include "ir/attrs.h"
#include "ir/printer.h"
#include "ops/tile_op.h"
#include "target/target.h"

namespace tl {
namespace {

// The two trailing dims of a region (leading dims must be 1).
std::pair<Expr, Expr> matrix_dims(const BufferRegion& r, const char* which, SourceSpan span) {
  int n = int(r.ranges.size());
  if (n < 2)
    throw_user_error(span, str_cat("T.gemm operand ", which, " '", r.buffer->name, "' must be a 2-D tile, got ", n,
                                   " dimension(s)"));
  for (int i = 0; i < n - 2; ++i)
    if (!is_const_one(r.ranges[i].extent))
      throw_user_error(span, str_cat("T.gemm operand ", which, " '", r.buffer->name,
                                     "' must be a 2-D tile; its leading dimension ", i, " has extent > 1"));
  return {r.ranges[n - 2].extent, r.ranges[n - 1].extent};
}

void check_equal(const Expr& a, const Expr& b, const std::string& what, SourceSpan span) {
  auto x = as_const_int(a), y = as_const_int(b);
  if (x && y && *x != *y) throw_user_error(span, str_cat("T.gemm shape mismatch: ", what, " (", *x, " vs ", *y, ")"));
}

// An accumulator must hold the operands' products: float operands (any float16,
// bfloat16, float8 or float32) sum into a float accumulator, integer ones into an
// integer one; int8 products in float16 or float16 products truncated to int32 would
// be silently wrong.
void check_accumulator_dtype(const BufferRegion& a, const BufferRegion& b, const BufferRegion& c, SourceSpan span) {
  DataType ta = a.buffer->dtype, tb = b.buffer->dtype, tc = c.buffer->dtype;
  bool float_operands = ta.is_float() || tb.is_float();
  if (float_operands == tc.is_float()) return;
  throw_user_error(span, str_cat("T.gemm accumulator C '", c.buffer->name, "' is ", tc.name(),
                                 ", which cannot hold the products of ", ta.name(), " A '", a.buffer->name, "' and ",
                                 tb.name(), " B '", b.buffer->name, "'; accumulate ",
                                 float_operands ? "float operands in float32" : "integer operands in int32"));
}

}  // namespace

Stmt make_gemm(BufferRegion a, BufferRegion b, BufferRegion c, Attrs attrs, SourceSpan span) {
  // A slice's extent as written (`A_s[:, j * 64 : (j + 1) * 64]`: (j + 1) * 64 - j * 64).
  for (BufferRegion* r : {&a, &b, &c})
    for (Range& x : r->ranges) x.extent = simplify(x.extent);
  bool ta = attr_int(attrs, "transpose_A", 0), tb = attr_int(attrs, "transpose_B", 0);
  auto [a0, a1] = matrix_dims(a, "A", span);
  auto [b0, b1] = matrix_dims(b, "B", span);
  auto [c0, c1] = matrix_dims(c, "C", span);
  Expr m = ta ? a1 : a0, k = ta ? a0 : a1;
  Expr k2 = tb ? b1 : b0, n = tb ? b0 : b1;
  check_equal(k, k2,
              str_cat("the K extent of A '", a.buffer->name, "'", ta ? " (transposed)" : "",
                      " differs from the K extent of B '", b.buffer->name, "'", tb ? " (transposed)" : ""),
              span);
  check_equal(m, c0,
              str_cat("the M extent of A '", a.buffer->name, "' differs from the rows of C '", c.buffer->name, "'"),
              span);
  check_equal(n, c1,
              str_cat("the N extent of B '", b.buffer->name, "' differs from the columns of C '", c.buffer->name, "'"),
              span);
  const char* names[] = {"M", "N", "K"};
  const Expr* dims[] = {&m, &n, &k};
  for (int i = 0; i < 3; ++i)
    if (!as_const_int(*dims[i]))
      throw_user_error(span, str_cat("T.gemm tile extents must be compile-time constants; ", names[i], " is ",
                                     to_string(*dims[i]), "; allocate the tiles with constant shapes"));
  if (c.buffer->scope == Scope::Global)
    throw_user_error(span, str_cat("T.gemm accumulator C '", c.buffer->name,
                                   "' must be in shared or fragment memory (alloc_fragment), not a global tensor"));
  check_accumulator_dtype(a, b, c, span);
  return tile_op(TileOpKind::Gemm, {std::move(a), std::move(b), std::move(c)}, {}, std::move(attrs), span);
}

Stmt make_gemm_op(TileOpArgs a) {
  // T.gemm_sp (python/tilelang/language/sparse.py) adds its kept values and metadata
  // after A (the decoded tile), B and C; select_gemm_sp chooses between the two.
  bool sparse = attr_int(a.attrs, kGemmSpAttr, 0) == kGemmSpDecoded;
  if (a.regions.size() != (sparse ? 5u : 3u))
    throw_user_error(a.span, str_cat("T.gemm takes three operands A, B and C, got ", a.regions.size()));
  Stmt g = make_gemm(a.regions[0], a.regions[1], a.regions[2], a.attrs, a.span);
  if (!sparse) return g;
  return tile_op(TileOpKind::Gemm, std::move(a.regions), {}, std::move(a.attrs), a.span);
}

// Element (m, k) of the dense A of a gemm on 2:4 compressed A (kGemmSpCompressed):
// regions A_sparse [M][K / 2] ([K / 2][M] when transposed) and E, whose element
// holds the 4-bit codes of bits / 4 consecutive groups of four (tilelang.utils.sparse).
Expr sparse_a_element(const TileOpNode* op, const Expr& m, const Expr& k) {
  auto bit_and = [](Expr x, Expr y) { return binary(BinaryOp::BitAnd, std::move(x), std::move(y)); };
  auto shr = [](Expr x, Expr y) { return binary(BinaryOp::Shr, std::move(x), std::move(y)); };
  const BufferRegion &a = op->regions[0], &e = op->regions[3];
  bool ta = attr_int(op->attrs, "transpose_A", 0), te = attr_int(op->attrs, "transpose_E", 0);
  int64_t per = e.buffer->dtype.bits() / 4;  // codes per element of E
  auto at = [](const BufferRegion& r, const Expr& row, const Expr& col) {
    size_t n = r.ranges.size();
    std::vector<Expr> idx;
    for (size_t d = 0; d + 2 < n; ++d) idx.push_back(r.ranges[d].min);
    idx.push_back(add(r.ranges[n - 2].min, row));
    idx.push_back(add(r.ranges[n - 1].min, col));
    return idx;
  };
  Expr grp = floordiv(k, int_imm(4)), pos = floormod(k, int_imm(4));
  Expr ecol = floordiv(grp, int_imm(per));
  Expr word = cast(dtype::Int32, buffer_load(e.buffer, te ? at(e, ecol, m) : at(e, m, ecol)));
  Expr code = bit_and(shr(word, mul(floormod(grp, int_imm(per)), int_imm(4))), int_imm(15));
  auto kept = [&](int s) {
    Expr kc = add(mul(grp, int_imm(2)), int_imm(s));
    return buffer_load(a.buffer, ta ? at(a, kc, m) : at(a, m, kc));
  };
  Expr zero = make_const(a.buffer->dtype, 0);
  Expr second = select(eq(bit_and(shr(code, int_imm(2)), int_imm(3)), pos), kept(1), zero);
  return select(eq(bit_and(code, int_imm(3)), pos), kept(0), second);
}

// Calls the device header's tile GEMM with element pointers and row strides.
Stmt lower_gemm_serial(const TileOpNode* op) {
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  // Packed sub-byte elements (float4_e2m1fn, int4) have no address: read them by index.
  if (a.buffer->dtype.is_sub_byte() || b.buffer->dtype.is_sub_byte() || c.buffer->dtype.is_sub_byte())
    return lower_gemm_loops(op);
  bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
  bool clear = attr_int(op->attrs, "clear_accum", 0);
  auto [c0, c1] = std::pair(c.ranges[c.ranges.size() - 2].extent, c.ranges.back().extent);
  const BufferRegion& ka = a;
  Expr k = ta ? ka.ranges[ka.ranges.size() - 2].extent : ka.ranges.back().extent;
  // A and B are read (the barrier planner's mask); C is read and written.
  auto ptr = [](const BufferRegion& r, AddressAccess access = AddressAccess::ReadWrite) {
    std::vector<Expr> mins;
    for (const Range& rg : r.ranges) mins.push_back(rg.min);
    return address_of(buffer_load(r.buffer, mins), access);
  };
  auto row_stride = [](const BufferRegion& r) {
    auto strides = r.buffer.effective_strides();
    return cast(dtype::Int64, strides[strides.size() - 2]);
  };
  std::string name = str_cat("tl::gemm_tile<", *as_const_int(c0), ", ", *as_const_int(c1), ", ", *as_const_int(k), ", ",
                             ta ? "true" : "false", ", ", tb ? "true" : "false", ", ", clear ? "true" : "false", ">");
  return evaluate(call_extern(dtype::Void, name,
                              {ptr(a, AddressAccess::Read), row_stride(a), ptr(b, AddressAccess::Read), row_stride(b),
                               ptr(c), row_stride(c)}),
                  op->span);
}

// For targets that run a block's threads in parallel, a gemm that no register or
// tensor-core lowering took (lower_fragments, lower_simdgroup_gemm on Metal,
// lower_gemm_mma): every C element is an independent dot product over K, so the
// (i, j) nest is parallel and each iteration keeps its sum in a register.
Stmt lower_gemm_loops(const TileOpNode* op) {
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
  bool clear = attr_int(op->attrs, "clear_accum", 0);
  size_t na = a.ranges.size(), nc = c.ranges.size();
  Expr m = c.ranges[nc - 2].extent, n = c.ranges[nc - 1].extent;
  Expr k = ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent;
  Var i("gi", m.dtype()), j("gj", n.dtype()), kk("gk", k.dtype());
  auto index = [](const BufferRegion& r, const Expr& row, const Expr& col) {
    std::vector<Expr> idx;
    size_t n = r.ranges.size();
    for (size_t d = 0; d + 2 < n; ++d) idx.push_back(r.ranges[d].min);
    idx.push_back(add(r.ranges[n - 2].min, row));
    idx.push_back(add(r.ranges[n - 1].min, col));
    return idx;
  };
  DataType acc_t = c.buffer->dtype;
  Buffer acc = Buffer::make("acc", acc_t, {int_imm(1)}, Scope::Local);
  Expr zero = int_imm(0);
  bool sparse = attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed;
  if (sparse) k = mul(k, int_imm(2));
  Expr av =
      cast(acc_t, sparse ? sparse_a_element(op, i, kk) : buffer_load(a.buffer, ta ? index(a, kk, i) : index(a, i, kk)));
  Expr bv = cast(acc_t, buffer_load(b.buffer, tb ? index(b, j, kk) : index(b, kk, j)));
  Stmt init = buffer_store(acc, clear ? make_const(acc_t, 0) : buffer_load(c.buffer, index(c, i, j)), {zero});
  Stmt step = buffer_store(acc, add(buffer_load(acc, {zero}), mul(av, bv)), {zero});
  Stmt loop = for_loop(kk, make_const(k.dtype(), 0), k, ForKind::Serial, step);
  Stmt done = buffer_store(c.buffer, buffer_load(acc, {zero}), index(c, i, j), op->span);
  Stmt body = allocate(acc, seq({init, loop, done}));
  body = for_loop(j, make_const(n.dtype(), 0), n, ForKind::Parallel, body);
  return for_loop(i, make_const(m.dtype(), 0), m, ForKind::Parallel, body);
}

// Warps over (M, N), as TileLang's GemmWarpPolicy: Square (0) keeps the warp
// tiles as square as the shape allows, FullRow (1) puts every warp along M,
// FullCol (2) every warp along N. When that split does not divide the tile, FullRow
// takes the most warps along M that do (64 rows over 8 warps: 4 x 2), FullCol the
// fewest: gemms whose accumulators share per-row vectors then still split their
// rows alike, which the squarest split would not promise.
int64_t split_by_policy(int64_t m, int64_t n, int64_t units, int64_t policy, const std::function<bool(int64_t)>& fits,
                        bool ties_to_more_m) {
  if (policy == 1)
    for (int64_t u = units; u >= 1; --u)
      if (fits(u)) return u;
  if (policy == 2)
    for (int64_t u = 1; u <= units; ++u)
      if (fits(u)) return u;
  int64_t best = 0;
  double best_gap = 0;
  for (int64_t u = 1; u <= units; ++u) {
    if (!fits(u)) continue;
    int64_t along_n = units / u;
    double gap = std::abs(double(m) / double(u) - double(n) / double(along_n));
    if (!best || gap < best_gap || (ties_to_more_m && gap == best_gap)) best = u, best_gap = gap;
  }
  return best;
}

int64_t gemm_warp_split(int64_t m, int64_t n, int64_t warps, int64_t policy, int64_t n_step) {
  auto fits = [&](int64_t wm) { return warps % wm == 0 && m % (16 * wm) == 0 && n % (n_step * (warps / wm)) == 0; };
  return split_by_policy(m, n, warps, policy, fits, false);
}

// Tensor cores for a gemm that lower_fragments left to the block (its accumulator
// stays in shared memory): every operand in shared memory, the block's warps
// splitting C, each warp running
// mma.sync.m16n8k16 (f16/bf16 -> f32, f16 -> f16) on its tile (device/cuda/gemm_mma.cuh).
// Returns an undefined Stmt when the gemm does not fit, and the caller keeps
// lower_gemm_loops: other dtypes, shapes that do not split into 16 x 8 x 16 tiles
// over the warps, operands outside shared memory, or targets before sm_75 (and on
// sm_75 anything but float16 into float32).
Stmt lower_gemm_mma(const TileOpNode* op, const Target& target, int64_t threads) {
  if (!target.has_mma_sync_f16() || threads < 32 || threads % 32 != 0) return Stmt();
  if (attr_int(op->attrs, kGemmSpAttr, 0)) return Stmt();  // compressed A: lower_gemm_loops decodes it
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  DataType in = a.buffer->dtype;
  bool f16_acc = in == dtype::Float16 && c.buffer->dtype == dtype::Float16;  // mma.sync's f16-accumulator form
  if (!(in == dtype::Float16 || in == dtype::BFloat16) || !(b.buffer->dtype == in) ||
      !(c.buffer->dtype == dtype::Float32 || f16_acc))
    return Stmt();
  // sm_75 (Turing): float16 into float32 alone (two mma.sync.m16n8k8 a tile).
  if (!target.has_mma_sync() && (in != dtype::Float16 || f16_acc)) return Stmt();
  for (const BufferRegion* r : {&a, &b, &c}) {
    Scope sc = r->buffer->scope;
    if (sc != Scope::Shared && sc != Scope::SharedDyn && sc != Scope::Fragment) return Stmt();
    if (!is_const_one(r->buffer.effective_strides().back()) || r->buffer->layout) return Stmt();  // row-major only
  }
  bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
  bool clear = attr_int(op->attrs, "clear_accum", 0);
  size_t na = a.ranges.size(), nc = c.ranges.size();
  int64_t m = *as_const_int(c.ranges[nc - 2].extent), n = *as_const_int(c.ranges[nc - 1].extent);
  int64_t k = *as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
  if (k % 16 != 0) return Stmt();
  int64_t warps = threads / 32;
  int64_t best = gemm_warp_split(m, n, warps, attr_int(op->attrs, "policy", 0));
  if (!best) return Stmt();
  // A and B are read (the barrier planner's mask); C is read and written.
  auto ptr = [](const BufferRegion& r, AddressAccess access = AddressAccess::ReadWrite) {
    std::vector<Expr> mins;
    for (const Range& rg : r.ranges) mins.push_back(rg.min);
    return address_of(buffer_load(r.buffer, mins), access);
  };
  auto row_stride = [](const BufferRegion& r) {
    auto strides = r.buffer.effective_strides();
    return cast(dtype::Int64, strides[strides.size() - 2]);
  };
  auto flag = [](bool v) { return v ? "true" : "false"; };
  std::string name = str_cat("tl::gemm_mma<", m, ", ", n, ", ", k, ", ", flag(ta), ", ", flag(tb), ", ", flag(clear),
                             ", ", best, ", ", warps / best, ">");
  Stmt call_stmt = evaluate(call_extern(dtype::Void, name,
                                        {ptr(a, AddressAccess::Read), row_stride(a), ptr(b, AddressAccess::Read),
                                         row_stride(b), ptr(c), row_stride(c)}),
                            op->span);
  return attr_stmt(kCooperativeAttr, int64_t(1), call_stmt, op->span);
}

}  // namespace tl
