// See widen_indices.h. The ranges come from the enclosing loops, the grid and the
// thread counts, lets, and the parameters: a symbolic dimension of type int32 lies
// in [0, 2^31 - 1] (the runtime refuses a larger one), any other int32 value in
// int32's range. The walk runs last, after the simplifier, so the expressions it
// checks are the ones the code generator prints.
#include "transform/widen_indices.h"

#include <limits>

#include "arith/bounds.h"
#include "ir/visitor.h"

namespace tl {
namespace {

bool is_int32(const Expr& e) {
  return e.dtype() == dtype::Int32;
}

// The int32 operations whose result can overflow: remainders, min and max cannot,
// comparisons give bools, other bit operations are the program's own business.
bool may_overflow(const Expr& e) {
  if (auto* u = e.as<UnaryNode>()) return u->op == UnaryOp::Neg;
  auto* b = e.as<BinaryNode>();
  return b && (b->op == BinaryOp::Add || b->op == BinaryOp::Sub || b->op == BinaryOp::Mul || b->op == BinaryOp::Div ||
               b->op == BinaryOp::FloorDiv || b->op == BinaryOp::Shl);
}

bool is_comparison(BinaryOp op) {
  return op == BinaryOp::EQ || op == BinaryOp::NE || op == BinaryOp::LT || op == BinaryOp::LE || op == BinaryOp::GT ||
         op == BinaryOp::GE;
}

class Widen : public IRMutator {
 public:
  explicit Widen(const PrimFunc& f) {
    analyzer_.assume_values_fit_types();
    // Dimensions bound from the arguments: never negative, and an int32 one is at
    // most 2^31 - 1 (Kernel::check_tensor refuses more).
    for (const Param& p : f->params) {
      if (!p.is_tensor()) continue;
      for (const Expr& e : p.buffer->shape)
        if (auto* v = e.as<VarNode>()) {
          Interval r = Interval::at_least(0);
          if (v->dtype == dtype::Int32) r.max = std::numeric_limits<int32_t>::max();
          analyzer_.bind(Var::from(e), r);
        }
    }
  }

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  // Whether an int32 operation of `e` may leave int32. `strict`: unless its range is
  // proven inside int32 (what an index needs); otherwise only when the known ranges
  // show that it can. Indices of other loads and arguments of calls are checked where
  // they are used.
  bool may_leave_int32(const Expr& e, bool strict) const {
    if (!is_int32(e)) return false;
    if (may_overflow(e)) {
      Interval r = analyzer_.bounds(e);
      bool outside = (r.min && *r.min < std::numeric_limits<int32_t>::min()) ||
                     (r.max && *r.max > std::numeric_limits<int32_t>::max());
      if (r.is_bounded() ? outside : strict) return true;
    }
    if (auto* b = e.as<BinaryNode>()) return may_leave_int32(b->a, strict) || may_leave_int32(b->b, strict);
    if (auto* u = e.as<UnaryNode>()) return may_leave_int32(u->a, strict);
    if (auto* s = e.as<SelectNode>())
      return may_leave_int32(s->true_value, strict) || may_leave_int32(s->false_value, strict);
    return false;
  }

  bool fits(const Expr& e) const { return !may_leave_int32(e, true); }

  // For comparisons: values the analysis cannot see through (loads, scalars, the
  // kernel's own counters) do not count, so comparing those keeps the kernel's int32,
  // as in C; index guards are built from loop, grid and size ranges.
  bool known_to_overflow(const Expr& e) {
    analyzer_.assume_values_fit_types(false);
    bool out = may_leave_int32(e, false);
    analyzer_.assume_values_fit_types(true);
    return out;
  }

  // `e` (int32) recomputed in int64: the parts that fit stay int32 and are widened
  // as a whole, the operations that may overflow are done in int64.
  Expr widen(const Expr& e) const {
    if (fits(e)) return cast(dtype::Int64, e);
    if (auto* b = e.as<BinaryNode>()) return binary(b->op, widen(b->a), widen(b->b), b->span);
    if (auto* u = e.as<UnaryNode>()) return neg(widen(u->a));
    if (auto* s = e.as<SelectNode>()) return select(s->cond, widen(s->true_value), widen(s->false_value), s->span);
    return cast(dtype::Int64, e);
  }

  std::vector<Expr> indices_of(const Buffer& b, const std::vector<Expr>& indices, bool* changed) const {
    if (b->scope != Scope::Global) return indices;
    std::vector<Expr> out;
    for (const Expr& i : indices) {
      bool wide = is_int32(i) && !fits(i);
      *changed |= wide;
      out.push_back(wide ? widen(i) : i);
    }
    return out;
  }

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    auto* load = e.as<BufferLoadNode>();
    bool changed = false;
    std::vector<Expr> indices = indices_of(load->buffer, load->indices, &changed);
    if (!changed) return e;
    return buffer_load(load->buffer, std::move(indices), load->span);
  }

  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    auto* store = s.as<BufferStoreNode>();
    bool changed = false;
    std::vector<Expr> indices = indices_of(store->buffer, store->indices, &changed);
    if (!changed) return s;
    return buffer_store(store->buffer, store->value, std::move(indices), store->span);
  }

  // An int32 comparison (a tail guard `bx * 1000 + i < n` with n near 2^31) compares
  // in int64 when a side may not fit int32.
  Expr visit(const BinaryNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    auto* b = e.as<BinaryNode>();
    if (!b || !is_comparison(b->op) || !is_int32(b->a) || !is_int32(b->b)) return e;
    if (!known_to_overflow(b->a) && !known_to_overflow(b->b)) return e;
    return binary(b->op, widen(b->a), widen(b->b), b->span);
  }

  // An int32 value made int64 (compared with a dimension past 2^31, say) is computed
  // in int64 where int32 may not hold it.
  Expr visit(const CastNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    auto* c = e.as<CastNode>();
    if (!c || c->dtype != dtype::Int64 || !is_int32(c->value) || fits(c->value)) return e;
    return widen(c->value);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    BindingScope scope(analyzer_);
    scope.bind_range(op->var, op->min, op->extent);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    BindingScope scope(analyzer_);
    // The range the value is known to have, not the one its type allows: a let of a
    // load stays unbounded for known_to_overflow.
    if (op->var.dtype().is_integer()) {
      analyzer_.assume_values_fit_types(false);
      scope.bind(op->var, analyzer_.bounds(op->value));
      analyzer_.assume_values_fit_types(true);
    }
    return IRMutator::visit(op, self);
  }

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    BindingScope scope(analyzer_);
    scope.bind_launch(op);
    return IRMutator::visit(op, self);
  }

 private:
  BoundAnalyzer analyzer_;
};

}  // namespace

PrimFunc widen_indices(const PrimFunc& f) {
  return f.with_body(Widen(f).mutate(f->body));
}

}  // namespace tl
