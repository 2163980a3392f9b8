// Expression nodes. Constructors here only store fields; the typed, checked ways
// to build expressions (with dtype promotion and constant folding) are in ir/op.h.
#pragma once

#include "ir/buffer.h"

namespace tl {

enum class BinaryOp : uint8_t {
#define TL_BINARY(Ident, sym, is_cmp) Ident,
#include "ir/binary_ops.def"
#undef TL_BINARY
};
const char* binary_op_symbol(BinaryOp op);
bool binary_op_is_comparison(BinaryOp op);  // result is bool (comparisons and logic)

enum class UnaryOp : uint8_t { Neg, Not, BitNot };
const char* unary_op_symbol(UnaryOp op);

enum class Intrinsic : uint8_t {
#define TL_INTRIN(Ident, name, arity) Ident,
#include "ir/intrinsics.def"
#undef TL_INTRIN
};
const char* intrinsic_name(Intrinsic op);
int intrinsic_arity(Intrinsic op);  // -1 when variadic
std::optional<Intrinsic> parse_intrinsic(const std::string& name);

struct IntImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::IntImm;
  IntImmNode(DataType t, int64_t v) : ExprNode(kKind, t), value(v) {}
  const int64_t value;
};

struct FloatImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::FloatImm;
  FloatImmNode(DataType t, double v) : ExprNode(kKind, t), value(v) {}
  const double value;
};

struct StringImmNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::StringImm;
  explicit StringImmNode(std::string v) : ExprNode(kKind, dtype::Handle), value(std::move(v)) {}
  const std::string value;
};

struct BinaryNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Binary;
  BinaryNode(DataType t, BinaryOp o, Expr x, Expr y) : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
  const BinaryOp op;
  const Expr a, b;
};

struct UnaryNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Unary;
  UnaryNode(DataType t, UnaryOp o, Expr x) : ExprNode(kKind, t), op(o), a(std::move(x)) {}
  const UnaryOp op;
  const Expr a;
};

struct SelectNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Select;
  SelectNode(DataType t, Expr c, Expr x, Expr y)
      : ExprNode(kKind, t), cond(std::move(c)), true_value(std::move(x)), false_value(std::move(y)) {}
  const Expr cond, true_value, false_value;
};

struct CastNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Cast;
  CastNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
};

// Same bits, another type (bit_cast).
struct ReinterpretNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Reinterpret;
  ReinterpretNode(DataType t, Expr v) : ExprNode(kKind, t), value(std::move(v)) {}
  const Expr value;
};

struct CallNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Call;
  CallNode(DataType t, Intrinsic o, std::vector<Expr> a) : ExprNode(kKind, t), op(o), args(std::move(a)) {}
  const Intrinsic op;
  const std::vector<Expr> args;
};

struct BufferLoadNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::BufferLoad;
  BufferLoadNode(DataType t, Buffer b, std::vector<Expr> i)
      : ExprNode(kKind, t), buffer(std::move(b)), indices(std::move(i)) {}
  const Buffer buffer;
  const std::vector<Expr> indices;
};

// The vector base, base+stride, ..., base+(lanes-1)*stride.
struct RampNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Ramp;
  RampNode(Expr b, Expr s, int l)
      : ExprNode(kKind, b.dtype().with_lanes(l)), base(std::move(b)), stride(std::move(s)), lanes(l) {}
  const Expr base, stride;
  const int lanes;
};

struct BroadcastNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Broadcast;
  BroadcastNode(Expr v, int l) : ExprNode(kKind, v.dtype().with_lanes(l)), value(std::move(v)), lanes(l) {}
  const Expr value;
  const int lanes;
};

struct LetNode : ExprNode {
  static constexpr NodeKind kKind = NodeKind::Let;
  LetNode(Var v, Expr val, Expr b)
      : ExprNode(kKind, b.dtype()), var(std::move(v)), value(std::move(val)), body(std::move(b)) {}
  const Var var;
  const Expr value, body;
};

// Value of an integer or float constant, if `e` is one.
std::optional<int64_t> as_const_int(const Expr& e);
std::optional<double> as_const_float(const Expr& e);
bool is_const_one(const Expr& e);  // an integer constant equal to 1

}  // namespace tl
