// T.assume conditions in the user's Python spelling, for the message of a call that
// breaks one (assume_check.h).
#include "runtime/assume_check.h"

#include "ir/printer.h"

namespace tl {
namespace {

// How Python spells a binary operator: its symbol and precedence (low to high), or a
// call (`level` 0) for the ones it has no operator for.
struct PythonOperator {
  const char* spelling;
  int level;
};

PythonOperator python_operator(BinaryOp op) {
  switch (op) {
    case BinaryOp::Or:
      return {"or", 1};
    case BinaryOp::And:
      return {"and", 2};
    case BinaryOp::EQ:
    case BinaryOp::NE:
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE:
      return {binary_op_symbol(op), 4};
    case BinaryOp::BitOr:
      return {"|", 5};
    case BinaryOp::BitXor:
      return {"^", 6};
    case BinaryOp::BitAnd:
      return {"&", 7};
    case BinaryOp::Shl:
    case BinaryOp::Shr:
      return {binary_op_symbol(op), 8};
    case BinaryOp::Add:
    case BinaryOp::Sub:
      return {binary_op_symbol(op), 9};
    case BinaryOp::Mul:
      return {"*", 10};
    case BinaryOp::FloorDiv:
      return {"//", 10};
    case BinaryOp::FloorMod:
      return {"%", 10};
    case BinaryOp::Div:
      return {"T.truncdiv", 0};  // C's truncating / and %
    case BinaryOp::Mod:
      return {"T.truncmod", 0};
    default:
      return {op == BinaryOp::Min ? "T.min" : "T.max", 0};
  }
}

}  // namespace

// An integer condition as the user wrote it in Python (`N % 4 == 0`, `a // 2 < b and c`).
std::string python_syntax(const Expr& e, int outer) {
  if (auto* i = e.as<IntImmNode>()) return std::to_string(i->value);
  if (auto* v = e.as<VarNode>()) return v->name;
  if (auto* c = e.as<CastNode>()) return python_syntax(c->value, outer);
  if (auto* s = e.as<SelectNode>()) {
    std::string r = python_syntax(s->true_value, 1) + " if " + python_syntax(s->cond, 1) + " else " +
                    python_syntax(s->false_value, 1);
    return outer > 0 ? "(" + r + ")" : r;
  }
  auto* b = e.as<BinaryNode>();
  if (!b) return to_string(e);
  auto [spelling, level] = python_operator(b->op);
  if (level == 0) return str_cat(spelling, "(", python_syntax(b->a), ", ", python_syntax(b->b), ")");
  // Left-associative: the right operand of the same level needs parentheses.
  std::string r = python_syntax(b->a, level) + " " + spelling + " " + python_syntax(b->b, level + 1);
  return level < outer ? "(" + r + ")" : r;
}

}  // namespace tl
