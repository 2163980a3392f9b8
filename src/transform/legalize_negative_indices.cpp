// See legalize_negative_indices.h. The ranges are those the simplifier also uses:
// loops, block and thread indices, let-bound values, and tensor sizes (never negative).
#include "transform/legalize_negative_indices.h"

#include "arith/simplify.h"
#include "ir/visitor.h"

namespace tl {
namespace {

class NegativeIndices : public IRMutator {
 public:
  explicit NegativeIndices(const PrimFunc& f) {
    for (const Param& p : f->params) {
      if (!p.is_tensor()) continue;
      for (const Expr& e : p.buffer->shape)
        if (e.as<VarNode>()) bounds_.bind(Var::from(e), Interval::at_least(0));
    }
  }
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& self) override {
    BindingScope scope(bounds_);
    scope.bind_range(op->var, op->min, op->extent);
    return IRMutator::visit(op, self);
  }
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    BindingScope scope(bounds_);
    scope.bind_launch(op);
    return IRMutator::visit(op, self);
  }
  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    BindingScope scope(bounds_);
    if (op->value.dtype().is_integer()) scope.bind(op->var, bounds_.bounds(op->value));
    return IRMutator::visit(op, self);
  }

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    auto* load = e.as<BufferLoadNode>();
    std::vector<Expr> indices = load->indices;
    if (!legalize(load->buffer, &indices)) return e;
    return buffer_load(load->buffer, std::move(indices), op->span);
  }
  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    auto* store = s.as<BufferStoreNode>();
    std::vector<Expr> indices = store->indices;
    if (!legalize(store->buffer, &indices)) return s;
    return buffer_store(store->buffer, store->value, std::move(indices), op->span);
  }

 private:
  // Adds its dimension's extent to each index the ranges prove negative.
  bool legalize(const Buffer& b, std::vector<Expr>* indices) const {
    bool changed = false;
    for (size_t d = 0; d < indices->size() && d < b->shape.size(); ++d) {
      Expr& index = (*indices)[d];
      if (!index.dtype().is_integer()) continue;
      Interval r = bounds_.bounds(index);
      if (!r.max || *r.max >= 0) continue;
      index = simplify(add(index, b->shape[d]), &bounds_);
      changed = true;
    }
    return changed;
  }

  BoundAnalyzer bounds_;
};

}  // namespace

PrimFunc legalize_negative_indices(const PrimFunc& f) {
  return f.with_body(NegativeIndices(f).mutate(f->body));
}

}  // namespace tl
