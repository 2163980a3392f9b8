// See host_assumes.h.
#include "analysis/host_assumes.h"

#include <algorithm>

#include "ir/visitor.h"

namespace tl {

std::vector<Var> host_vars(const PrimFunc& f) {
  std::vector<Var> out;
  std::set<const VarNode*> seen;
  for (const Param& p : f->params)
    if (!p.is_tensor() && seen.insert(p.var.node()).second) out.push_back(p.var);
  auto collect = [&](const Expr& e) {
    for_each_expr(evaluate(e), [&](const Expr& x) {
      auto* v = x.as<VarNode>();
      if (v && seen.insert(v).second) out.push_back(Var::from(x));
    });
  };
  for (const Param& p : f->params) {
    if (!p.is_tensor()) continue;
    for (const Expr& e : p.buffer->shape) collect(e);
    for (const Expr& e : p.buffer->strides) collect(e);
  }
  return out;
}

std::vector<Expr> host_assumes(const Stmt& body, const std::set<const VarNode*>& host) {
  struct Find : IRVisitor {
    const std::set<const VarNode*>& host;
    std::vector<Expr> found;
    explicit Find(const std::set<const VarNode*>& h) : host(h) {}
    using IRVisitor::visit;
    void visit(const ForNode*) override {}
    void visit(const WhileNode*) override {}
    void visit(const IfThenElseNode*) override {}
    void visit(const EvaluateNode* op) override {
      auto* c = op->value.as<CallNode>();
      if (!c || c->op != Intrinsic::Assume) return;
      bool ok = true;
      for_each_expr(c->args[0], [&](const Expr& e) {
        if (auto* v = e.as<VarNode>()) ok = ok && host.count(v) && (v->dtype.is_integer() || v->dtype.is_bool());
        ok = ok &&
             (e.as<VarNode>() || e.as<IntImmNode>() || e.as<BinaryNode>() || e.as<CastNode>() || e.as<SelectNode>());
      });
      if (ok) found.push_back(c->args[0]);
    }
  } find(host);
  find.visit(body);
  return find.found;
}

namespace {

// v, through integer casts that keep its value.
const VarNode* plain_var(const Expr& e) {
  Expr x = e;
  while (auto* c = x.as<CastNode>()) {
    if (!c->dtype.is_integer() || !c->value.dtype().is_integer() || c->dtype.bits() < c->value.dtype().bits())
      return nullptr;
    x = c->value;
  }
  return x.as<VarNode>();
}

// `v % m == 0` (either side of the ==; % or floormod) and conjunctions of such.
void collect_multiples(const Expr& cond, std::map<const VarNode*, int64_t>* out) {
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if (b->op == BinaryOp::And) {
    collect_multiples(b->a, out);
    collect_multiples(b->b, out);
    return;
  }
  if (b->op != BinaryOp::EQ) return;
  auto is_zero = [](const Expr& e) {
    auto z = as_const_int(e);
    return z && *z == 0;
  };
  Expr mod = b->a, zero = b->b;
  if (!is_zero(zero)) std::swap(mod, zero);
  if (!is_zero(zero)) return;
  auto* m = mod.as<BinaryNode>();
  if (!m || (m->op != BinaryOp::Mod && m->op != BinaryOp::FloorMod)) return;
  auto k = as_const_int(m->b);
  const VarNode* v = plain_var(m->a);
  if (!k || *k <= 1 || !v) return;
  int64_t& known = (*out)[v];
  known = std::max(known, *k);
}

}  // namespace

std::map<const VarNode*, int64_t> host_multiples(const PrimFunc& f) {
  std::set<const VarNode*> host;
  for (const Var& v : host_vars(f)) host.insert(v.node());
  std::map<const VarNode*, int64_t> out;
  for (const Expr& cond : host_assumes(f->body, host)) collect_multiples(cond, &out);
  return out;
}

}  // namespace tl
