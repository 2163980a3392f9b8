// T.atomic_add / atomic_max / atomic_min on a region: every element of the
// destination region is updated atomically with the matching element of the value
// region (or with one scalar). Extents are matched as T.copy matches them
// (right-aligned after dropping unit dimensions). Each element becomes a call of
// tl::atomic_<kind><order> from the device header; parts outside the destination
// tensor are dropped, parts outside the value tensor read 0.
#include "ir/device_calls.h"
#include "ops/extent_util.h"

namespace tl {
std::string atomic_element_call(const std::string& kind, int64_t order) {
  const char* fn = kind == "add"   ? kAtomicAddCall
                   : kind == "max" ? kAtomicMaxCall
                   : kind == "min" ? kAtomicMinCall
                                   : nullptr;
  TL_ICHECK(fn, str_cat("no region atomic of kind '", kind, "'"));
  return device_call_name(fn, {order});
}

const char* atomic_add_run_call(int64_t width) {
  TL_ICHECK(width == 2 || width == 4, str_cat("an atomic add run of ", width, " elements"));
  return width == 2 ? kAtomicAddx2Call : kAtomicAddx4Call;
}

Stmt make_atomic_op(TileOpArgs a) {
  simplify_extents(a.regions);
  std::string kind = attr_string(a.attrs, "kind");
  if (kind != "add" && kind != "max" && kind != "min")
    throw_user_error(a.span, str_cat("unknown atomic kind '", kind, "'; known kinds: add, max, min"));
  std::string what = "T.atomic_" + kind;
  bool scalar = a.regions.size() == 1 && a.args.size() == 1;
  if (!scalar && !(a.regions.size() == 2 && a.args.empty()))
    throw_user_error(a.span, what + " on a region takes a destination region and a value region (or one scalar)");
  const BufferRegion& dst = a.regions[0];
  DataType t = dst.buffer->dtype;
  if (!(t.is_float() || t.is_integer()) || t.lanes() != 1 ||
      !(t.bits() == 8 || t.bits() == 16 || t.bits() == 32 || t.bits() == 64))
    throw_user_error(a.span, str_cat(what, " cannot update '", dst.buffer->name, "' of dtype ", t.name(),
                                     "; atomics need an integer or floating dtype of 8, 16, 32 or 64 bits"));
  if (scalar) {
    if (!a.args[0].dtype().is_scalar())
      throw_user_error(a.span, str_cat(what, " value must be a scalar, got ", a.args[0].dtype().name()));
    a.args[0] = cast(t, a.args[0]);
    return tile_op(TileOpKind::Atomic, std::move(a.regions), std::move(a.args), std::move(a.attrs), a.span);
  }
  const BufferRegion& src = a.regions[1];
  std::vector<Expr> se = non_unit_extents(src.extents()), de = non_unit_extents(dst.extents());
  if (!same_extents(se, de))
    throw_user_error(a.span, str_cat(what, " extents do not match: destination '", dst.buffer->name, "' covers ",
                                     extents_str(dst.extents()), " but value '", src.buffer->name, "' covers ",
                                     extents_str(src.extents()),
                                     "; after dropping unit dimensions both sides must have the same extents"));
  return tile_op(TileOpKind::Atomic, std::move(a.regions), {}, std::move(a.attrs), a.span);
}

Stmt lower_atomic_run(const TileOpNode* op) {
  if (op->regions.size() != 2 || attr_string(op->attrs, "kind") != "add") return Stmt();
  const BufferRegion &dst = op->regions[0], &src = op->regions[1];
  DataType t = dst.buffer->dtype;
  if (dst.buffer->scope != Scope::Global || (t != dtype::Float32 && t != dtype::Float16 && t != dtype::BFloat16))
    return Stmt();
  // One non-unit extent, 2 or 4, the last dimension of both sides, each contiguous there.
  auto run = [](const BufferRegion& r) -> int64_t {
    for (size_t d = 0; d + 1 < r.ranges.size(); ++d)
      if (!is_const_one(r.ranges[d].extent)) return 0;
    auto n = as_const_int(r.ranges.back().extent);
    return n && (*n == 2 || *n == 4) && is_const_one(r.buffer.effective_strides().back()) ? *n : 0;
  };
  const int64_t n = run(dst);
  if (n == 0 || run(src) != n || src.buffer->dtype.lanes() != 1) return Stmt();
  // The values, converted, in a register array; then one call.
  Buffer values = Buffer::make("atomic_values", t, {int_imm(n)}, Scope::Local);
  std::vector<Stmt> body;
  auto at = [&](const BufferRegion& r, int64_t k) {
    std::vector<Expr> idx;
    for (const Range& g : r.ranges) idx.push_back(g.min);
    idx.back() = add(idx.back(), make_const(idx.back().dtype(), double(k)));
    return idx;
  };
  for (int64_t k = 0; k < n; ++k) {
    std::vector<Expr> si = at(src, k);
    Expr v = buffer_load(src.buffer, si, op->span);
    Expr ok = in_bounds(src.buffer, si);
    if (!as_const_int(ok)) v = select(ok, v, make_const(src.buffer->dtype, 0));
    body.push_back(buffer_store(values, cast(t, v), {int_imm(k)}));
  }
  const int64_t order = attr_int(op->attrs, "memory_order", 0);
  Expr dst_ptr = call(Intrinsic::AddressOf, {buffer_load(dst.buffer, at(dst, 0), op->span)});
  Expr values_ptr = call(Intrinsic::AddressOf, {buffer_load(values, {int_imm(0)})});
  body.push_back(
      evaluate(call_extern(dtype::Void, atomic_add_run_call(n), {dst_ptr, values_ptr, int_imm(order)}), op->span));
  Stmt vec = allocate(values, seq(body));
  Expr inside = logical_and(in_bounds(dst.buffer, at(dst, 0)), in_bounds(dst.buffer, at(dst, n - 1)));
  if (as_const_int(inside)) return *as_const_int(inside) ? vec : lower_atomic_serial(op);
  return if_then_else(inside, vec, lower_atomic_serial(op));
}

Stmt lower_atomic_serial(const TileOpNode* op) {
  const BufferRegion& dst = op->regions[0];
  const BufferRegion* src = op->regions.size() > 1 ? &op->regions[1] : nullptr;
  std::vector<Var> vars;
  std::vector<Expr> extents;
  for (const Range& r : dst.ranges) {
    if (is_const_one(r.extent)) continue;
    // str_cat, not "i" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    vars.emplace_back(str_cat("i", vars.size()), r.extent.dtype());
    extents.push_back(r.extent);
  }
  auto indices = [&](const BufferRegion& region) {
    std::vector<Expr> idx;
    size_t v = 0;
    for (const Range& r : region.ranges)
      idx.push_back(is_const_one(r.extent) ? r.min : add(r.min, cast(r.min.dtype(), vars[v++])));
    return idx;
  };
  DataType t = dst.buffer->dtype;
  Expr value;
  if (src) {
    std::vector<Expr> si = indices(*src);
    value = buffer_load(src->buffer, si, op->span);
    Expr ok = in_bounds(src->buffer, si);
    if (!as_const_int(ok)) value = select(ok, value, make_const(src->buffer->dtype, 0));
    value = cast(t, value);
  } else {
    value = op->args[0];
  }
  std::vector<Expr> di = indices(dst);
  std::string fn = atomic_element_call(attr_string(op->attrs, "kind"), attr_int(op->attrs, "memory_order", 0));
  Expr address = call(Intrinsic::AddressOf, {buffer_load(dst.buffer, di, op->span)});
  Stmt body = evaluate(call_extern(t, fn, {address, value}), op->span);
  Expr dst_ok = in_bounds(dst.buffer, di);
  if (!as_const_int(dst_ok)) body = if_then_else(dst_ok, body);
  for (int i = int(vars.size()) - 1; i >= 0; --i)
    body = for_loop(vars[i], make_const(extents[i].dtype(), 0), extents[i], ForKind::Serial, body);
  return body;
}

}  // namespace tl
