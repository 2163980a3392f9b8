// T.copy on register fragments (ops/registers.h): between two whole fragments
// (one layout for both, converted in pairs on CUDA), or between a fragment (or part
// of one) and memory by the registers each thread holds, vectorized where alignment
// allows. A copy between memories is dealt to the threads in runs here too
// (lower_mem_copy; cp.async for the producers of a pipelined loop).
#include "arith/simplify.h"
#include "ir/device_calls.h"
#include "ir/structural.h"
#include "ops/extent_util.h"
#include "ops/packed_pairs.h"
#include "ops/registers.h"

namespace tl {

using namespace fragments;

void infer_copy_fragments(const TileOpNode* op, OpUses& uses) {
  const BufferRegion &s = op->regions[0], &d = op->regions[1];
  if (!uses.frag(s) && !uses.frag(d)) return;
  // Part of a fragment goes to or from memory by the registers inside the part
  // (lower_copy_registers); between two fragments, only whole ones pair.
  if (!pairs_exactly(s, d) || (uses.frag(s) && uses.frag(d) && (!covers_whole(s) || !covers_whole(d)))) {
    uses.demote_all(op, "T.copy between parts of fragments, or of regions whose extents do not pair up");
    return;
  }
  if (uses.frag(s) && uses.frag(d)) {
    if (*const_shape(s.buffer) == *const_shape(d.buffer))
      uses.a.same.emplace_back(s.buffer.get(), d.buffer.get());
    else
      uses.demote_all(op, "T.copy between fragments of different shapes");
  }
  uses.a.note_bytes(s.buffer, d.buffer);
  uses.a.note_bytes(d.buffer, s.buffer);
  if (uses.frag(d) && s.buffer->scope == Scope::Global) uses.a.loaded_from_global.insert(d.buffer.get());
}

// A copy between memories (global, shared, block-wide fragments): the tile is
// cut into runs of w elements along its last dim, dealt to the threads in turn,
// so a warp moves consecutive 16-byte pieces. Producers of a pipelined loop use
// cp.async where the run is 4, 8 or 16 bytes of one dtype and the padding is 0.
Stmt fragments::lower_mem_copy(const TileOpNode* op, const LowerContext& ctx) {
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
  // A pipelined loop's producer copy (kAsyncCopyAttr, the loop waits), or T.async_copy's
  // (kAsyncIssueAttr: CUDA, and sm_80+ where drop_idle_async_waits keeps it; the kernel
  // waits).
  const bool in_pipeline = attr_int(op->attrs, kAsyncCopyAttr, 0) != 0;
  const bool issue = ctx.cuda && attr_int(op->attrs, kAsyncIssueAttr, 0) != 0;
  bool async = !packed && (in_pipeline || issue) && s.buffer->scope == Scope::Global &&
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
  Expr src_ptr = address_of(buffer_load(s.buffer, si), AddressAccess::Read);
  Expr dst_ptr = address_of(buffer_load(d.buffer, di), AddressAccess::Write);
  Stmt body;
  if (async) {
    // Zero-filled where the source's bounds check fails (the CUDA code generator prints
    // tl::cp_async_gs<bytes>(dst, src) where the check has become true).
    body = evaluate(
        call_extern(dtype::Void, device_call_name(kCpAsyncConditionalCall, {w * sb}), {dst_ptr, src_ptr, ok_s}));
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
      Stmt vec = evaluate(call_extern(
          dtype::Void,
          device_call_name(kCopyVecCall, packed ? std::vector<TemplateArg>{w / 2}
                                                : vector_move_args(w, s.buffer->dtype, d.buffer->dtype, ctx.cuda)),
          {dst_ptr, src_ptr}));
      Expr ok = logical_and(ok_s, ok_d);
      body = is_const_true(ok) ? vec : if_then_else(ok, vec, scalar);
    }
  }
  if (chunks % ctx.threads != 0) body = if_then_else(lt(c, int_imm(chunks)), body);
  Stmt loop =
      for_loop(it, int_imm(0), int_imm(iters), iters <= 32 ? ForKind::Unrolled : ForKind::Serial, body, {}, op->span);
  if (async && !in_pipeline) return seq({loop, evaluate(call_extern(dtype::Void, kCpAsyncCommitCall, {}))});
  return async ? attr_stmt(kAsyncCopyAttr, int64_t(1), loop) : loop;
}

Stmt lower_copy_registers(const TileOpNode* op, const LowerContext& ctx) {
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
          dtype::Void, str_cat("tl::cast_pair<", pair_conversion(from, to), ">"),
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
  Expr mem_ptr = address_of(buffer_load(mem.buffer, mi), fs ? AddressAccess::Write : AddressAccess::Read);
  Expr reg_ptr = call(Intrinsic::AddressOf, {buffer_load(ctx.reg(frag.buffer), {k0})});
  Stmt body;
  if (fs) {
    Stmt st =
        w > 1
            ? evaluate(call_extern(
                  dtype::Void,
                  device_call_name(kStoreVecCall, vector_move_args(w, frag.buffer->dtype, mem.buffer->dtype, ctx.cuda)),
                  {mem_ptr, reg_ptr}))
            : buffer_store(mem.buffer, cast(mem.buffer->dtype, buffer_load(ctx.reg(frag.buffer), {k0})), mi, op->span);
    body = is_const_true(ok) ? st : if_then_else(ok, st);
  } else {
    Stmt st =
        w > 1
            ? evaluate(call_extern(
                  dtype::Void,
                  device_call_name(kLoadVecCall, vector_move_args(w, mem.buffer->dtype, frag.buffer->dtype, ctx.cuda)),
                  {reg_ptr, mem_ptr}))
            : buffer_store(ctx.reg(frag.buffer), cast(frag.buffer->dtype, buffer_load(mem.buffer, mi)), {k0}, op->span);
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

}  // namespace tl
