// Structural comparison of expressions, one case per expression kind.
#include "arith/expr_order.h"

#include <cstring>

namespace tl {

namespace {

template <typename T>
int cmp3(const T& a, const T& b) {
  if (a < b) return -1;
  if (b < a) return 1;
  return 0;
}

// Calls that may have effects are equal only to themselves.
bool is_opaque_call(const CallNode* c) {
  return c->op == Intrinsic::Extern || c->op == Intrinsic::Print || c->op == Intrinsic::DeviceAssert ||
         c->op == Intrinsic::Assume;
}

}  // namespace

int ExprOrder::compare_identity(const void* a, const void* b) {
  if (a == b) return 0;
  // Ids are handed out in the order objects are first met, never by address.
  auto id = [&](const void* p) { return ids_.emplace(p, int(ids_.size())).first->second; };
  int ia = id(a);
  return cmp3(ia, id(b));
}

int ExprOrder::compare_all(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (int c = cmp3(a.size(), b.size())) return c;
  for (size_t i = 0; i < a.size(); ++i)
    if (int c = compare(a[i], b[i])) return c;
  return 0;
}

int ExprOrder::compare(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return 0;
  if (!a.defined() || !b.defined()) return cmp3(a.defined(), b.defined());
  if (int c = cmp3(int(a.kind()), int(b.kind()))) return c;
  DataType ta = a.dtype(), tb = b.dtype();
  if (int c = cmp3(int(ta.scalar_type()), int(tb.scalar_type()))) return c;
  if (int c = cmp3(ta.lanes(), tb.lanes())) return c;
  switch (a.kind()) {
    case NodeKind::IntImm:
      return cmp3(a.as<IntImmNode>()->value, b.as<IntImmNode>()->value);
    case NodeKind::FloatImm: {
      // Bitwise, so that 0.0 and -0.0 (or two NaNs) are not merged.
      double x = a.as<FloatImmNode>()->value, y = b.as<FloatImmNode>()->value;
      uint64_t bx, by;
      std::memcpy(&bx, &x, sizeof x);
      std::memcpy(&by, &y, sizeof y);
      return cmp3(bx, by);
    }
    case NodeKind::StringImm:
      return a.as<StringImmNode>()->value.compare(b.as<StringImmNode>()->value);
    case NodeKind::Var: {
      auto *x = a.as<VarNode>(), *y = b.as<VarNode>();
      if (int c = x->name.compare(y->name)) return c;
      return compare_identity(x, y);
    }
    case NodeKind::Binary: {
      auto *x = a.as<BinaryNode>(), *y = b.as<BinaryNode>();
      if (int c = cmp3(int(x->op), int(y->op))) return c;
      if (int c = compare(x->a, y->a)) return c;
      return compare(x->b, y->b);
    }
    case NodeKind::Unary: {
      auto *x = a.as<UnaryNode>(), *y = b.as<UnaryNode>();
      if (int c = cmp3(int(x->op), int(y->op))) return c;
      return compare(x->a, y->a);
    }
    case NodeKind::Select: {
      auto *x = a.as<SelectNode>(), *y = b.as<SelectNode>();
      if (int c = compare(x->cond, y->cond)) return c;
      if (int c = compare(x->true_value, y->true_value)) return c;
      return compare(x->false_value, y->false_value);
    }
    case NodeKind::Cast:
      return compare(a.as<CastNode>()->value, b.as<CastNode>()->value);
    case NodeKind::Reinterpret:
      return compare(a.as<ReinterpretNode>()->value, b.as<ReinterpretNode>()->value);
    case NodeKind::Call: {
      auto *x = a.as<CallNode>(), *y = b.as<CallNode>();
      if (int c = cmp3(int(x->op), int(y->op))) return c;
      if (is_opaque_call(x)) return compare_identity(x, y);
      return compare_all(x->args, y->args);
    }
    case NodeKind::BufferLoad: {
      auto *x = a.as<BufferLoadNode>(), *y = b.as<BufferLoadNode>();
      if (int c = x->buffer->name.compare(y->buffer->name)) return c;
      if (int c = compare_identity(x->buffer.get(), y->buffer.get())) return c;
      return compare_all(x->indices, y->indices);
    }
    case NodeKind::Ramp: {
      auto *x = a.as<RampNode>(), *y = b.as<RampNode>();
      if (int c = compare(x->base, y->base)) return c;
      return compare(x->stride, y->stride);
    }
    case NodeKind::Broadcast:
      return compare(a.as<BroadcastNode>()->value, b.as<BroadcastNode>()->value);
    case NodeKind::Let: {
      auto *x = a.as<LetNode>(), *y = b.as<LetNode>();
      if (int c = compare(x->var, y->var)) return c;
      if (int c = compare(x->value, y->value)) return c;
      return compare(x->body, y->body);
    }
#define TL_STMT(Name) case NodeKind::Name:
#include "ir/node_kinds.def"
    break;
  }
  TL_UNREACHABLE("statement kind in expression position");
}

}  // namespace tl
