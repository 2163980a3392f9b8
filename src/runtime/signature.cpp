// Signature extraction and the small integer evaluator used to bind shapes and
// compute the grid at call time.
#include "runtime/signature.h"

#include "ir/visitor.h"

namespace tl {

KernelSignature KernelSignature::from(const PrimFunc& f) {
  KernelSignature sig;
  sig.name = f->name;
  sig.params = f->params;
  std::set<const VarNode*> seen;
  for (const Param& p : f->params)
    if (!p.is_tensor()) seen.insert(p.var.node());
  auto collect = [&](const Expr& e) {
    for_each_expr(evaluate(e), [&](const Expr& x) {
      auto* v = x.as<VarNode>();
      if (v && seen.insert(v).second) sig.dynamic_vars.push_back(Var::from(x));
    });
  };
  for (const Param& p : f->params) {
    if (!p.is_tensor()) continue;
    for (const Expr& e : p.buffer->shape) collect(e);
    for (const Expr& e : p.buffer->strides) collect(e);
  }
  // The launch region (after any root-level lets and allocations).
  Stmt s = f->body;
  while (s.defined()) {
    if (auto* k = s.as<KernelLaunchNode>()) {
      sig.grid = k->grid;
      sig.threads = k->threads;
      break;
    }
    if (auto* l = s.as<LetStmtNode>()) {
      s = l->body;
    } else if (auto* a = s.as<AttrNode>()) {
      s = a->body;
    } else if (auto* q = s.as<SeqNode>(); q && q->seq.size() == 1) {
      s = q->seq[0];
    } else {
      break;
    }
  }
  if (sig.grid.empty())
    throw_user_error(f->span, str_cat("kernel '", f->name,
                                      "' must consist of one `with T.Kernel(...)` block (found none, or statements "
                                      "outside it)"));
  return sig;
}

std::optional<int64_t> eval_int(const Expr& e, const Bindings& b) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) {
    auto it = b.find(v);
    if (it == b.end()) return std::nullopt;
    return it->second;
  }
  if (auto* c = e.as<CastNode>()) {
    if (!c->dtype.is_integer()) return std::nullopt;
    return eval_int(c->value, b);
  }
  if (auto* s = e.as<SelectNode>()) {
    auto c = eval_int(s->cond, b);
    if (!c) return std::nullopt;
    return eval_int(*c ? s->true_value : s->false_value, b);
  }
  auto* n = e.as<BinaryNode>();
  if (!n) return std::nullopt;
  auto x = eval_int(n->a, b), y = eval_int(n->b, b);
  if (!x || !y) return std::nullopt;
  int64_t p = *x, q = *y;
  switch (n->op) {
    case BinaryOp::Add:
      return p + q;
    case BinaryOp::Sub:
      return p - q;
    case BinaryOp::Mul:
      return p * q;
    case BinaryOp::Div:
      return q ? std::optional<int64_t>(p / q) : std::nullopt;
    case BinaryOp::Mod:
      return q ? std::optional<int64_t>(p % q) : std::nullopt;
    case BinaryOp::FloorDiv: {
      if (!q) return std::nullopt;
      int64_t r = p / q;
      return (p % q != 0 && ((p < 0) != (q < 0))) ? r - 1 : r;
    }
    case BinaryOp::FloorMod: {
      if (!q) return std::nullopt;
      int64_t r = p % q;
      return (r != 0 && ((r < 0) != (q < 0))) ? r + q : r;
    }
    case BinaryOp::Min:
      return std::min(p, q);
    case BinaryOp::Max:
      return std::max(p, q);
    case BinaryOp::EQ:
      return p == q;
    case BinaryOp::NE:
      return p != q;
    case BinaryOp::LT:
      return p < q;
    case BinaryOp::LE:
      return p <= q;
    case BinaryOp::GT:
      return p > q;
    case BinaryOp::GE:
      return p >= q;
    case BinaryOp::And:
      return p && q;
    case BinaryOp::Or:
      return p || q;
    case BinaryOp::BitAnd:
      return p & q;
    case BinaryOp::BitOr:
      return p | q;
    case BinaryOp::BitXor:
      return p ^ q;
    case BinaryOp::Shl:
      return p << q;
    case BinaryOp::Shr:
      return p >> q;
  }
  return std::nullopt;
}

}  // namespace tl
