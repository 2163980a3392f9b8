// See fragment_updates_once.h.
#include "transform/fragment_updates_once.h"

#include <algorithm>
#include <set>

#include "ir/op.h"
#include "ir/visitor.h"
#include "transform/lower_tile_ops.h"

namespace tl {
namespace {

class UpdatesOnce : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    for (const Var& v : op->thread_vars) varying_.insert(v.node());
    return IRMutator::visit(op, self);
  }

  // Block ops and per-thread ops already say who runs them.
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    if (op->key == kBlockOpAttr || op->key == kThreadOpAttr) return self;
    return IRMutator::visit(op, self);
  }

  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    if (varies(op->value)) varying_.insert(op->var.node());
    return IRMutator::visit(op, self);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (!varies(op->min) && !varies(op->extent)) return IRMutator::visit(op, self);
    varying_.insert(op->var.node());
    Scoped<int> in(divergent_, divergent_ + 1);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const WhileNode* op, const Stmt& self) override {
    Scoped<int> in(divergent_, varies(op->cond) ? divergent_ + 1 : divergent_);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    Scoped<int> in(divergent_, varies(op->cond) ? divergent_ + 1 : divergent_);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    if (op->buffer->scope == Scope::Fragment && divergent_ == 0 && !varies(op->value) &&
        !std::any_of(op->indices.begin(), op->indices.end(), [&](const Expr& i) { return varies(i); }))
      return attr_stmt(kBlockOpAttr, int64_t(1), self, op->span);
    return self;
  }

 private:
  // Whether `e` may differ between the threads of a block: it reads a thread index,
  // a variable bound from one, or a per-thread (local) buffer.
  bool varies(const Expr& e) const {
    bool found = false;
    for_each_expr(e, [&](const Expr& x) {
      if (auto* v = x.as<VarNode>(); v && varying_.count(v)) found = true;
      if (auto* load = x.as<BufferLoadNode>();
          load && (load->buffer->scope == Scope::Local || load->buffer->scope == Scope::LocalVar))
        found = true;
    });
    return found;
  }

  std::set<const VarNode*> varying_;
  int divergent_ = 0;
};

}  // namespace

PrimFunc fragment_updates_once(const PrimFunc& f) {
  return f.with_body(UpdatesOnce().mutate(f->body));
}

}  // namespace tl
