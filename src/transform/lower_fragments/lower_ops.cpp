// Phase 3 of lower_fragments (plan.h): the tile ops that touch register fragments,
// as per-thread code over the registers each thread holds (src/layout/fragment.h
// says which logical element each register holds): fills, copies to and from memory
// (vectorized where alignment allows), T.gemm as the register-accumulator templates
// of device/cuda/gemm_sm80.cuh (mma.sync) or gemm_sm90.cuh (wgmma), reductions over
// rows (warp shuffles, then a shared scratch row across warps), atomics. Copies
// between memories are dealt to the threads in runs here too (cp.async for the
// producers of a pipelined loop).
#include "arith/simplify.h"
#include "ir/structural.h"
#include "ops/extent_util.h"
#include "ops/tile_op.h"
#include "transform/lower_fragments/plan.h"

namespace tl::fragments {
namespace {

// The other side's index for fragment index `idx`: non-unit dims pair in order,
// counted from the start of the fragment's region.
std::vector<Expr> paired_index(const BufferRegion& frag, const BufferRegion& other, const std::vector<Expr>& idx) {
  std::vector<Expr> comps;
  for (size_t d = 0; d < frag.ranges.size(); ++d) {
    const Range& r = frag.ranges[d];
    if (is_const_one(r.extent)) continue;
    auto mn = as_const_int(r.min);
    comps.push_back(mn && *mn == 0 ? idx[d] : sub(idx[d], cast(idx[d].dtype(), r.min)));
  }
  std::vector<Expr> out;
  size_t next = 0;
  for (const Range& r : other.ranges) {
    if (is_const_one(r.extent)) {
      out.push_back(r.min);
      continue;
    }
    out.push_back(add(r.min, cast(r.min.dtype(), comps[next++])));
  }
  return out;
}

// Whether fragment index `idx` lies in the region `frag` of its fragment.
Expr in_region(const BufferRegion& frag, const std::vector<Expr>& idx) {
  Expr ok;
  for (size_t d = 0; d < frag.ranges.size(); ++d) {
    if (covers_dim(frag, d)) continue;
    const Range& r = frag.ranges[d];
    Expr lo = cast(idx[d].dtype(), r.min);
    Expr here = logical_and(ge(idx[d], lo), lt(idx[d], add(lo, cast(idx[d].dtype(), r.extent))));
    ok = ok.defined() ? logical_and(ok, here) : here;
  }
  return ok.defined() ? ok : bool_imm(true);
}

// The widest run (<= `run` elements along the last dim) that region `mem` can move
// as one aligned vector.
// Packed sub-byte elements (float4_e2m1fn, int4) move element by element, except
// between two packed buffers of one dtype (`packed`): a run of w elements from an
// even one on is w / 2 whole bytes (lower_mem_copy).
int64_t vector_width(const BufferRegion& mem, int64_t run, int64_t bytes, bool packed = false) {
  if (run <= 1 || is_const_one(mem.ranges.back().extent) || (mem.buffer->dtype.is_sub_byte() && !packed)) return 1;
  auto strides = mem.buffer.effective_strides();
  if (!is_const_one(strides.back())) return 1;
  int64_t w = std::min<int64_t>(run, 16 / bytes);
  auto ok = [&](int64_t w) {
    if (run % w != 0 || !divisible(mem.ranges.back().min, w)) return false;
    for (size_t d = 0; d + 1 < strides.size(); ++d)
      if (!divisible(strides[d], w)) return false;
    if (mem.buffer->scope == Scope::Global && !divisible(mem.buffer->shape.back(), w)) return false;
    if (mem.buffer->layout && mem.buffer->layout->chunk_elems() % w != 0) return false;
    return true;
  };
  while (w > 1 && !ok(w)) w /= 2;
  return w;
}

// Combines each row's partials (in `red`, one per register of the Rows layout `ld`)
// across the threads that hold the row in the 2-d layout `ls`: the lanes of a warp
// with shuffles, then the warps through a shared scratch row.
// `name` names the scratch row (<name>_xwarp).
Stmt combine_row_partials(const FragmentLayoutPtr& ls, const FragmentLayoutPtr& ld, const Buffer& red,
                          const std::string& name, const Expr& identity, const char* fn,
                          const std::function<Expr(Expr, Expr)>& combine, SourceSpan span, const Expr& thread) {
  DataType t = red->dtype;
  int64_t rows = ld->local_size();
  Var i("i", dtype::Int32);
  std::vector<Stmt> body;
  // Across the lanes that share a row, then across the warps that do.
  std::string shfl = str_cat("tl::warp_allreduce<", fn, ", ", ls->row_lanes(), ">");
  if (ls->row_lanes() > 1)
    body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled,
                            buffer_store(red, call_extern(t, shfl, {buffer_load(red, {i})}), {i})));
  int64_t warps = ls->row_warps();
  Stmt cross;
  if (warps > 1) {
    std::vector<Expr> shape;
    for (int64_t s : ld->shape()) shape.push_back(int_imm(s));
    shape.push_back(int_imm(warps));
    Buffer ws = Buffer::make(name + "_xwarp", t, shape, Scope::Shared, {}, span);
    std::vector<Expr> at = ld->logical(thread, i);
    std::vector<Expr> widx = at;
    widx.push_back(ls->row_warp_index(thread));
    Expr leader = eq(floormod(thread, int_imm(ls->row_lanes())), int_imm(0));
    Expr row_ok = ld->valid(thread, i);
    Stmt put = if_then_else(logical_and(leader, row_ok), buffer_store(ws, buffer_load(red, {i}), widx));
    Var w("w", dtype::Int32);
    std::vector<Expr> ridx = at;
    ridx.push_back(w);
    Stmt gather = seq({buffer_store(red, identity, {i}),
                       for_loop(w, int_imm(0), int_imm(warps), ForKind::Unrolled,
                                buffer_store(red, combine(buffer_load(red, {i}), buffer_load(ws, ridx)), {i}))});
    if (!is_const_true(row_ok)) gather = if_then_else(row_ok, gather);
    // The barrier between the warps' partials and their gather; the one that keeps
    // the next reduction's partials from overwriting this one's before every warp
    // has gathered is plan_barriers' to place (often an existing barrier already
    // sits between them).
    cross =
        allocate(ws, seq({for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, put), barrier(BarrierKind::Threads),
                          for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, gather)}));
    body.push_back(cross);
  }
  return seq(body);
}

// A reducer op's warp_allreduce functor, its combination and its identity.
void reducer_op(const std::string& kind, DataType t, const char*& fn, std::function<Expr(Expr, Expr)>& combine,
                Expr& identity) {
  if (kind == "sum") {
    fn = "tl::SumOp", identity = make_const(t, 0);
    combine = [](Expr x, Expr y) { return add(std::move(x), std::move(y)); };
  } else if (kind == "max") {
    fn = "tl::MaxOp", identity = has_infinity(t) ? infinity(t, true) : min_value(t);
    combine = [](Expr x, Expr y) { return max(std::move(x), std::move(y)); };
  } else if (kind == "min") {
    fn = "tl::MinOp", identity = has_infinity(t) ? infinity(t) : max_value(t);
    combine = [](Expr x, Expr y) { return min(std::move(x), std::move(y)); };
  } else {
    BinaryOp bop = kind == "bitand" ? BinaryOp::BitAnd : kind == "bitor" ? BinaryOp::BitOr : BinaryOp::BitXor;
    TL_ICHECK(kind == "bitand" || kind == "bitor" || kind == "bitxor", "T.finalize_reducer of reducer op '", kind, "'");
    fn = kind == "bitand" ? "tl::BitAndOp" : kind == "bitor" ? "tl::BitOrOp" : "tl::BitXorOp";
    identity = kind != "bitand" ? make_const(t, 0) : t.is_uint() ? max_value(t) : int_imm(-1, t);
    combine = [bop](Expr x, Expr y) { return binary(bop, std::move(x), std::move(y)); };
  }
}

// `e` (of register index k) when it is the same for all n registers, else nullopt.
std::optional<Expr> same_for_every_register(const Expr& e, const Var& k, int64_t n) {
  Expr first = simplify(substitute(e, {{k.node(), int_imm(0)}}));
  for (int64_t j = 1; j < n; ++j)
    if (!structural_equal(simplify(substitute(e, {{k.node(), int_imm(j)}})), first)) return std::nullopt;
  return first;
}

// Registers 2j and 2j + 1 of a thread hold values of one row, for every j (n even).
bool registers_pair_in_rows(const std::function<Expr(const Expr&)>& slot_of, int64_t n) {
  if (n % 2 != 0) return false;
  for (int64_t j = 0; j < n; j += 2) {
    auto a = as_const_int(simplify(slot_of(int_imm(j)))), b = as_const_int(simplify(slot_of(int_imm(j + 1))));
    if (!a || !b || *a != *b) return false;
  }
  return true;
}

}  // namespace

// Whether `e` is a multiple of `n` for every value of its variables (affine forms).
bool divisible(const Expr& e, int64_t n) {
  if (n == 1) return true;
  if (auto c = as_const_int(e)) return *c % n == 0;
  if (auto* b = e.as<BinaryNode>()) {
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
        return divisible(b->a, n) && divisible(b->b, n);
      case BinaryOp::Mul:
        return divisible(b->a, n) || divisible(b->b, n);
      case BinaryOp::FloorDiv: {  // (q * n * d) / d = q * n, as in k * block_K // e_factor
        auto d = as_const_int(b->b);
        return d && *d > 0 && divisible(b->a, n * *d);
      }
      default:
        return false;
    }
  }
  if (auto* c = e.as<CastNode>()) return c->value.dtype().is_integer() && divisible(c->value, n);
  return false;
}

Expr row_leader(const FragmentLayout& p, const Expr& thread) {
  Expr leader = eq(floormod(thread, int_imm(p.row_lanes())), int_imm(0));
  if (p.row_warps() > 1) leader = logical_and(leader, eq(p.row_warp_index(thread), int_imm(0)));
  return leader;
}

// T.atomic_<kind>(dst region, register fragment): each thread updates the
// elements it holds. Adds of runs of consecutive registers into global memory of
// the same dtype go 2 or 4 at a time (tl::AtomicAddx2 / x4, TileLang's names: one
// vector reduction where the GPU has one), under the same alignment rules as vector
// copies.
Stmt lower_atomic(const TileOpNode* op, const LowerContext& ctx) {
  const BufferRegion d = ctx.region(op->regions[0]);
  const BufferRegion& v = op->regions[1];
  const FragmentLayoutPtr& l = ctx.layout(v.buffer);
  std::string kind = attr_string(op->attrs, "kind");
  int64_t order = attr_int(op->attrs, "memory_order", 0);
  int64_t w = 1;
  DataType t = d.buffer->dtype;
  if (ctx.cuda && kind == "add" && d.buffer->scope == Scope::Global && v.buffer->dtype == t &&
      !is_const_one(v.ranges.back().extent) && (t == dtype::Float32 || t == dtype::Float16 || t == dtype::BFloat16))
    w = std::min<int64_t>(vector_width(d, l->run(), elem_bytes(t)), t == dtype::Float32 ? 4 : 2);
  Var r("r", dtype::Int32);
  Expr k0 = mul(r, int_imm(w));
  std::vector<Expr> di = paired_index(v, d, l->logical(ctx.t, k0));
  Expr ok =
      logical_and(l->valid(ctx.t, k0), d.buffer->scope == Scope::Global ? in_bounds(d.buffer, di) : bool_imm(true));
  // A column vector held by several threads: its first holder updates.
  if (l->kind() == FragmentLayout::Kind::Cols && !is_const_true(l->col_leader(ctx.t)))
    ok = logical_and(ok, l->col_leader(ctx.t));
  Expr dst = call(Intrinsic::AddressOf, {buffer_load(d.buffer, di, op->span)});
  Stmt st;
  if (w > 1) {
    Expr src = call(Intrinsic::AddressOf, {buffer_load(ctx.reg(v.buffer), {k0})});
    st = evaluate(call_extern(dtype::Void, str_cat("tl::AtomicAddx", w), {dst, src, int_imm(order)}), op->span);
  } else {
    Expr value = cast(t, buffer_load(ctx.reg(v.buffer), {k0}));
    st = evaluate(call_extern(dtype::Void, str_cat("tl::atomic_", kind, "<", order, ">"), {dst, value}), op->span);
  }
  if (!is_const_true(ok)) st = if_then_else(ok, st);
  return for_loop(r, int_imm(0), int_imm(l->local_size() / w), ForKind::Unrolled, st, {}, op->span);
}

Stmt lower_fill(const TileOpNode* op, const LowerContext& ctx) {
  const Buffer& b = op->regions[0].buffer;
  Var k("k", dtype::Int32);
  Stmt st = buffer_store(ctx.reg(b), cast(b->dtype, op->args[0]), {k}, op->span);
  return for_loop(k, int_imm(0), int_imm(ctx.layout(b)->local_size()), ForKind::Unrolled, st);
}

// A copy between memories (global, shared, block-wide fragments): the tile is
// cut into runs of w elements along its last dim, dealt to the threads in turn,
// so a warp moves consecutive 16-byte pieces. Producers of a pipelined loop use
// cp.async where the run is 4, 8 or 16 bytes of one dtype and the padding is 0.
Stmt lower_mem_copy(const TileOpNode* op, const LowerContext& ctx) {
  const BufferRegion s = ctx.region(op->regions[0]), d = ctx.region(op->regions[1]);
  std::vector<int64_t> ext;
  for (const Expr& e : d.extents()) {
    auto c = as_const_int(e);
    if (!c) return Stmt();
    if (*c != 1) ext.push_back(*c);
  }
  std::vector<int64_t> sext;
  for (const Expr& e : s.extents()) {
    auto c = as_const_int(e);
    if (!c) return Stmt();
    if (*c != 1) sext.push_back(*c);
  }
  if (ext.empty() || ext != sext) return Stmt();
  int64_t cols = ext.back(), rows = 1;
  for (size_t i = 0; i + 1 < ext.size(); ++i) rows *= ext[i];
  int64_t sb = elem_bytes(s.buffer->dtype), db = elem_bytes(d.buffer->dtype);
  // Two packed buffers of one dtype move whole bytes: runs of an even number of
  // elements that start at an even one (vector_width's divisibility proves both).
  const bool packed = s.buffer->dtype.is_sub_byte() && s.buffer->dtype == d.buffer->dtype;
  int64_t w = std::min(vector_width(s, cols, sb, packed), vector_width(d, cols, db, packed));
  while (w > 1 && (w * std::max(sb, db) > 16 || cols % w != 0)) w /= 2;
  if (packed && w % 2 != 0) w = 1;  // an odd run ends inside a byte
  bool async = !packed && attr_int(op->attrs, kAsyncCopyAttr, 0) && s.buffer->scope == Scope::Global &&
               d.buffer->scope != Scope::Global && s.buffer->dtype == d.buffer->dtype &&
               (w * sb == 4 || w * sb == 8 || w * sb == 16);
  // cp.async pads with zero bytes: only right when the padding value is 0.
  Expr pad = safe_value(op->attrs, s.buffer->dtype);
  auto* pad_f = pad.as<FloatImmNode>();
  auto pad_i = as_const_int(pad);
  if (!((pad_f && pad_f->value == 0) || (pad_i && *pad_i == 0))) async = false;
  int64_t runs_per_row = cols / w, chunks = rows * runs_per_row;
  int64_t iters = (chunks + ctx.threads - 1) / ctx.threads;
  Var it("it", dtype::Int32);
  Expr c = add(mul(it, int_imm(ctx.threads)), ctx.t);
  Expr row = floordiv(c, int_imm(runs_per_row)), col = mul(floormod(c, int_imm(runs_per_row)), int_imm(w));
  std::vector<Expr> comps;
  Expr rest = row;
  for (int i = int(ext.size()) - 2; i >= 0; --i) {
    comps.insert(comps.begin(), i == 0 ? rest : floormod(rest, int_imm(ext[i])));
    if (i > 0) rest = floordiv(rest, int_imm(ext[i]));
  }
  comps.push_back(col);
  auto index = [&](const BufferRegion& r) {
    std::vector<Expr> out;
    size_t next = 0;
    for (const Range& rg : r.ranges)
      out.push_back(is_const_one(rg.extent) ? rg.min : add(rg.min, cast(rg.min.dtype(), comps[next++])));
    return out;
  };
  std::vector<Expr> si = index(s), di = index(d);
  Expr ok_s = s.buffer->scope == Scope::Global ? in_bounds(s.buffer, si) : bool_imm(true);
  Expr ok_d = d.buffer->scope == Scope::Global ? in_bounds(d.buffer, di) : bool_imm(true);
  Expr src_ptr = call(Intrinsic::AddressOf, {buffer_load(s.buffer, si)});
  Expr dst_ptr = call(Intrinsic::AddressOf, {buffer_load(d.buffer, di)});
  Stmt body;
  if (async) {
    body = evaluate(call_extern(dtype::Void, str_cat("tl::cp_async<", w * sb, ">"), {dst_ptr, src_ptr, ok_s}));
  } else {
    // One element e of the run, predicated and padded like the generic copy.
    Var e("e", dtype::Int32);
    std::vector<Expr> se = si, de = di;
    se.back() = add(se.back(), cast(se.back().dtype(), e));
    de.back() = add(de.back(), cast(de.back().dtype(), e));
    Expr ok_se = s.buffer->scope == Scope::Global ? in_bounds(s.buffer, se) : bool_imm(true);
    Expr ok_de = d.buffer->scope == Scope::Global ? in_bounds(d.buffer, de) : bool_imm(true);
    Expr val = buffer_load(s.buffer, se, op->span);
    if (!is_const_true(ok_se)) val = select(ok_se, val, safe_value(op->attrs, s.buffer->dtype));
    Stmt one = buffer_store(d.buffer, cast(d.buffer->dtype, val), de, op->span);
    if (!is_const_true(ok_de)) one = if_then_else(ok_de, one);
    Stmt scalar = for_loop(e, int_imm(0), int_imm(w), ForKind::Unrolled, one);
    if (w == 1) {
      body = scalar;
    } else {
      // A packed element's address is its byte's (codegen_c.cpp): w elements are w / 2 bytes.
      Stmt vec =
          evaluate(call_extern(dtype::Void, str_cat("tl::copy_vec<", packed ? w / 2 : w, ">"), {dst_ptr, src_ptr}));
      Expr ok = logical_and(ok_s, ok_d);
      body = is_const_true(ok) ? vec : if_then_else(ok, vec, scalar);
    }
  }
  if (chunks % ctx.threads != 0) body = if_then_else(lt(c, int_imm(chunks)), body);
  Stmt loop =
      for_loop(it, int_imm(0), int_imm(iters), iters <= 32 ? ForKind::Unrolled : ForKind::Serial, body, {}, op->span);
  return async ? attr_stmt(kAsyncCopyAttr, int64_t(1), loop) : loop;
}

Stmt lower_copy(const TileOpNode* op, const LowerContext& ctx) {
  const BufferRegion s = ctx.region(op->regions[0]), d = ctx.region(op->regions[1]);
  bool fs = ctx.s.layouts.count(op->regions[0].buffer.get()), fd = ctx.s.layouts.count(op->regions[1].buffer.get());
  Var k("k", dtype::Int32);
  if (fs && fd) {
    int64_t n = ctx.layout(s.buffer)->local_size();
    const DataType &from = s.buffer->dtype, &to = d.buffer->dtype;
    if (ctx.cuda && n % 2 == 0 && from == dtype::Float32 && (to == dtype::Float16 || to == dtype::BFloat16)) {
      // Two values per cvt into one 32-bit register (tl::cast_pair): a float16 P
      // then holds 2 values per register, not 1, while it waits for its gemm.
      Expr k2 = mul(k, int_imm(2));
      Expr dst = call(Intrinsic::AddressOf, {buffer_load(ctx.reg(d.buffer), {k2})});
      Stmt st = evaluate(call_extern(
          dtype::Void, "tl::cast_pair",
          {dst, buffer_load(ctx.reg(s.buffer), {k2}), buffer_load(ctx.reg(s.buffer), {add(k2, int_imm(1))})}));
      return for_loop(k, int_imm(0), int_imm(n / 2), ForKind::Unrolled, st, {}, op->span);
    }
    Stmt st = buffer_store(ctx.reg(d.buffer), cast(to, buffer_load(ctx.reg(s.buffer), {k})), {k}, op->span);
    return for_loop(k, int_imm(0), int_imm(n), ForKind::Unrolled, st);
  }
  const BufferRegion& frag = fs ? s : d;
  const BufferRegion& mem = fs ? d : s;
  const FragmentLayoutPtr& l = ctx.layout(frag.buffer);
  int64_t run = l->run();
  // Part of a fragment: the registers outside it are left alone. A vector of
  // registers stays inside the part when the part has whole rows.
  const bool whole = covers_whole(frag), whole_rows = covers_dim(frag, frag.ranges.size() - 1);
  int64_t w = is_const_one(frag.ranges.back().extent) || !whole_rows
                  ? 1
                  : vector_width(mem, run, elem_bytes(mem.buffer->dtype));
  bool global = mem.buffer->scope == Scope::Global;
  // One step per w registers.
  Var r("r", dtype::Int32);
  Expr k0 = mul(r, int_imm(w));
  std::vector<Expr> fi = l->logical(ctx.t, k0);
  std::vector<Expr> mi = paired_index(frag, mem, fi);
  Expr ok = l->valid(ctx.t, k0);
  if (global) ok = logical_and(ok, in_bounds(mem.buffer, mi));
  if (fs && l->kind() == FragmentLayout::Kind::Rows) ok = logical_and(ok, row_leader(*l->parent(), ctx.t));
  if (fs && l->kind() == FragmentLayout::Kind::Cols && !is_const_true(l->col_leader(ctx.t)))
    ok = logical_and(ok, l->col_leader(ctx.t));
  Expr inside = whole ? Expr() : in_region(frag, fi);
  if (inside.defined() && fs) ok = logical_and(inside, ok);
  Expr mem_ptr = call(Intrinsic::AddressOf, {buffer_load(mem.buffer, mi)});
  Expr reg_ptr = call(Intrinsic::AddressOf, {buffer_load(ctx.reg(frag.buffer), {k0})});
  Stmt body;
  if (fs) {
    Stmt st = w > 1 ? evaluate(call_extern(dtype::Void, str_cat("tl::store_vec<", w, ">"), {mem_ptr, reg_ptr}))
                    : buffer_store(mem.buffer, cast(mem.buffer->dtype, buffer_load(ctx.reg(frag.buffer), {k0})), mi,
                                   op->span);
    body = is_const_true(ok) ? st : if_then_else(ok, st);
  } else {
    Stmt st = w > 1 ? evaluate(call_extern(dtype::Void, str_cat("tl::load_vec<", w, ">"), {reg_ptr, mem_ptr}))
                    : buffer_store(ctx.reg(frag.buffer), cast(frag.buffer->dtype, buffer_load(mem.buffer, mi)), {k0},
                                   op->span);
    if (!is_const_true(ok)) {
      Var e("e", dtype::Int32);
      Expr safe = cast(frag.buffer->dtype, safe_value(op->attrs, mem.buffer->dtype));
      Stmt fill = for_loop(e, int_imm(0), int_imm(w), ForKind::Unrolled,
                           buffer_store(ctx.reg(frag.buffer), safe, {add(k0, e)}));
      st = if_then_else(ok, st, fill);
    }
    body = inside.defined() ? if_then_else(inside, st) : st;
  }
  return for_loop(r, int_imm(0), int_imm(l->local_size() / w), ForKind::Unrolled, body, {}, op->span);
}

// The template arguments that close a gemm call after the transposes: Pending
// (wgmma left in flight), then, for a wgmma whose shared operands only TMA writes,
// Fence = false: no generic -> async proxy fence before the tensor cores read
// tiles that no thread store wrote (device/cuda/gemm_sm90.cuh). The defaults
// (Pending = 0, Fence = true) are left out.
static std::string wgmma_tail(const FragmentLayoutPtr& lc, int64_t pending, bool tma_fed) {
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

static std::optional<SlicedOperand> sliced_operand(const BufferRegion& r, bool k_last, bool wgmma) {
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

Stmt lower_gemm(const TileOpNode* op, const LowerContext& ctx) {
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

// T.finalize_reducer: every thread holding a row of a reducer (a Rows layout, whose
// holders each kept their own partial) gets the row's combined value. A reducer of
// another layout has one holder per element: nothing to combine.
Stmt lower_finalize(const TileOpNode* op, const LowerContext& ctx) {
  const Buffer& r = op->regions[0].buffer;
  const FragmentLayoutPtr& l = ctx.layout(r);
  if (l->kind() != FragmentLayout::Kind::Rows) return seq({});
  const char* fn = nullptr;
  std::function<Expr(Expr, Expr)> combine;
  Expr identity;
  reducer_op(attr_string(op->attrs, "kind"), r->dtype, fn, combine, identity);
  return combine_row_partials(l->parent(), l, ctx.reg(r), r->name, identity, fn, combine, op->span, ctx.t);
}

// T.finalize_reducer of a replicated reducer (Analysis::partial_updates): every
// thread of the block (or of its T.ws region) holds its own partial of every
// element, and gets the combination of all of them: the lanes of each warp with
// shuffles, then the warps through a shared scratch array [elements][warps].
Stmt lower_replicated_finalize(const TileOpNode* op, const LowerContext& ctx) {
  const Buffer& r = ctx.a.replicated.at(op->regions[0].buffer.get());
  const char* fn = nullptr;
  std::function<Expr(Expr, Expr)> combine;
  Expr identity;
  reducer_op(attr_string(op->attrs, "kind"), r->dtype, fn, combine, identity);
  DataType t = r->dtype;
  std::vector<int64_t> shape;
  for (const Expr& e : r->shape) shape.push_back(*as_const_int(e));
  int64_t n = elements(shape);
  // Lanes combined by shuffles: whole warps, or a block of fewer threads than a warp
  // (a power of two); otherwise every thread is its own group.
  int64_t lanes = ctx.threads % 32 == 0                                          ? 32
                  : (ctx.threads < 32 && (ctx.threads & (ctx.threads - 1)) == 0) ? ctx.threads
                                                                                 : 1;
  int64_t groups = ctx.threads / lanes;
  Var e("e", dtype::Int32), g("g", dtype::Int32);
  auto element = [&](const Expr& flat) {  // the row-major indices of flat position `flat`
    std::vector<Expr> idx(shape.size());
    Expr rest = flat;
    for (int d = int(shape.size()) - 1; d >= 0; --d) {
      idx[d] = d == 0 ? rest : floormod(rest, int_imm(shape[d]));
      if (d > 0) rest = floordiv(rest, int_imm(shape[d]));
    }
    return idx;
  };
  std::vector<Expr> at = element(e);
  std::vector<Stmt> body;
  if (lanes > 1) {
    std::string shfl = str_cat("tl::warp_allreduce<", fn, ", ", lanes, ">");
    body.push_back(for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled,
                            buffer_store(r, call_extern(t, shfl, {buffer_load(r, at)}), at)));
  }
  if (groups > 1) {
    Buffer ws = Buffer::make(r->name + "_xwarp", t, {int_imm(n), int_imm(groups)}, Scope::Shared, {}, op->span);
    Expr leader = eq(floormod(ctx.t, int_imm(lanes)), int_imm(0));
    Stmt put = if_then_else(leader, buffer_store(ws, buffer_load(r, at), {e, floordiv(ctx.t, int_imm(lanes))}));
    Stmt gather = seq({buffer_store(r, identity, at),
                       for_loop(g, int_imm(0), int_imm(groups), ForKind::Serial,
                                buffer_store(r, combine(buffer_load(r, at), buffer_load(ws, {e, g})), at))});
    // The barrier that keeps a later finalize from overwriting the scratch before
    // every thread has gathered is plan_barriers' to place.
    body.push_back(
        allocate(ws, seq({for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled, put), barrier(BarrierKind::Threads),
                          for_loop(e, int_imm(0), int_imm(n), ForKind::Unrolled, gather)})));
  }
  return seq(body);
}

Stmt lower_reduce(const TileOpNode* op, const LowerContext& ctx) {
  const Buffer &src = op->regions[0].buffer, &dst = op->regions[1].buffer;
  const FragmentLayoutPtr &ls = ctx.layout(src), &ld = ctx.layout(dst);
  std::string kind = attr_string(op->attrs, "kind");
  bool clear = attr_int(op->attrs, "clear", 1);
  DataType t = dst->dtype;
  bool is_max = kind == "max" || kind == "absmax", is_min = kind == "min";
  // nan_propagate=True (a NaN in a line gives NaN) on floats: max.NaN / min.NaN.
  bool nan = attr_int(op->attrs, "nan_propagate", 0) && t.is_float();
  const char* fn = is_max   ? (nan ? "tl::MaxOpNan" : "tl::MaxOp")
                   : is_min ? (nan ? "tl::MinOpNan" : "tl::MinOp")
                            : "tl::SumOp";
  auto combine = [&](const Expr& x, const Expr& y) {
    return is_max ? reduction_max(x, y, nan) : is_min ? reduction_min(x, y, nan) : add(x, y);
  };
  // absmax starts from 0, as TileLang's (so a row of NaNs only gives 0).
  Expr identity = kind == "max" ? (has_infinity(t) ? infinity(t, true) : min_value(t))
                  : is_min      ? (has_infinity(t) ? infinity(t) : max_value(t))
                                : make_const(t, 0);
  int64_t rows = ld->local_size();
  Buffer red = Buffer::make(dst->name + "_red", t, {int_imm(rows)}, Scope::Local, {}, op->span);
  Var i("i", dtype::Int32), k("k", dtype::Int32);
  std::vector<Stmt> body;
  body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(red, identity, {i})));
  Expr x = cast(t, buffer_load(ctx.reg(src), {k}));
  if (kind == "abssum" || kind == "absmax") x = call(Intrinsic::Abs, {x});
  if (ld->kind() == FragmentLayout::Kind::Cols) {
    // Over dim 0 of a tile whose threads hold whole columns: each thread folds the
    // rows of its own columns, no shuffles and no shared memory.
    TL_ICHECK(ls->holds_whole_columns() && ld->parent()->equals(*ls), "reduction into '", dst->name, "' (", ld->str(),
              ") from ", ls->str());
    Var r("r", dtype::Int32);
    Expr xr = cast(t, buffer_load(ctx.reg(src), {ld->parent_register(r, i)}));
    if (kind == "abssum" || kind == "absmax") xr = call(Intrinsic::Abs, {xr});
    body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled,
                            for_loop(r, int_imm(0), int_imm(ls->shape()[0]), ForKind::Unrolled,
                                     buffer_store(red, combine(buffer_load(red, {i}), xr), {i}))));
    Expr result = buffer_load(red, {i});
    if (!clear) result = combine(buffer_load(ctx.reg(dst), {i}), result);
    body.push_back(
        for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(ctx.reg(dst), result, {i}, op->span)));
    return allocate(red, seq(body));
  }
  TL_ICHECK(ld->kind() == FragmentLayout::Kind::Rows && ld->same_rows(*FragmentLayout::rows(ls)), "reduction into '",
            dst->name, "' (", ld->str(), ") from ", ls->str());
  auto slot_of = [&](const Expr& at) { return FragmentLayout::rows(ls)->row_local(at); };
  Expr slot = slot_of(k);
  Stmt fold = buffer_store(red, combine(buffer_load(red, {slot}), x), {slot});
  Expr valid = ls->valid(ctx.t, k);
  if (!is_const_true(valid)) fold = if_then_else(valid, fold);
  int64_t n = ls->local_size();
  Buffer pairs;
  // 16-bit max / min: two registers per instruction where each pair holds two values
  // of one row and the thread holds all its registers or none (`held`).
  std::optional<Expr> held;
  if (ctx.cuda && (is_max || is_min) && src->dtype == t && (t == dtype::Float16 || t == dtype::BFloat16) &&
      registers_pair_in_rows(slot_of, n))
    held = same_for_every_register(valid, k, n);
  if (held) {
    // tl::max2 ... (max.f16x2, max.NaN.bf16x2 ...) into two accumulators per row, which
    // start at the identity in place of `red`; then red = the pair's two halves combined.
    // Max and min give the same bits in any order.
    pairs = Buffer::make(dst->name + "_red2", t, {int_imm(2 * rows)}, Scope::Local, {}, op->span);
    std::string fn2 = str_cat("tl::", kind == "absmax" ? "abs_" : "", is_max ? "max2" : "min2", nan ? "_nan" : "");
    Expr k2 = mul(k, int_imm(2));
    Stmt fold2 = evaluate(call_extern(dtype::Void, fn2,
                                      {call(Intrinsic::AddressOf, {buffer_load(pairs, {mul(slot_of(k2), int_imm(2))})}),
                                       call(Intrinsic::AddressOf, {buffer_load(ctx.reg(src), {k2})})}));
    body[0] = for_loop(i, int_imm(0), int_imm(2 * rows), ForKind::Unrolled, buffer_store(pairs, identity, {i}));
    Stmt folds = for_loop(k, int_imm(0), int_imm(n / 2), ForKind::Unrolled, fold2);
    body.push_back(is_const_true(*held) ? folds : if_then_else(*held, folds));
    Expr i2 = mul(i, int_imm(2));
    body.push_back(
        for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled,
                 buffer_store(red, combine(buffer_load(pairs, {i2}), buffer_load(pairs, {add(i2, int_imm(1))})), {i})));
  } else {
    body.push_back(for_loop(k, int_imm(0), int_imm(n), ForKind::Unrolled, fold));
  }
  body.push_back(combine_row_partials(ls, ld, red, dst->name, identity, fn, combine, op->span, ctx.t));
  Expr result = buffer_load(red, {i});
  if (!clear) result = combine(buffer_load(ctx.reg(dst), {i}), result);
  body.push_back(
      for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(ctx.reg(dst), result, {i}, op->span)));
  Stmt lowered = allocate(red, seq(body));
  return pairs.defined() ? allocate(pairs, lowered) : lowered;
}

}  // namespace tl::fragments
