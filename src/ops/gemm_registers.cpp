// T.gemm (and T.gemm_sp) on register fragments (ops/registers.h): the accumulator
// in the mma.sync or wgmma layout (and A too where it comes from registers), the
// operands read from whole shared tiles or slices of them; lowered to the
// register-accumulator templates of device/cuda/gemm_sm80.cuh (mma.sync, mma.sp) and
// gemm_sm90.cuh (wgmma, wgmma.sp). A gemm that fits neither keeps its fragments in
// shared memory and runs as dot products (lower_gemm_loops).
#include "arith/simplify.h"
#include "ops/extent_util.h"
#include "ops/registers.h"
#include "support/logging.h"

namespace tl {

using namespace fragments;

namespace {

// A wgmma operand that is a K slice of a shared tile (T.gemm(A_s[:, k0:k0 + K], ...),
// k0 possibly a loop variable): the other dims whole (those before the last two one
// index), the K dim (`k_dim`: the last or the one before) sliced at a multiple of
// `step` (the instruction's K) to a constant width. The gemm reads the whole tile's
// layout from `offset` on (device/cuda/gemm_sm90.cuh, KTileA / ka0).
struct KSlice {
  Expr offset;     // the slice's first K index
  int64_t tile_k;  // the tile's extent along K
};
// `lets`: the values of the pure lets around the use, for the multiple check.
std::optional<KSlice> k_slice(const BufferRegion& r, size_t k_dim, int64_t step,
                              const std::map<const VarNode*, Expr>* lets = nullptr);
// The mma.sync form (tl::gemm_ss's LdA / ka0): K whole or as for k_slice, and the
// M / N dim whole or sliced from the start of a swizzle pattern (a multiple of 8
// rows, or of 128 bytes of a row), which the operand's pointer then starts at.
bool mma_slice(const BufferRegion& r, size_t k_dim, int64_t step, const std::map<const VarNode*, Expr>* lets = nullptr);

// The region covers the last two dims of its buffer whole, one index of the others.
bool covers_tile(const BufferRegion& r) {
  size_t n = r.ranges.size();
  if (n < 2) return false;
  for (size_t d = 0; d < n; ++d) {
    if (d + 2 < n) {
      if (!is_const_one(r.ranges[d].extent)) return false;
      continue;
    }
    auto mn = as_const_int(r.ranges[d].min), ex = as_const_int(r.ranges[d].extent),
         sh = as_const_int(r.buffer->shape[d]);
    if (!mn || *mn != 0 || !ex || !sh || *ex != *sh) return false;
  }
  return true;
}

// A wgmma operand may also be a run of whole column blocks of a tile in the wgmma
// layout (Layout::wgmma_swizzle): rows whole, the last dim sliced at a block boundary
// to a width that keeps the tile's swizzle. Those blocks are a tile in that layout
// themselves (the descriptor starts at the first), so B[:, 256:512] of a 512-wide
// tile is the right half's operand.
bool covers_column_blocks(const BufferRegion& r) {
  size_t n = r.ranges.size();
  if (n < 2) return false;
  for (size_t d = 0; d + 2 < n; ++d)
    if (!is_const_one(r.ranges[d].extent)) return false;
  auto rmin = as_const_int(r.ranges[n - 2].min), rex = as_const_int(r.ranges[n - 2].extent);
  auto rows = as_const_int(r.buffer->shape[n - 2]), cols = as_const_int(r.buffer->shape[n - 1]);
  auto c0 = as_const_int(r.ranges[n - 1].min), w = as_const_int(r.ranges[n - 1].extent);
  if (!rmin || *rmin != 0 || !rex || !rows || *rex != *rows || !cols || !c0 || !w || *w <= 0) return false;
  int64_t e = elem_bytes(r.buffer->dtype);
  auto whole = Layout::wgmma_swizzle(*cols, e), part = Layout::wgmma_swizzle(*w, e);
  return whole && part && part->block_cols() == whole->block_cols() && *c0 % whole->block_cols() == 0 &&
         *c0 + *w <= *cols;
}

// Dim `d` of `r` is a constant-width slice of its buffer's dim starting at a multiple
// of `align` (proven with the lets' values), inside the buffer where the start is
// known.
bool slice_at_multiple(const BufferRegion& r, size_t d, int64_t align, const std::map<const VarNode*, Expr>* lets) {
  auto ex = as_const_int(r.ranges[d].extent), sh = as_const_int(r.buffer->shape[d]);
  if (!ex || !sh || *ex <= 0 || *ex > *sh) return false;
  Expr start = simplify(r.ranges[d].min);
  auto c = as_const_int(start);
  if (c && (*c < 0 || *c + *ex > *sh)) return false;
  auto rem = as_const_int(simplify(floormod(lets ? substitute(start, *lets) : start, int_imm(align))));
  return rem && *rem == 0;
}

bool leading_dims_single(const BufferRegion& r) {
  for (size_t d = 0; d + 2 < r.ranges.size(); ++d)
    if (!is_const_one(r.ranges[d].extent)) return false;
  return true;
}

std::optional<KSlice> k_slice(const BufferRegion& r, size_t k_dim, int64_t step,
                              const std::map<const VarNode*, Expr>* lets) {
  size_t n = r.ranges.size();
  if (n < 2 || k_dim + 2 < n || k_dim >= n || !leading_dims_single(r)) return std::nullopt;
  size_t other = k_dim == n - 1 ? n - 2 : n - 1;
  auto omin = as_const_int(r.ranges[other].min), oex = as_const_int(r.ranges[other].extent),
       osh = as_const_int(r.buffer->shape[other]);
  if (!omin || *omin != 0 || !oex || !osh || *oex != *osh) return std::nullopt;
  if (!slice_at_multiple(r, k_dim, step, lets) || *as_const_int(r.ranges[k_dim].extent) % step != 0)
    return std::nullopt;
  return KSlice{simplify(r.ranges[k_dim].min), *as_const_int(r.buffer->shape[k_dim])};
}

bool mma_slice(const BufferRegion& r, size_t k_dim, int64_t step, const std::map<const VarNode*, Expr>* lets) {
  size_t n = r.ranges.size();
  if (n < 2 || k_dim + 2 < n || k_dim >= n || !leading_dims_single(r)) return false;
  size_t mn_dim = k_dim == n - 1 ? n - 2 : n - 1;
  // M / N: rows at a multiple of 8 (the swizzle's period), or columns at 128 bytes.
  int64_t mn_align = mn_dim == n - 1 ? std::max<int64_t>(1, 128 / elem_bytes(r.buffer->dtype)) : 8;
  return slice_at_multiple(r, k_dim, step, lets) && *as_const_int(r.ranges[k_dim].extent) % step == 0 &&
         slice_at_multiple(r, mn_dim, mn_align, lets);
}

// The wgmma form of a register gemm (device/cuda/gemm_sm90.cuh): every dtype
// pair gemm() accepts (f16/bf16, tf32, fp8 in any mix into float32; int8/uint8
// into int32; one instruction reads 32 bytes of K; for a compressed T.gemm_sp, A
// the kept values, whose K / 2-wide rows wgmma.sp reads as the dense m64nNk16
// reads A, and `kk` their extent), warpgroups splitting C into
// tiles of whole m64 rows and 16-column multiples, operand rows in whole 32-byte
// swizzle rows; wgmma transposes only 16-bit operands, so the others must be
// K-major. Seeds the layouts and returns "" when it fits; else says why, and
// nothing is recorded.
std::string try_wgmma(OpUses& uses, const TileOpNode* op, GemmUse use, int64_t m, int64_t n, int64_t kk, bool ta) {
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  DataType in = a.buffer->dtype;
  bool half = in == dtype::Float16 || in == dtype::BFloat16;
  if (uses.a.threads % kWarpGroupThreads != 0)
    return str_cat("the block's ", uses.a.threads, " threads are not whole warpgroups of ", kWarpGroupThreads);
  int64_t inst_k = 32 / elem_bytes(in);
  if (kk % inst_k != 0) return str_cat("K = ", kk, " is not a multiple of ", inst_k, " (32 bytes of ", in.name(), ")");
  bool tb = attr_int(op->attrs, "transpose_B", 0), sparse = attr_int(op->attrs, kGemmSpAttr, 0) != 0;
  if (!half && (ta || !tb))
    return str_cat("wgmma reads ", in.name(), " operands only K-major: A [M][K] and B [N][K] (transpose_A=False, ",
                   "transpose_B=True), and this T.gemm has transpose_A=", ta ? "True" : "False",
                   ", transpose_B=", tb ? "True" : "False");
  for (const BufferRegion* r : {&a, &b}) {
    size_t nd = r->ranges.size(), k_dim = (r == &a ? !ta : tb) ? nd - 1 : nd - 2;
    bool sliced =
        is_shared(r->buffer) && (covers_column_blocks(*r) || (!sparse && k_slice(*r, k_dim, inst_k, &uses.lets())));
    if (!(is_shared(r->buffer) || uses.a.candidate(r->buffer)) || !(covers_tile(*r) || sliced))
      return "an operand is not a whole shared-memory tile (or whole swizzle column blocks of one, or a K slice "
             "of one at a multiple of the instruction's K)";
    auto sh = const_shape(r->buffer);
    if (!sh || !Layout::wgmma_swizzle(sh->back(), elem_bytes(r->buffer->dtype)))
      return "an operand's rows are not a multiple of 32 bytes";
  }
  // An N-major B: each warpgroup's columns are whole swizzle rows of B, or lie in one.
  int64_t b_row = 128;
  while (b_row > 32 && (n * elem_bytes(in)) % b_row != 0) b_row /= 2;
  int64_t b_width = b_row / elem_bytes(in);
  int64_t groups = uses.a.threads / kWarpGroupThreads;
  auto fits = [&](int64_t wg_m) {
    if (groups % wg_m != 0 || m % (64 * wg_m) != 0) return false;
    int64_t wg_n = groups / wg_m;
    if (n % wg_n != 0 || (n / wg_n) % 16 != 0) return false;
    int64_t tn = n / wg_n;
    return tb || tn % b_width == 0 || b_width % tn == 0;
  };
  // As gemm_warp_split, over warpgroups; of equally square splits the one with
  // more warpgroups along M, which keeps each row of C in one warpgroup (row
  // reductions stay in registers, and C can be the A of a register gemm).
  int64_t policy = uses.a.policy(op);
  int64_t wg_m = split_by_policy(m, n, groups, policy, fits, true);
  if (!wg_m)
    return str_cat("the ", m, " x ", n, " tile does not split into m64 x n16 blocks over ", groups, " warpgroups");
  bool a_in_regs = use.a && half && !ta && covers_whole(a) && a.buffer.ndim() == 2;
  if (a_in_regs && wg_m != groups && policy == 0) uses.a.a_wants_full_row.insert(op);
  if (a_in_regs && wg_m != groups)
    return "A in registers needs every warpgroup along M (policy FullRow and M a multiple of 64 per warpgroup)";
  uses.a.seeds[c.buffer.get()] = FragmentLayout::wgmma_accum(m, n, wg_m, groups / wg_m);
  uses.a.seed_spans[c.buffer.get()] = op->span;
  if (use.a && a_in_regs) {
    uses.a.seeds[a.buffer.get()] = FragmentLayout::wgmma_accum(m, kk, wg_m, 1);
    uses.a.seed_spans[a.buffer.get()] = op->span;
  } else if (use.a) {
    uses.a.demote(a.buffer,
                  at(op->span, "A of a wgmma T.gemm comes from registers only 16-bit, untransposed and whole"));
    use.a = nullptr;
  }
  if (use.b) uses.a.demote(b.buffer, at(op->span, "B of T.gemm is read from shared memory"));
  use.b = nullptr;
  uses.a.gemms.push_back(use);
  return "";
}

// The template arguments that close a gemm call after the transposes: Pending
// (wgmma left in flight), then, for a wgmma whose shared operands only TMA writes,
// Fence = false: no generic -> async proxy fence before the tensor cores read
// tiles that no thread store wrote (device/cuda/gemm_sm90.cuh). The defaults
// (Pending = 0, Fence = true) are left out.
std::string wgmma_tail(const FragmentLayoutPtr& lc, int64_t pending, bool tma_fed) {
  if (lc->kind() == FragmentLayout::Kind::WgmmaAccum && tma_fed) return str_cat(", ", pending, ", false>");
  return pending > 0 ? str_cat(", ", pending, ">") : std::string(">");
}

// How a register gemm reads a shared operand that is a slice of its tile
// (device/cuda/gemm_sm80.cuh, gemm_sm90.cuh; collect.cpp checked the slice): the
// pointer starts at the slice with its K start zeroed, `k0` is the K start (an
// argument), and `tile` the template argument: the tile's extent along K for wgmma
// (whose M / N slices are whole column blocks with a pointer of their own), its row
// length for mma.sync (whose M / N slices start a swizzle pattern).
struct SlicedOperand {
  Expr k0;
  int64_t tile;
};

std::optional<SlicedOperand> sliced_operand(const BufferRegion& r, bool k_last, bool wgmma) {
  size_t n = r.ranges.size();
  if (!is_shared(r.buffer) || n < 2) return std::nullopt;
  bool whole = true;
  for (size_t d = n - 2; d < n; ++d) {
    auto mn = as_const_int(r.ranges[d].min), ex = as_const_int(r.ranges[d].extent);
    auto sh = as_const_int(r.buffer->shape[d]);
    whole = whole && mn && *mn == 0 && ex && sh && *ex == *sh;
  }
  if (whole) return std::nullopt;
  size_t d = n - (k_last ? 1 : 2);
  if (wgmma) {
    if (covers_column_blocks(r)) return std::nullopt;
    auto s = k_slice(r, d, 1);  // the start's multiple checked with the lets around the gemm
    if (!s) return std::nullopt;
    return SlicedOperand{s->offset, s->tile_k};
  }
  return SlicedOperand{simplify(r.ranges[d].min), *as_const_int(r.buffer->shape[n - 1])};
}

}  // namespace

void infer_gemm_fragments(const TileOpNode* op, OpUses& uses) {
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  GemmUse use{op};
  auto fail = [&](const std::string& why) {
    log(LogLevel::Debug,
        str_cat(op->span.defined() ? op->span.str() + ": " : "", "T.gemm takes the shared-memory path: ", why));
    for (const BufferRegion& r : op->regions)
      uses.a.demote(r.buffer, at(op->span, "T.gemm takes the shared-memory path: " + why));
  };
  if (!uses.a.candidate(c.buffer)) return fail("the accumulator is not a register fragment");
  use.c = c.buffer.get();
  if (uses.a.candidate(a.buffer)) use.a = a.buffer.get();
  if (uses.a.candidate(b.buffer)) use.b = b.buffer.get();
  // tfloat32 operands are float32 storage the tensor cores read as tf32, as float32 ones are.
  auto operand = [](DataType t) { return t == dtype::TFloat32 ? DataType(dtype::Float32) : t; };
  DataType in = operand(a.buffer->dtype), in_b = operand(b.buffer->dtype);
  if (!uses.a.target->has_mma_sync_f16() || uses.a.threads % 32 != 0)
    return fail("the target has no mma.sync or the block is not whole warps");
  // sm_75: float16 operands into a float32 accumulator only (two m16n8k8 a tile).
  if (!uses.a.target->has_mma_sync() && !(in == dtype::Float16 && in_b == dtype::Float16 &&
                                          c.buffer->dtype == dtype::Float32 && !attr_int(op->attrs, kGemmSpAttr, 0)))
    return fail(str_cat("the tensor cores of ", uses.a.target->arch,
                        " take float16 operands into a float32 "
                        "accumulator only (mma.sync.m16n8k8); ",
                        in.name(), " x ", in_b.name(), " into ", c.buffer->dtype.name(), " runs as dot products"));
  // mma.sync: f16/bf16 and tf32 (float32 operands) into float32, f16 also into
  // float16, int8/uint8 into int32, and from sm_89 fp8 e4m3fn/e5m2 (A and B may
  // differ) into float32. wgmma takes the same pairs.
  auto is_fp8 = [](DataType t) { return t == dtype::Float8E4M3FN || t == dtype::Float8E5M2; };
  bool half = in == dtype::Float16 || in == dtype::BFloat16;
  bool tf32 = in == dtype::Float32, byte = in == dtype::Int8 || in == dtype::UInt8;
  bool fp8 = is_fp8(in) && is_fp8(in_b) && uses.a.target->sm_version() >= 89;
  DataType acc = byte ? dtype::Int32 : dtype::Float32;
  bool f16_acc = in == dtype::Float16 && c.buffer->dtype == dtype::Float16;
  bool operands_fit = (half || tf32 || byte || fp8) && (in_b == in || fp8);
  if (!operands_fit || !(c.buffer->dtype == acc || f16_acc)) {
    std::string why = str_cat("no tensor-core instruction that tilelang emits takes ", in.name(), " x ",
                              b.buffer->dtype.name(), " into a ", c.buffer->dtype.name(),
                              " accumulator (it emits float16/bfloat16/float32 into float32, float16 into float16, "
                              "int8/uint8 into int32 and fp8 into float32 from sm_89; none accumulates in bfloat16)");
    if (operands_fit)
      uses.a.off_tensor_cores.emplace_back(
          op, str_cat(why, "; use a ", acc.name(), " accumulator", in == dtype::Float16 ? " (or float16)" : ""));
    return fail(why);
  }
  if (!covers_whole(c) || c.buffer.ndim() != 2) return fail("the accumulator region is not a whole 2-d fragment");
  bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
  int64_t m = *as_const_int(c.ranges[0].extent), n = *as_const_int(c.ranges[1].extent);
  size_t na = a.ranges.size();
  auto kk = as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
  int64_t k_step = 32 / elem_bytes(in);  // one mma reads 32 bytes of K
  if (!kk || *kk % k_step != 0) return fail(str_cat("K is not a multiple of ", k_step));
  // T.gemm_sp on the sparse tensor cores (select_gemm_sp chose it): A holds the kept
  // values, half of K; one instruction reads 32 bytes of them a row (mma.sp m16n8k32
  // and wgmma.sp m64nNk32 for 16-bit types, mma.sp m16n8k64 for 8-bit ones).
  // Operands from shared memory; wgmma.sp only for 16-bit types (unless
  // tl.gemm_sp_wgmma is off), and a gemm it does not fit keeps mma.sp without moving
  // the kernel's other gemms off wgmma (mma.sp's operands are its own).
  bool sparse = attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed;
  if (sparse) {
    bool fits = (half || fp8) ? c.buffer->dtype == dtype::Float32 : byte && c.buffer->dtype == dtype::Int32;
    if (!fits || !is_shared(op->regions[3].buffer))
      return fail(
          "mma.sp takes float16/bfloat16/fp8 operands into float32 and int8/uint8 into int32, metadata in "
          "shared memory");
    // A_sparse in registers (select_gemm_sp chose it for wgmma.sp with A from
    // registers): try_wgmma gives it the register layout of a wgmma A.
  }
  const bool sparse_regs = sparse && use.a;
  std::string where = op->span.defined() ? op->span.str() + ": " : "";
  if (uses.a.wgmma && sparse && uses.a.sparse_wgmma && !half)
    log(LogLevel::Debug, where + "T.gemm_sp runs on mma.sp: wgmma.mma_async.sp is emitted for float16 and bfloat16");
  if (uses.a.wgmma && sparse && uses.a.sparse_wgmma && half) {
    std::string why = try_wgmma(uses, op, use, m, n, *kk, ta);
    if (why.empty()) {
      log(LogLevel::Debug, where + "T.gemm_sp runs on wgmma.mma_async.sp (tl.gemm_sp_wgmma=False keeps mma.sp)");
      return;
    }
    // A_sparse in registers has no mma.sp form: the gemm takes the shared-memory
    // path (A_sparse demoted, dot products reading it through the metadata).
    if (sparse_regs) return fail("A_sparse in registers cannot use wgmma.mma_async.sp: " + why);
    log(LogLevel::Debug, where + "T.gemm_sp cannot use wgmma.mma_async.sp, so it runs on mma.sp: " + why);
  }
  if (sparse_regs) return fail("A_sparse in registers runs on wgmma.mma_async.sp only, which is off here");
  if (uses.a.wgmma && !sparse) {
    std::string why = try_wgmma(uses, op, use, m, n, *kk, ta);
    if (why.empty()) return;
    uses.a.wgmma_refused = true;
    log(LogLevel::Debug, where + "T.gemm cannot use wgmma, so the kernel's gemms use mma.sync: " + why);
  }
  int64_t warps = uses.a.threads / 32;
  int64_t wm = gemm_warp_split(m, n, warps, uses.a.policy(op), 16);
  if (!wm)
    return fail(str_cat("the ", m, " x ", n, " tile does not split over ", warps,
                        " warps into warp tiles of 16-row and 16-column multiples"));
  for (const BufferRegion* r : {&a, &b}) {
    size_t nd = r->ranges.size(), k_dim = (r == &a ? !ta : tb) ? nd - 1 : nd - 2;
    bool sliced = !sparse && is_shared(r->buffer) && mma_slice(*r, k_dim, k_step, &uses.lets());
    if (!(is_shared(r->buffer) || uses.a.candidate(r->buffer)) || !(covers_tile(*r) || sliced))
      return fail("an operand is not a whole shared-memory tile (or a slice of one: K from a multiple of " +
                  std::to_string(k_step) + ", M / N from a multiple of 8 rows or 128 bytes of a row)");
    auto sh = const_shape(r->buffer);
    if (!sh || !Layout::swizzle(sh->back(), elem_bytes(r->buffer->dtype)))
      return fail("an operand's row length has no conflict-free swizzle");
  }
  uses.a.seeds[c.buffer.get()] = FragmentLayout::accum(m, n, wm, warps / wm);
  uses.a.seed_spans[c.buffer.get()] = op->span;
  if (use.a) {
    // A from registers: the accumulator layout of an M x K tile, every warp along M.
    bool a_fits = half && !ta && covers_whole(a) && a.buffer.ndim() == 2;
    if (!a_fits || warps / wm != 1) {
      if (a_fits && uses.a.policy(op) == 0) uses.a.a_wants_full_row.insert(op);
      uses.a.demote(a.buffer, at(op->span, str_cat("A of T.gemm comes from registers only for a 16-bit, untransposed "
                                                   "whole 2-d fragment with every warp along M (policy FullRow); here ",
                                                   wm, " x ", warps / wm, " warps")));
      use.a = nullptr;
    } else {
      uses.a.seeds[a.buffer.get()] = FragmentLayout::accum(m, *kk, wm, 1);
      uses.a.seed_spans[a.buffer.get()] = op->span;
    }
  }
  if (use.b) uses.a.demote(b.buffer, at(op->span, "B of T.gemm is read from shared memory"));
  use.b = nullptr;
  uses.a.gemms.push_back(use);
}

Stmt lower_gemm_registers(const TileOpNode* op, const LowerContext& ctx) {
  const BufferRegion &a = op->regions[0], &b = op->regions[1], &c = op->regions[2];
  const FragmentLayoutPtr& lc = ctx.layout(c.buffer);
  bool ta = attr_int(op->attrs, "transpose_A", 0), tb = attr_int(op->attrs, "transpose_B", 0);
  bool clear = attr_int(op->attrs, "clear_accum", 0);
  int64_t m = lc->shape()[0], n = lc->shape()[1];
  size_t na = a.ranges.size();
  int64_t kk = *as_const_int(ta ? a.ranges[na - 2].extent : a.ranges[na - 1].extent);
  // A wgmma gemm the pipeline marked asynchronous returns with its own group in
  // flight (device/cuda/gemm_sm90.cuh, Pending = 1), or with the groups of the K slices
  // issued with it (Pending = n, pipeline_loops/emit.cpp); the pipeline waits for them.
  int64_t pending =
      lc->kind() == FragmentLayout::Kind::WgmmaAccum && !clear ? attr_int(op->attrs, kWgmmaAsyncAttr, 0) : 0;
  auto ptr = [&](const BufferRegion& r, bool in_flight) {
    std::vector<Expr> mins;
    for (const Range& rg : r.ranges) mins.push_back(rg.min);
    // The gemm reads its shared operands, past its return when it is left in flight
    // (the barrier planner's mask).
    return address_of(buffer_load(ctx.buffer(r.buffer), mins),
                      in_flight ? AddressAccess::ReadInFlight : AddressAccess::Read);
  };
  auto regs = [&](const Buffer& buf) { return call(Intrinsic::AddressOf, {buffer_load(ctx.reg(buf), {int_imm(0)})}); };
  auto flag = [](bool v) { return v ? "true" : "false"; };
  std::vector<Stmt> out;
  if (clear) {
    Var k("k", dtype::Int32);
    out.push_back(for_loop(k, int_imm(0), int_imm(lc->local_size()), ForKind::Unrolled,
                           buffer_store(ctx.reg(c.buffer), make_const(c.buffer->dtype, 0), {k})));
  }
  // The same template arguments for both forms: warps (mma.sync) or warpgroups (wgmma).
  const bool wgmma = lc->kind() == FragmentLayout::Kind::WgmmaAccum;
  const char* prefix = wgmma ? "tl::wgmma_gemm" : "tl::gemm";
  bool tma_fed = ctx.tma_only.count(a.buffer.get()) && ctx.tma_only.count(b.buffer.get());
  if (attr_int(op->attrs, kGemmSpAttr, 0) == kGemmSpCompressed) {
    // tl::gemm_sp_ss (device/cuda/gemm_sp_sm80.cuh) or tl::wgmma_gemm_sp_ss
    // (gemm_sm90.cuh): K is the dense extent. The threads read E into registers
    // before the call returns, in flight or not.
    const BufferRegion& e = op->regions[3];
    const std::string te = flag(attr_int(op->attrs, "transpose_E", 0));
    if (ctx.s.layouts.count(a.buffer.get())) {  // A_sparse in registers: wgmma.sp only (select_gemm_sp)
      std::string name =
          str_cat("tl::wgmma_gemm_sp_rs<", m, ", ", n, ", ", 2 * kk, ", ", lc->warps_m(), ", ", lc->warps_n(), ", ",
                  flag(tb), ", ", te, wgmma_tail(lc, pending, ctx.tma_only.count(b.buffer.get())));
      out.push_back(
          evaluate(call_extern(dtype::Void, name, {regs(a.buffer), ptr(e, false), ptr(b, pending > 0), regs(c.buffer)}),
                   op->span));
      return seq(out);
    }
    const char* sp = lc->kind() == FragmentLayout::Kind::WgmmaAccum ? "tl::wgmma_gemm_sp_ss<" : "tl::gemm_sp_ss<";
    std::string name = str_cat(sp, m, ", ", n, ", ", 2 * kk, ", ", lc->warps_m(), ", ", lc->warps_n(), ", ", flag(ta),
                               ", ", flag(tb), ", ", te, wgmma_tail(lc, pending, tma_fed));
    out.push_back(evaluate(
        call_extern(dtype::Void, name, {ptr(a, pending > 0), ptr(e, false), ptr(b, pending > 0), regs(c.buffer)}),
        op->span));
  } else {
    // Operands in shared memory may be slices of a tile (sliced_operand: the tile
    // arguments after the transposes and, for wgmma, Pending and Fence spelled out;
    // the K offsets ka0 / kb0 after the accumulator).
    bool a_regs = ctx.s.layouts.count(a.buffer.get());
    bool fed = a_regs ? ctx.tma_only.count(b.buffer.get()) > 0 : tma_fed;
    std::optional<SlicedOperand> sa = a_regs ? std::nullopt : sliced_operand(a, !ta, wgmma);
    std::optional<SlicedOperand> sb = sliced_operand(b, tb, wgmma);
    auto operand = [&](const BufferRegion& r, const std::optional<SlicedOperand>& s, bool k_last) {
      if (!s) return ptr(r, pending > 0);
      BufferRegion whole = r;  // the tile's start: the slice's offset is an argument
      whole.ranges[r.ranges.size() - (k_last ? 1 : 2)].min = int_imm(0);
      return ptr(whole, pending > 0);
    };
    std::string name = str_cat(prefix, a_regs ? "_rs<" : "_ss<", m, ", ", n, ", ", kk, ", ", lc->warps_m(), ", ",
                               lc->warps_n(), ", ", a_regs ? "" : str_cat(flag(ta), ", "), flag(tb));
    std::vector<Expr> args{a_regs ? regs(a.buffer) : operand(a, sa, !ta), operand(b, sb, tb), regs(c.buffer)};
    if (sa || sb) {
      if (wgmma) name += str_cat(", ", pending, ", ", flag(!fed));
      // The default of an operand that is not a slice: its K extent (wgmma), its row
      // length (mma.sync).
      int64_t a_tile = wgmma || !ta ? kk : m, b_tile = wgmma || tb ? kk : n;
      if (!a_regs) name += str_cat(", ", sa ? sa->tile : a_tile);
      name += str_cat(", ", sb ? sb->tile : b_tile, ">");
      if (!a_regs) args.push_back(sa ? cast(dtype::Int32, sa->k0) : int_imm(0));
      args.push_back(sb ? cast(dtype::Int32, sb->k0) : int_imm(0));
    } else {
      name += wgmma_tail(lc, pending, fed);
    }
    out.push_back(evaluate(call_extern(dtype::Void, name, args), op->span));
  }
  return seq(out);
}

}  // namespace tl
