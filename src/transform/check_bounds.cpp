// See check_bounds.h. Only what the loops alone decide is checked: an index that is
// a sum of distinct loop variables times constants plus a constant (its range is then
// exactly what interval arithmetic gives), in an access that every iteration makes
// (no `if` or select between the loops and it). Anything else may be guarded in
// ways the check does not follow, and is left to run.
#include "transform/check_bounds.h"

#include <set>

#include "arith/bounds.h"
#include "ir/printer.h"
#include "ir/visitor.h"

namespace tl {
namespace {

std::string shape_text(const Buffer& b) {
  std::string out = "[";
  for (size_t i = 0; i < b->shape.size(); ++i) out += (i ? ", " : "") + to_string(b->shape[i]);
  return out + "]";
}

bool on_chip(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn || b->scope == Scope::Fragment ||
         b->scope == Scope::Local || b->scope == Scope::LocalVar;
}

class Checker : public IRVisitor {
 public:
  using IRVisitor::visit;

  void visit(const ForNode* op) override {
    auto mn = as_const_int(op->min), ex = as_const_int(op->extent);
    visit(op->min);
    visit(op->extent);
    if (!mn || !ex || *ex <= 0) {
      bounds_.unbind(op->var);
      return IRVisitor::visit(op->body);
    }
    bounds_.bind(op->var, *mn, *mn + *ex - 1);
    loop_vars_.insert(op->var.node());
    visit(op->body);
    loop_vars_.erase(op->var.node());
    bounds_.unbind(op->var);
  }
  // Guarded code is not checked.
  void visit(const IfThenElseNode* op) override {
    visit(op->cond);
    ++guarded_;
    IRVisitor::visit(op->then_case);
    if (op->else_case.defined()) IRVisitor::visit(op->else_case);
    --guarded_;
  }
  void visit(const WhileNode* op) override {
    ++guarded_;
    IRVisitor::visit(op);
    --guarded_;
  }
  void visit(const SelectNode* op) override {
    visit(op->cond);
    ++guarded_;
    visit(op->true_value);
    visit(op->false_value);
    --guarded_;
  }
  void visit(const BufferLoadNode* op) override {
    check(op->buffer, op->indices, op->span, "reads");
    IRVisitor::visit(op);
  }
  void visit(const BufferStoreNode* op) override {
    check(op->buffer, op->indices, op->span, "writes");
    IRVisitor::visit(op);
  }

 private:
  // Whether `e` is a sum of distinct loop variables times constants plus a constant.
  bool exact(const Expr& e, std::set<const VarNode*>& used) const {
    if (as_const_int(e)) return true;
    if (auto* v = e.as<VarNode>()) return loop_vars_.count(v) && used.insert(v).second;
    if (auto* c = e.as<CastNode>()) return c->dtype.is_integer() && exact(c->value, used);
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return exact(b->a, used) && exact(b->b, used);
    if (b->op == BinaryOp::Mul)
      return (as_const_int(b->b) && exact(b->a, used)) || (as_const_int(b->a) && exact(b->b, used));
    return false;
  }

  void check(const Buffer& b, const std::vector<Expr>& indices, const SourceSpan& span, const char* verb) {
    if (guarded_ || !on_chip(b) || b->layout) return;
    for (size_t d = 0; d < indices.size() && d < b->shape.size(); ++d) {
      auto n = as_const_int(b->shape[d]);
      std::set<const VarNode*> used;
      if (!n || !exact(indices[d], used) || used.empty()) continue;
      Interval r = bounds_.bounds(indices[d]);
      if (!r.is_bounded() || (*r.min >= 0 && *r.max < *n)) continue;
      throw_user_error(span, str_cat("this ", verb, " ", b->name, "[...] with index ", to_string(indices[d]),
                                     " in dimension ", d, ", which the loops around it take over [", *r.min, ", ",
                                     *r.max, "], but '", b->name, "' has ", *n, " elements there (shape ",
                                     shape_text(b), "); allocate it with the loop's extent, or guard the access"));
    }
  }

  BoundAnalyzer bounds_;
  std::set<const VarNode*> loop_vars_;
  int guarded_ = 0;
};

}  // namespace

void check_onchip_bounds(const PrimFunc& f) {
  Checker c;
  c.visit(f->body);
}

}  // namespace tl
