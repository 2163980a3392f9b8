// T.reduce_{sum,max,min,abssum,absmax,bitand,bitor,bitxor}: folds one dimension of a
// tile into a tile of one rank less (or of equal rank with that dimension 1). The
// result accumulates in the destination's dtype; with clear=False it is combined
// with what the destination already holds, as TileLang does. Float max / min ignore a
// NaN operand (the GPU's max, TileLang's default); the attribute nan_propagate (TileLang's
// `nan_propagate=True`) makes a NaN in a line give NaN.
#include <map>

#include "ir/visitor.h"
#include "ops/extent_util.h"

namespace tl {
namespace {

enum class ReduceKind { Sum, AbsSum, Max, Min, AbsMax, BitAnd, BitOr, BitXor };

struct KindName {
  ReduceKind kind;
  const char* name;
};
constexpr KindName kKinds[] = {
    {ReduceKind::Sum, "sum"},     {ReduceKind::AbsSum, "abssum"}, {ReduceKind::Max, "max"},
    {ReduceKind::Min, "min"},     {ReduceKind::AbsMax, "absmax"}, {ReduceKind::BitAnd, "bitand"},
    {ReduceKind::BitOr, "bitor"}, {ReduceKind::BitXor, "bitxor"},
};

std::optional<ReduceKind> parse_kind(const std::string& name) {
  for (const KindName& k : kKinds)
    if (name == k.name) return k.kind;
  return std::nullopt;
}

bool is_bitwise(ReduceKind k) {
  return k == ReduceKind::BitAnd || k == ReduceKind::BitOr || k == ReduceKind::BitXor;
}

// The value the fold starts from: combining it with any x gives x.
Expr identity(ReduceKind k, DataType t) {
  // Types without an infinity (fp8 "fn" kinds) start from their finite extremes.
  bool has_inf = has_infinity(t);
  switch (k) {
    case ReduceKind::Sum:
    case ReduceKind::AbsSum:
    case ReduceKind::AbsMax:
    case ReduceKind::BitOr:
    case ReduceKind::BitXor:
      return make_const(t, 0);
    case ReduceKind::Max:
      return has_inf ? infinity(t, /*negative=*/true) : min_value(t);
    case ReduceKind::Min:
      return has_inf ? infinity(t) : max_value(t);
    case ReduceKind::BitAnd:
      return t.is_uint() ? max_value(t) : int_imm(-1, t);
  }
  TL_UNREACHABLE("bad reduce kind");
}

Expr combine(ReduceKind k, Expr acc, Expr x, bool propagate_nan) {
  switch (k) {
    case ReduceKind::Sum:
    case ReduceKind::AbsSum:
      return add(std::move(acc), std::move(x));
    case ReduceKind::Max:
    case ReduceKind::AbsMax:
      return reduction_max(std::move(acc), std::move(x), propagate_nan);
    case ReduceKind::Min:
      return reduction_min(std::move(acc), std::move(x), propagate_nan);
    case ReduceKind::BitAnd:
      return binary(BinaryOp::BitAnd, std::move(acc), std::move(x));
    case ReduceKind::BitOr:
      return binary(BinaryOp::BitOr, std::move(acc), std::move(x));
    case ReduceKind::BitXor:
      return binary(BinaryOp::BitXor, std::move(acc), std::move(x));
  }
  TL_UNREACHABLE("bad reduce kind");
}

}  // namespace

Stmt make_reduce_op(TileOpArgs a) {
  simplify_extents(a.regions);
  std::string kind_name = attr_string(a.attrs, "kind");
  std::string what = "T.reduce_" + kind_name;
  auto kind = parse_kind(kind_name);
  if (!kind) {
    std::string known;
    for (const KindName& k : kKinds) known += std::string(known.empty() ? "" : ", ") + k.name;
    throw_user_error(a.span, str_cat("unknown reduction kind '", kind_name, "'; known kinds: ", known));
  }
  if (a.regions.size() != 2) throw_user_error(a.span, what + " takes a source and a destination buffer");
  const BufferRegion &src = a.regions[0], &dst = a.regions[1];
  // T.finalize_reducer: the reducer is both operands; the register lowering combines
  // the partials its threads hold of each element (lower_fragments).
  if (attr_int(a.attrs, "finalize", 0)) {
    TL_ICHECK(src.buffer.same_as(dst.buffer), "T.finalize_reducer names one reducer");
    return tile_op(TileOpKind::Reduce, std::move(a.regions), {}, std::move(a.attrs), a.span);
  }
  for (const BufferRegion* r : {&src, &dst})
    if (r->buffer->scope == Scope::Global)
      throw_user_error(a.span, str_cat(what, " operands must be in shared or fragment memory, but '", r->buffer->name,
                                       "' is a global tensor; copy it into a T.alloc_fragment or T.alloc_shared "
                                       "buffer first"));
  std::vector<Expr> se = src.extents(), de = dst.extents();
  int rank = int(se.size());
  int64_t dim = attr_int(a.attrs, "dim", -1);
  if (dim < -rank || dim >= rank)
    throw_user_error(a.span,
                     str_cat(what, " dim ", dim, " is out of range for source '", src.buffer->name, "' of rank ", rank,
                             " (shape ", extents_str(se), "); use a dim in [", -rank, ", ", rank - 1, "]"));
  if (dim < 0) dim += rank;

  // dst must hold src's shape without `dim`; unit dims are free (kept dims, row slices).
  std::vector<Expr> dropped, kept;
  for (int d = 0; d < rank; ++d) {
    if (d != dim) dropped.push_back(se[d]);
    kept.push_back(d == dim ? int_imm(1) : se[d]);
  }
  if (!same_extents(non_unit_extents(dropped), non_unit_extents(de)))
    throw_user_error(a.span, str_cat(what, " destination '", dst.buffer->name, "' has shape ", extents_str(de),
                                     ", but reducing '", src.buffer->name, "' of shape ", extents_str(se), " over dim ",
                                     dim, " gives ", extents_str(dropped), " (or ", extents_str(kept),
                                     " keeping the dim); allocate the destination with that shape"));
  if (is_bitwise(*kind) && !(src.buffer->dtype.is_integer() && dst.buffer->dtype.is_integer()))
    throw_user_error(a.span,
                     str_cat(what, " needs integer buffers, got '", src.buffer->name, "' (", src.buffer->dtype.name(),
                             ") and '", dst.buffer->name, "' (", dst.buffer->dtype.name(), ")"));
  Attrs attrs = a.attrs;
  attrs["dim"] = dim;
  // abssum always starts from zero (TileLang's reduce_abssum has no clear flag).
  attrs["clear"] = int64_t(*kind == ReduceKind::AbsSum || attr_int(a.attrs, "clear", 1));
  return tile_op(TileOpKind::Reduce, std::move(a.regions), {}, std::move(attrs), a.span);
}

// for each destination element: acc = identity; for r: acc = acc (+) f(src); dst = acc
// (or dst (+) acc when not clearing). The accumulator is a one-element local buffer.
Stmt lower_reduce_serial(const TileOpNode* op) {
  // One executor holds a reducer whole: it is final already.
  if (attr_int(op->attrs, "finalize", 0)) return seq({});
  const BufferRegion &src = op->regions[0], &dst = op->regions[1];
  ReduceKind kind = *parse_kind(attr_string(op->attrs, "kind"));
  int dim = int(attr_int(op->attrs, "dim", 0));
  bool clear = attr_int(op->attrs, "clear", 1);
  bool nan = attr_int(op->attrs, "nan_propagate", 0);
  DataType t = dst.buffer->dtype;

  // One loop per source dim except `dim`; the non-unit ones index the destination's
  // non-unit dims in order.
  std::vector<Var> outer;
  std::vector<Expr> outer_extents, src_idx, dst_idx, mapped;
  Var r("r", src.ranges[dim].extent.dtype());
  for (int d = 0; d < int(src.ranges.size()); ++d) {
    const Range& rg = src.ranges[d];
    if (d == dim) {
      src_idx.push_back(add(rg.min, cast(rg.min.dtype(), r)));
      continue;
    }
    // str_cat, not "i" + std::to_string(): GCC 12 gives a false -Wrestrict warning on that (GCC bug 105651)
    Var v(str_cat("i", outer.size()), rg.extent.dtype());
    outer.push_back(v);
    outer_extents.push_back(rg.extent);
    src_idx.push_back(add(rg.min, cast(rg.min.dtype(), v)));
    if (!is_const_one(rg.extent)) mapped.push_back(v);
  }
  size_t next = 0;
  for (const Range& rg : dst.ranges)
    dst_idx.push_back(is_const_one(rg.extent) ? rg.min : add(rg.min, cast(rg.min.dtype(), mapped[next++])));

  auto x_at = [&](const std::vector<Expr>& idx) {
    Expr x = cast(t, buffer_load(src.buffer, idx, op->span));
    return kind == ReduceKind::AbsSum || kind == ReduceKind::AbsMax ? call(Intrinsic::Abs, {x}) : x;
  };
  auto result_of = [&](const Expr& acc_val, const std::vector<Expr>& idx) {
    return clear ? acc_val : combine(kind, buffer_load(dst.buffer, idx), acc_val, nan);
  };
  auto nest = [&](Stmt body, size_t count) {
    for (int i = int(count) - 1; i >= 0; --i)
      body = for_loop(outer[i], make_const(outer[i].dtype(), 0), outer_extents[i], ForKind::Serial, body);
    return body;
  };
  const Expr zero = make_const(r.dtype(), 0);

  // float16 / bfloat16 folds two at a time, in two accumulators acc[0] and acc[1] whose
  // adjacent stores pair_lane_stores makes one packed instruction on CUDA (tl::add2,
  // tl::max2 ...). Every target computes the same folds in the same order per element.
  const bool pairs = (t == dtype::Float16 || t == dtype::BFloat16) && src.buffer->dtype == t &&
                     is_const_one(src.buffer.effective_strides().back());
  const int last = int(src.ranges.size()) - 1;
  auto even_const = [](const Expr& e) {
    auto c = as_const_int(e);
    return c && *c >= 2 && *c % 2 == 0;
  };
  // Two neighbouring destination elements at once: the innermost kept dim is the
  // source's last (contiguous) one and the destination's last, each column folded over
  // r in the usual order.
  if (pairs && dim != last && !outer.empty() && !mapped.empty() && mapped.back().same_as(outer.back()) &&
      !is_const_one(src.ranges[last].extent) && even_const(outer_extents.back()) &&
      !is_const_one(dst.ranges.back().extent) && is_const_one(dst.buffer.effective_strides().back())) {
    const Var& v = outer.back();
    Var p("p", v.dtype());
    auto at = [&](const std::vector<Expr>& idx, int64_t lane) {
      std::map<const VarNode*, Expr> m{{v.node(), add(mul(p, make_const(v.dtype(), 2)), make_const(v.dtype(), lane))}};
      std::vector<Expr> out;
      for (const Expr& e : idx) out.push_back(substitute(e, m));
      return out;
    };
    Buffer acc = Buffer::make("acc", t, {int_imm(2)}, Scope::Local, {}, op->span);
    std::vector<Stmt> init, folds, stores;
    for (int64_t lane = 0; lane < 2; ++lane) {
      Expr a = buffer_load(acc, {int_imm(lane)});
      init.push_back(buffer_store(acc, identity(kind, t), {int_imm(lane)}));
      folds.push_back(buffer_store(acc, combine(kind, a, x_at(at(src_idx, lane)), nan), {int_imm(lane)}));
      stores.push_back(buffer_store(dst.buffer, result_of(a, at(dst_idx, lane)), at(dst_idx, lane), op->span));
    }
    Stmt fold = for_loop(r, zero, src.ranges[dim].extent, ForKind::Serial, seq(folds));
    Stmt body = allocate(acc, seq({seq(init), fold, seq(stores)}));
    body = for_loop(p, make_const(p.dtype(), 0), int_imm(*as_const_int(outer_extents.back()) / 2, p.dtype()),
                    ForKind::Serial, body);
    return nest(body, outer.size() - 1);
  }
  // A max / min along the source's last (contiguous) dim: the even and the odd elements
  // in two accumulators, then the two combined (max and min give the same bits in any
  // order). A sum (abssum) from zero (clear) too, in TileLang's order: the even
  // elements' sum plus the odd elements' sum.
  const bool summed = (kind == ReduceKind::Sum || kind == ReduceKind::AbsSum) && clear;
  if (pairs && dim == last && (kind == ReduceKind::Max || kind == ReduceKind::Min || summed) &&
      even_const(src.ranges[dim].extent)) {
    Buffer acc = Buffer::make("acc", t, {int_imm(2)}, Scope::Local, {}, op->span);
    Var r2("r", r.dtype());
    std::vector<Stmt> init, folds;
    for (int64_t lane = 0; lane < 2; ++lane) {
      std::map<const VarNode*, Expr> m{{r.node(), add(mul(r2, make_const(r.dtype(), 2)), make_const(r.dtype(), lane))}};
      std::vector<Expr> idx;
      for (const Expr& e : src_idx) idx.push_back(substitute(e, m));
      init.push_back(buffer_store(acc, identity(kind, t), {int_imm(lane)}));
      folds.push_back(
          buffer_store(acc, combine(kind, buffer_load(acc, {int_imm(lane)}), x_at(idx), nan), {int_imm(lane)}));
    }
    Expr acc0 = buffer_load(acc, {int_imm(0)});
    Stmt fold =
        for_loop(r2, zero, int_imm(*as_const_int(src.ranges[dim].extent) / 2, r.dtype()), ForKind::Serial, seq(folds));
    Stmt both = buffer_store(acc, combine(kind, acc0, buffer_load(acc, {int_imm(1)}), nan), {int_imm(0)});
    Stmt body = allocate(
        acc, seq({seq(init), fold, both, buffer_store(dst.buffer, result_of(acc0, dst_idx), dst_idx, op->span)}));
    return nest(body, outer.size());
  }

  Buffer acc = Buffer::make("acc", t, {int_imm(1)}, Scope::Local, {}, op->span);
  Expr acc_val = buffer_load(acc, {int_imm(0)});
  Stmt fold = for_loop(r, zero, src.ranges[dim].extent, ForKind::Serial,
                       buffer_store(acc, combine(kind, acc_val, x_at(src_idx), nan), {int_imm(0)}));
  Stmt body = allocate(acc, seq({buffer_store(acc, identity(kind, t), {int_imm(0)}), fold,
                                 buffer_store(dst.buffer, result_of(acc_val, dst_idx), dst_idx, op->span)}));
  return nest(body, outer.size());
}

std::set<const BufferNode*> finalized_reducers(const Stmt& body) {
  struct Finalized : IRVisitor {
    std::set<const BufferNode*> found;
    using IRVisitor::visit;
    void visit(const TileOpNode* op) override {
      if (op->op == TileOpKind::Reduce && attr_int(op->attrs, "finalize", 0)) found.insert(op->regions[0].buffer.get());
      IRVisitor::visit(op);
    }
  } finalized;
  finalized.visit(body);
  return finalized.found;
}

}  // namespace tl
