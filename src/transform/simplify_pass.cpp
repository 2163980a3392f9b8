// Applies the arithmetic simplifier to a whole function body. Symbolic parameter
// shapes are known to be non-negative (the runtime accepts empty tensors, so a
// size may be 0: a pipelined loop over ceildiv(K, bK) may run no iteration), and
// the simplifier learns loop and block ranges as it walks, so tail predicates that
// the tile sizes prove away disappear here.
#include "transform/simplify_pass.h"

#include <set>

#include "arith/simplify.h"
#include "ir/visitor.h"

namespace tl {

PrimFunc simplify_func(const PrimFunc& f) {
  BoundAnalyzer bounds;
  for (const Param& p : f->params) {
    if (!p.is_tensor()) continue;
    for (const Expr& e : p.buffer->shape)
      if (e.as<VarNode>()) bounds.bind(Var::from(e), 0, int64_t(1) << 40);
  }
  return f.with_body(simplify(f->body, &bounds));
}

PrimFunc drop_unused_tensor_params(const PrimFunc& f) {
  struct Uses : IRVisitor {
    std::set<const BufferNode*> buffers;
    std::set<const VarNode*> vars;
    using IRVisitor::visit;
    void visit_buffer(const Buffer& b) override { buffers.insert(b.get()); }
    void visit(const VarNode* op) override { vars.insert(op); }
  } uses;
  uses.visit(f->body);
  auto unused = [&](const Param& p) { return p.is_tensor() && !p.workspace && !uses.buffers.count(p.buffer.get()); };
  auto size_vars = [](const Param& p) {
    std::vector<const VarNode*> out;
    for (const auto* dims : {&p.buffer->shape, &p.buffer->strides})
      for (const Expr& e : *dims)
        for_each_expr(e, [&](const Expr& x) {
          if (auto* v = x.as<VarNode>()) out.push_back(v);
        });
    return out;
  };
  // The variables the kept parameters define: scalars, and tensor sizes.
  std::set<const VarNode*> defined;
  for (const Param& p : f->params) {
    if (unused(p)) continue;
    if (!p.is_tensor()) {
      defined.insert(p.var.node());
      continue;
    }
    for (const VarNode* v : size_vars(p)) defined.insert(v);
  }
  std::vector<Param> kept;
  for (const Param& p : f->params) {
    bool needed = !unused(p);
    if (!needed)
      for (const VarNode* v : size_vars(p)) needed = needed || (uses.vars.count(v) && !defined.count(v));
    if (!needed) continue;
    kept.push_back(p);
    if (p.is_tensor())
      for (const VarNode* v : size_vars(p)) defined.insert(v);
  }
  if (kept.size() == f->params.size()) return f;
  return PrimFunc::make(f->name, std::move(kept), f->body, f->attrs, f->span);
}

}  // namespace tl
