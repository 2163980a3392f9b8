// T.atomic_<kind> with a register fragment (ops/registers.h): the value a whole
// fragment (region form) or one element of it inside a T.Parallel loop (element
// form); an atomic update of a fragment keeps it in shared memory.
#include "ops/extent_util.h"
#include "ops/registers.h"

namespace tl {

using namespace fragments;

void infer_atomic_fragments(const TileOpNode* op, OpUses& uses) {
  // dst (memory) <- value: a whole register fragment (region form), or one
  // element of it inside a T.Parallel loop (element form).
  if (uses.frag(op->regions[0])) {
    uses.demote_all(op, "an atomic update of a fragment");
    return;
  }
  if (op->regions.size() < 2 || !uses.frag(op->regions[1])) return;
  const BufferRegion& v = op->regions[1];
  bool element = true;
  for (const Range& r : v.ranges) element = element && is_const_one(r.extent);
  if (element && uses.in_parallel_loop()) {
    std::vector<Expr> idx;
    for (const Range& r : v.ranges) idx.push_back(r.min);
    uses.element_access(v.buffer, idx);
  } else if (!covers_whole(v) || !pairs_exactly(v, op->regions[0])) {
    uses.demote_all(op, "an atomic whose value is part of a fragment");
  }
}

// T.atomic_<kind>(dst region, register fragment): each thread updates the
// elements it holds. Adds of runs of consecutive registers into global memory of
// the same dtype go 2 or 4 at a time (tl::AtomicAddx2 / x4, TileLang's names: one
// vector reduction where the GPU has one), under the same alignment rules as vector
// copies.
Stmt lower_atomic_registers(const TileOpNode* op, const LowerContext& ctx) {
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
    st = evaluate(call_extern(dtype::Void, atomic_add_run_call(w), {dst, src, int_imm(order)}), op->span);
  } else {
    Expr value = cast(t, buffer_load(ctx.reg(v.buffer), {k0}));
    st = evaluate(call_extern(dtype::Void, atomic_element_call(kind, order), {dst, value}), op->span);
  }
  if (!is_const_true(ok)) st = if_then_else(ok, st);
  return for_loop(r, int_imm(0), int_imm(l->local_size() / w), ForKind::Unrolled, st, {}, op->span);
}

}  // namespace tl
