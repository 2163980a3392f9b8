// See check_parallel_stores.h.
#include "transform/check_parallel_stores.h"

#include <map>
#include <set>

#include "ir/attrs.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"
#include "support/error.h"
#include "transform/lower_tile_ops.h"

namespace tl {
namespace {

using VarSet = std::set<const VarNode*>;

class Check : public IRVisitor {
 public:
  explicit Check(std::set<const BufferNode*> reducers) : reducers_(std::move(reducers)) {}
  using IRVisitor::visit;

  void visit(const ForNode* op) override {
    if (op->for_kind != ForKind::Parallel) return IRVisitor::visit(op);
    bool outermost = nest_.empty();
    // A nest that writes only per-thread registers runs whole on every thread.
    if (outermost && !op->annotations.count(kSpreadOverThreads) && writes_only_registers(op->body))
      return IRVisitor::visit(op);
    nest_.insert(op->var.node());
    IRVisitor::visit(op);
    nest_.erase(op->var.node());
  }

  void visit(const LetStmtNode* op) override {
    if (nest_.empty()) return IRVisitor::visit(op);
    deps_[op->var.node()] = loop_vars_of(op->value);
    IRVisitor::visit(op);
    deps_.erase(op->var.node());
  }

  void visit(const IfThenElseNode* op) override {
    if (nest_.empty()) return IRVisitor::visit(op);
    visit(op->cond);
    VarSet cond = loop_vars_of(op->cond);
    size_t before = guards_.size();
    guards_.insert(guards_.end(), cond.begin(), cond.end());
    visit(op->then_case);
    if (op->else_case.defined()) visit(op->else_case);
    guards_.resize(before);
  }

  void visit(const BufferStoreNode* op) override {
    IRVisitor::visit(op);
    if (nest_.empty() || op->buffer->scope != Scope::Fragment || reducers_.count(op->buffer.get())) return;
    bool all_zero = true;
    for (const Expr& e : op->indices) {
      auto c = as_const_int(e);
      if (!c) return;  // an index that varies: not one element for every iteration
      all_zero = all_zero && *c == 0;
    }
    if (all_zero) return;  // a per-iteration scalar: each thread keeps its own copy
    // The nest's variables no enclosing condition reads: each of their iterations
    // stores the element (a condition on one, `if i == 2`, may pick one iteration).
    VarSet unguarded = nest_;
    for (const VarNode* g : guards_) unguarded.erase(g);
    if (unguarded.empty()) return;
    VarSet varying = loop_vars_of(op->value);
    const VarNode* v = *unguarded.begin();
    for (const VarNode* x : varying)
      if (unguarded.count(x)) v = x;
    std::string idx;
    for (const Expr& e : op->indices) idx += (idx.empty() ? "" : ", ") + std::to_string(*as_const_int(e));
    std::string what = varying.count(v) ? str_cat("a value that depends on loop variable '", v->name, "'")
                                        : str_cat("a value, once per value of loop variable '", v->name, "'");
    throw_user_error(
        op->span,
        str_cat("T.Parallel: every iteration stores ", op->buffer->name, "[", idx, "] ", what,
                "; the iterations run on different threads, which race for the element. Only fragment[0] access "
                "is allowed at an index no loop variable picks (a per-iteration scalar, each thread's own); index "
                "the store by the loop variable, or combine the values with T.reduce_* or a reducer "
                "(T.alloc_reducer and T.finalize_reducer)",
                note_at(op->buffer->span, str_cat("fragment '", op->buffer->name, "' is allocated here"))));
  }

 private:
  // The loop variables of the enclosing T.Parallel nest that `e` reads, through lets.
  VarSet loop_vars_of(const Expr& e) const {
    VarSet out;
    for_each_expr(e, [&](const Expr& x) {
      auto* v = x.as<VarNode>();
      if (!v) return;
      if (nest_.count(v)) out.insert(v);
      if (auto it = deps_.find(v); it != deps_.end()) out.insert(it->second.begin(), it->second.end());
    });
    return out;
  }

  std::set<const BufferNode*> reducers_;
  VarSet nest_;
  std::map<const VarNode*, VarSet> deps_;
  std::vector<const VarNode*> guards_;
};

}  // namespace

void check_parallel_stores(const PrimFunc& f) {
  Check(finalized_reducers(f->body)).visit(f->body);
}

}  // namespace tl
