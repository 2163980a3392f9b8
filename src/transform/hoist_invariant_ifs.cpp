// See hoist_invariant_ifs.h.
#include "transform/hoist_invariant_ifs.h"

#include <set>
#include <vector>

#include "ir/op.h"
#include "ir/visitor.h"

namespace tl {
namespace {

// What a loop body writes: the buffers it stores, and whether it calls a device
// function or has a barrier (either may write memory).
struct BodyEffects : IRVisitor {
  std::set<const BufferNode*> stored;
  bool calls_or_syncs = false;
  using IRVisitor::visit;
  void visit(const BufferStoreNode* op) override {
    stored.insert(op->buffer.get());
    IRVisitor::visit(op);
  }
  void visit(const EvaluateNode* op) override {
    calls_or_syncs = true;
    IRVisitor::visit(op);
  }
  void visit(const BarrierNode* op) override {
    calls_or_syncs = true;
    IRVisitor::visit(op);
  }
  void visit(const TileOpNode* op) override {
    calls_or_syncs = true;
    IRVisitor::visit(op);
  }
  void visit(const CallNode* op) override {
    if (op->op == Intrinsic::Extern) calls_or_syncs = true;
    IRVisitor::visit(op);
  }
};

class Hoist : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override {
    Stmt inner = IRMutator::visit(op, self);  // inner loops first: a condition may leave several
    auto* loop = inner.as<ForNode>();
    // A parallel loop stays whole: its nest is what the code generator spreads over the
    // threads (a block op), and an `if` between two of its loops would stop that.
    if (!loop || loop->for_kind == ForKind::Parallel) return inner;
    // The body: lets, then the `if`.
    std::vector<const LetStmtNode*> lets;
    Stmt s = loop->body;
    while (auto* let = s.as<LetStmtNode>()) {
      lets.push_back(let);
      s = let->body;
    }
    auto* branch = s.as<IfThenElseNode>();
    if (!branch || branch->else_case.defined()) return inner;
    BodyEffects effects;
    effects.visit(loop->body);
    std::set<const VarNode*> bound = bound_vars(loop->body);
    bound.insert(loop->var.node());
    bool invariant = true, reads_memory = false;
    for_each_expr(branch->cond, [&](const Expr& e) {
      if (auto* v = e.as<VarNode>(); v && bound.count(v)) invariant = false;
      if (auto* load = e.as<BufferLoadNode>()) {
        reads_memory = true;
        if (effects.stored.count(load->buffer.get()) || effects.calls_or_syncs) invariant = false;
      }
      if (auto* c = e.as<CallNode>(); c && c->op == Intrinsic::Extern) invariant = false;
    });
    if (!invariant) return inner;
    if (reads_memory && as_const_int(loop->extent).value_or(0) <= 0) return inner;
    Stmt body = branch->then_case;
    for (auto it = lets.rbegin(); it != lets.rend(); ++it) body = let_stmt((*it)->var, (*it)->value, body, (*it)->span);
    Stmt hoisted = for_loop(loop->var, loop->min, loop->extent, loop->for_kind, body, loop->annotations, loop->span);
    return if_then_else(branch->cond, hoisted, {}, branch->span);
  }
};

}  // namespace

PrimFunc hoist_invariant_ifs(const PrimFunc& f) {
  Stmt body = Hoist().mutate(f->body);
  return body.same_as(f->body) ? f : f.with_body(body);
}

}  // namespace tl
