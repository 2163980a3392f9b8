// T.reduce_* and T.finalize_reducer on register fragments (ops/registers.h): a
// reduction over dim 1 of a whole 2-d fragment into a 1-d one (or of a whole 1-d
// fragment into a (1,) one, its single row) makes the destination the rows of the
// source (over dim 0, its columns): each thread folds the registers
// it holds, then the row's holders combine their partials with warp shuffles and
// across warps through a shared scratch row. T.finalize_reducer combines the partials
// of a reducer's holders (or, of a replicated reducer, of every thread).
#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/structural.h"
#include "ops/extent_util.h"
#include "ops/packed_pairs.h"
#include "ops/registers.h"

namespace tl {

using namespace fragments;

namespace {

// Combines each row's partials (in `red`, one per register of the Rows layout `ld`)
// across the threads that hold the row in the 2-d layout `ls`: the lanes of a warp
// with shuffles, then the warps through a shared scratch row.
// `name` names the scratch row (<name>_xwarp). On CUDA, with the op's `batch` (TileLang's
// batch=) dividing the thread's rows, the lanes combine `batch` rows per call
// (tl::warp_allreduce_batch, printed as TileLang's tl::AllReduce<...>::run_batch): the
// same shuffles in the same order, interleaved.
Stmt combine_row_partials(const FragmentLayoutPtr& ls, const FragmentLayoutPtr& ld, const Buffer& red,
                          const std::string& name, const Expr& identity, const char* fn,
                          const std::function<Expr(Expr, Expr)>& combine, SourceSpan span, const Expr& thread,
                          int64_t batch) {
  DataType t = red->dtype;
  int64_t rows = ld->local_size();
  Var i("i", dtype::Int32);
  std::vector<Stmt> body;
  // Across the lanes that share a row, then across the warps that do.
  if (ls->row_lanes() > 1 && batch > 1 && rows % batch == 0) {
    std::string shfl = device_call_name(kWarpAllreduceBatchCall, {fn, ls->row_lanes(), batch});
    Expr first = call(Intrinsic::AddressOf, {buffer_load(red, {mul(i, int_imm(batch))})});
    body.push_back(for_loop(i, int_imm(0), int_imm(rows / batch), ForKind::Unrolled,
                            evaluate(call_extern(dtype::Void, shfl, {first}))));
  } else if (ls->row_lanes() > 1) {
    std::string shfl = device_call_name(kWarpAllreduceCall, {fn, ls->row_lanes()});
    body.push_back(for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled,
                            buffer_store(red, call_extern(t, shfl, {buffer_load(red, {i})}), {i})));
  }
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
  return combine_row_partials(l->parent(), l, ctx.reg(r), r->name, identity, fn, combine, op->span, ctx.t,
                              ctx.cuda ? attr_int(op->attrs, "batch", 1) : 1);
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
    std::string shfl = device_call_name(kWarpAllreduceCall, {fn, lanes});
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

Stmt lower_rows(const TileOpNode* op, const LowerContext& ctx) {
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
    // tl::max2<tl::__half2>(&acc, &acc, &x) ... (max.f16x2, max.NaN.bf16x2 ...; packed.cuh)
    // into two accumulators per row, which
    // start at the identity in place of `red`; then red = the pair's two halves combined.
    // Max and min give the same bits in any order.
    pairs = Buffer::make(dst->name + "_red2", t, {int_imm(2 * rows)}, Scope::Local, {}, op->span);
    std::string fn2 =
        packed_pair_call(str_cat(kind == "absmax" ? "abs_" : "", is_max ? "max2" : "min2", nan ? "_nan" : ""), t);
    Expr k2 = mul(k, int_imm(2));
    Expr acc2 = call(Intrinsic::AddressOf, {buffer_load(pairs, {mul(slot_of(k2), int_imm(2))})});
    Stmt fold2 = evaluate(
        call_extern(dtype::Void, fn2, {acc2, acc2, call(Intrinsic::AddressOf, {buffer_load(ctx.reg(src), {k2})})}));
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
  body.push_back(combine_row_partials(ls, ld, red, dst->name, identity, fn, combine, op->span, ctx.t,
                                      ctx.cuda ? attr_int(op->attrs, "batch", 1) : 1));
  Expr result = buffer_load(red, {i});
  if (!clear) result = combine(buffer_load(ctx.reg(dst), {i}), result);
  body.push_back(
      for_loop(i, int_imm(0), int_imm(rows), ForKind::Unrolled, buffer_store(ctx.reg(dst), result, {i}, op->span)));
  Stmt lowered = allocate(red, seq(body));
  return pairs.defined() ? allocate(pairs, lowered) : lowered;
}

}  // namespace

void infer_reduce_fragments(const TileOpNode* op, OpUses& uses) {
  const BufferRegion &s = op->regions[0], &d = op->regions[1];
  if (attr_int(op->attrs, "finalize", 0)) return;  // in place: the reducer's layout is its loops'
  std::string kind = attr_string(op->attrs, "kind");
  bool shuffled = kind == "sum" || kind == "max" || kind == "min" || kind == "abssum" || kind == "absmax";
  if (!uses.frag(s) && !uses.frag(d)) return;
  if (uses.frag(s) && uses.frag(d) && shuffled && covers_whole(s) && covers_whole(d) && s.buffer.ndim() == 2 &&
      d.buffer.ndim() == 1 && attr_int(op->attrs, "dim", -1) == 1 && d.buffer->shape[0].same_as(d.buffer->shape[0]) &&
      *as_const_int(d.buffer->shape[0]) == *as_const_int(s.buffer->shape[0])) {
    uses.a.row_of.emplace_back(d.buffer.get(), s.buffer.get());
  } else if (uses.frag(s) && uses.frag(d) && shuffled && covers_whole(s) && covers_whole(d) && s.buffer.ndim() == 2 &&
             d.buffer.ndim() == 1 && attr_int(op->attrs, "dim", -1) == 0 &&
             *as_const_int(d.buffer->shape[0]) == *as_const_int(s.buffer->shape[1])) {
    // Over dim 0: each thread holds whole columns of the source and folds them.
    uses.a.col_of.emplace_back(d.buffer.get(), s.buffer.get());
  } else if (uses.frag(s) && uses.frag(d) && shuffled && covers_whole(s) && covers_whole(d) && s.buffer.ndim() == 1 &&
             d.buffer.ndim() == 1 && *as_const_int(d.buffer->shape[0]) == 1) {
    // A whole 1-d fragment into one element: the one row of the source, as a 2-d
    // tile [1, n] reduced over dim 1 (each thread folds its registers, the row's
    // holders combine theirs).
    uses.a.row_of.emplace_back(d.buffer.get(), s.buffer.get());
  } else {
    uses.demote_all(op, "T.reduce_" + kind +
                            " other than over dim 1 or dim 0 of a whole 2-d fragment into a 1-d one, or of a whole "
                            "1-d fragment into a (1,) one");
  }
}

// A finalize of a replicated reducer (every thread holds its own partial of every
// element), of a reducer of another layout, or a reduction.
Stmt lower_reduce_registers(const TileOpNode* op, const LowerContext& ctx) {
  if (!attr_int(op->attrs, "finalize", 0)) return lower_rows(op, ctx);
  if (ctx.a.replicated.count(op->regions[0].buffer.get())) return lower_replicated_finalize(op, ctx);
  return lower_finalize(op, ctx);
}

}  // namespace tl
