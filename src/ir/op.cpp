// Typed IR constructors: operand dtypes are reconciled here, once, with the rules
// TileLang users expect (a Python constant takes the other operand's dtype; float
// beats int; the wider type wins), and integer immediates are folded.
#include "ir/op.h"

#include <cmath>
#include <limits>

#include "ir/printer.h"

namespace tl {

Expr make_const(DataType t, double value) {
  if (t.is_float()) return float_imm(value, t);
  if (t.is_bool()) return bool_imm(value != 0);
  return int_imm(int64_t(value), t);
}

Expr int_imm(int64_t v, DataType t) {
  TL_ICHECK(t.is_integer() || t.is_bool(), "int_imm of ", t.name());
  return make_node<Expr, IntImmNode>(t, v);
}
Expr float_imm(double v, DataType t) {
  TL_ICHECK(t.is_float(), "float_imm of ", t.name());
  return make_node<Expr, FloatImmNode>(t, v);
}
Expr bool_imm(bool v) {
  return make_node<Expr, IntImmNode>(dtype::Bool, v ? 1 : 0);
}
Expr string_imm(std::string s) {
  return make_node<Expr, StringImmNode>(std::move(s));
}

namespace {

bool is_imm(const Expr& e) {
  return e.is<IntImmNode>() || e.is<FloatImmNode>();
}

// Rank used to pick the wider of two types of one category.
DataType wider(DataType a, DataType b) {
  if (a.is_float() && b.is_float()) {
    if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
    if (a == b) return a;
    return dtype::Float32;  // float16 vs bfloat16, or two fp8 kinds
  }
  if (a.bits() != b.bits()) return a.bits() > b.bits() ? a : b;
  return a.is_int() ? a : b;  // int32 vs uint32: signed
}

Expr convert(const Expr& e, DataType t) {
  if (e.dtype() == t) return e;
  if (is_imm(e) && t.is_scalar()) {
    if (auto f = as_const_float(e)) return make_const(t, *f);
  }
  if (e.dtype().lanes() == 1 && t.lanes() > 1) return broadcast(convert(e, t.element_of()), t.lanes());
  return cast(t, e);
}

int64_t floordiv_i(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t floormod_i(int64_t a, int64_t b) {
  return a - floordiv_i(a, b) * b;
}

std::optional<Expr> fold_int(BinaryOp op, int64_t x, int64_t y, DataType t) {
  switch (op) {
    case BinaryOp::Add:
      return int_imm(x + y, t);
    case BinaryOp::Sub:
      return int_imm(x - y, t);
    case BinaryOp::Mul:
      return int_imm(x * y, t);
    case BinaryOp::Div:
    case BinaryOp::Mod:
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod:
      // A zero divisor is never folded; INT64_MIN / -1 overflows int64 (a trap on x86)
      // and is left to the run-time helpers, which define it.
      if (y == 0 || (y == -1 && x == std::numeric_limits<int64_t>::min())) return std::nullopt;
      if (op == BinaryOp::Div) return int_imm(x / y, t);
      if (op == BinaryOp::Mod) return int_imm(x % y, t);
      if (op == BinaryOp::FloorDiv) return int_imm(floordiv_i(x, y), t);
      return int_imm(floormod_i(x, y), t);
    case BinaryOp::Min:
      return int_imm(std::min(x, y), t);
    case BinaryOp::Max:
      return int_imm(std::max(x, y), t);
    case BinaryOp::EQ:
      return bool_imm(x == y);
    case BinaryOp::NE:
      return bool_imm(x != y);
    case BinaryOp::LT:
      return bool_imm(x < y);
    case BinaryOp::LE:
      return bool_imm(x <= y);
    case BinaryOp::GT:
      return bool_imm(x > y);
    case BinaryOp::GE:
      return bool_imm(x >= y);
    case BinaryOp::And:
      return bool_imm(x && y);
    case BinaryOp::Or:
      return bool_imm(x || y);
    case BinaryOp::BitAnd:
      return int_imm(x & y, t);
    case BinaryOp::BitOr:
      return int_imm(x | y, t);
    case BinaryOp::BitXor:
      return int_imm(x ^ y, t);
    case BinaryOp::Shl:
      return int_imm(x << y, t);
    case BinaryOp::Shr:
      return int_imm(x >> y, t);
  }
  return std::nullopt;
}

Expr as_bool(const Expr& e) {
  if (e.dtype().is_bool()) return e;
  return ne(e, make_const(e.dtype().element_of(), 0));
}

}  // namespace

DataType promote_types(const Expr& a, const Expr& b) {
  DataType ta = a.dtype(), tb = b.dtype();
  int lanes = std::max(ta.lanes(), tb.lanes());
  DataType sa = ta.element_of(), sb = tb.element_of();
  if (sa == sb) return sa.with_lanes(lanes);
  if (sa.is_bool()) sa = dtype::Int32;
  if (sb.is_bool()) sb = dtype::Int32;
  // A constant adopts the other side's type unless that would lose its kind
  // (an int expression with a float constant becomes float32).
  // An integer constant that the other side's integer type cannot hold (2^31 + 5
  // next to an int32 index) widens the operation instead, as it would in C.
  bool ia = is_imm(a), ib = is_imm(b);
  if (ia != ib) {
    DataType var_t = ia ? sb : sa, imm_t = ia ? sa : sb;
    std::optional<int64_t> value = as_const_int(ia ? a : b);
    if (var_t == dtype::Int32 && imm_t == dtype::Int64 && value &&
        (*value > std::numeric_limits<int32_t>::max() || *value < std::numeric_limits<int32_t>::min()))
      return dtype::Int64.with_lanes(lanes);
    if (var_t.is_float() || !imm_t.is_float()) return var_t.with_lanes(lanes);
    return dtype::Float32.with_lanes(lanes);
  }
  if (sa.is_float() != sb.is_float()) return (sa.is_float() ? sa : sb).with_lanes(lanes);
  return wider(sa, sb).with_lanes(lanes);
}

namespace {

bool is_integer_division(BinaryOp op) {
  return op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::FloorDiv || op == BinaryOp::FloorMod;
}

// Whether `op(a, b)` is an integer division or remainder whose divisor is the constant 0.
bool divides_by_constant_zero(BinaryOp op, const Expr& a, const Expr& b) {
  if (!is_integer_division(op)) return false;
  DataType t = promote_types(a, b);
  if (!t.is_integer() && !t.is_bool()) return false;
  auto c = as_const_int(b);
  return c && *c == 0;
}

// How the user wrote `op(a, b)`: Python's operators for the floor forms.
std::string division_text(BinaryOp op, const Expr& a, const Expr& b) {
  switch (op) {
    case BinaryOp::FloorDiv:
      return str_cat(to_string(a), " // ", to_string(b));
    case BinaryOp::FloorMod:
      return str_cat(to_string(a), " % ", to_string(b));
    case BinaryOp::Div:
      return str_cat("T.truncdiv(", to_string(a), ", ", to_string(b), ")");
    default:
      return str_cat("T.truncmod(", to_string(a), ", ", to_string(b), ")");
  }
}

}  // namespace

Expr binary(BinaryOp op, Expr a, Expr b, SourceSpan span) {
  TL_ICHECK(a.defined() && b.defined(), "binary operand undefined");
  if (divides_by_constant_zero(op, a, b))
    throw_user_error(span, str_cat("integer division by zero: the divisor of `", division_text(op, a, b),
                                   "` is the constant 0; guard the division or use a non-zero divisor"));
  if (op == BinaryOp::And || op == BinaryOp::Or) {
    a = as_bool(a);
    b = as_bool(b);
  }
  DataType t = promote_types(a, b);
  bool is_bitwise = op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor || op == BinaryOp::Shl ||
                    op == BinaryOp::Shr;
  if (is_bitwise && !(t.is_integer() || t.is_bool()))
    throw_user_error(
        span, str_cat("bitwise operator '", binary_op_symbol(op), "' needs integer operands, got ", a.dtype().name(),
                      " and ", b.dtype().name(), "; use T.reinterpret to view float bits"));
  a = convert(a, t);
  b = convert(b, t);
  DataType result = binary_op_is_comparison(op) ? dtype::Bool.with_lanes(t.lanes()) : t;
  auto ia = as_const_int(a), ib = as_const_int(b);
  if (ia && ib && t.is_scalar() && (t.is_integer() || t.is_bool()))
    if (auto folded = fold_int(op, *ia, *ib, result)) return *folded;
  if (t.is_float() && t.is_scalar() && a.is<FloatImmNode>() && b.is<FloatImmNode>()) {
    double x = *as_const_float(a), y = *as_const_float(b);
    switch (op) {
      case BinaryOp::Add:
        return float_imm(x + y, t);
      case BinaryOp::Sub:
        return float_imm(x - y, t);
      case BinaryOp::Mul:
        return float_imm(x * y, t);
      default:
        break;
    }
  }
  auto n = std::make_shared<BinaryNode>(result, op, std::move(a), std::move(b));
  n->span = span;
  return Expr(std::move(n));
}

Expr rebuild_binary(BinaryOp op, Expr a, Expr b, SourceSpan span) {
  if (!divides_by_constant_zero(op, a, b)) return binary(op, std::move(a), std::move(b), span);
  DataType t = promote_types(a, b);
  auto n = std::make_shared<BinaryNode>(t, op, convert(a, t), convert(b, t));
  n->span = span;
  return Expr(std::move(n));
}

Expr add(Expr a, Expr b) {
  return binary(BinaryOp::Add, std::move(a), std::move(b));
}
Expr sub(Expr a, Expr b) {
  return binary(BinaryOp::Sub, std::move(a), std::move(b));
}
Expr mul(Expr a, Expr b) {
  return binary(BinaryOp::Mul, std::move(a), std::move(b));
}
Expr div(Expr a, Expr b) {
  return binary(BinaryOp::Div, std::move(a), std::move(b));
}
Expr floordiv(Expr a, Expr b) {
  return binary(BinaryOp::FloorDiv, std::move(a), std::move(b));
}
Expr floormod(Expr a, Expr b) {
  return binary(BinaryOp::FloorMod, std::move(a), std::move(b));
}
Expr ceildiv(const Expr& a, const Expr& b) {
  if (divides_by_constant_zero(BinaryOp::FloorDiv, a, b))
    throw_user_error({}, str_cat("integer division by zero: the divisor of `T.ceildiv(", to_string(a), ", ",
                                 to_string(b), ")` is the constant 0; guard the division or use a non-zero divisor"));
  // (a + b - 1) // b, kept in floordiv form so the simplifier can reason about it.
  return floordiv(sub(add(a, b), make_const(b.dtype(), 1)), b);
}
Expr min(Expr a, Expr b) {
  return binary(BinaryOp::Min, std::move(a), std::move(b));
}
Expr max(Expr a, Expr b) {
  return binary(BinaryOp::Max, std::move(a), std::move(b));
}
Expr reduction_max(Expr a, Expr b, bool propagate_nan) {
  if (!propagate_nan || !a.dtype().is_float()) return max(std::move(a), std::move(b));
  return call(Intrinsic::MaxNan, {std::move(a), std::move(b)});
}
Expr reduction_min(Expr a, Expr b, bool propagate_nan) {
  if (!propagate_nan || !a.dtype().is_float()) return min(std::move(a), std::move(b));
  return call(Intrinsic::MinNan, {std::move(a), std::move(b)});
}
Expr eq(Expr a, Expr b) {
  return binary(BinaryOp::EQ, std::move(a), std::move(b));
}
Expr ne(Expr a, Expr b) {
  return binary(BinaryOp::NE, std::move(a), std::move(b));
}
Expr lt(Expr a, Expr b) {
  return binary(BinaryOp::LT, std::move(a), std::move(b));
}
Expr le(Expr a, Expr b) {
  return binary(BinaryOp::LE, std::move(a), std::move(b));
}
Expr gt(Expr a, Expr b) {
  return binary(BinaryOp::GT, std::move(a), std::move(b));
}
Expr ge(Expr a, Expr b) {
  return binary(BinaryOp::GE, std::move(a), std::move(b));
}
Expr logical_and(Expr a, Expr b) {
  a = as_bool(a);
  b = as_bool(b);
  if (auto x = as_const_int(a)) return *x ? b : a;
  if (auto y = as_const_int(b)) return *y ? a : b;
  return binary(BinaryOp::And, a, b);
}
Expr logical_or(Expr a, Expr b) {
  a = as_bool(a);
  b = as_bool(b);
  if (auto x = as_const_int(a)) return *x ? a : b;
  if (auto y = as_const_int(b)) return *y ? b : a;
  return binary(BinaryOp::Or, a, b);
}
Expr logical_not(Expr a) {
  a = as_bool(a);
  if (auto x = as_const_int(a)) return bool_imm(!*x);
  return make_node<Expr, UnaryNode>(a.dtype(), UnaryOp::Not, a);
}
Expr neg(const Expr& a) {
  if (auto x = as_const_int(a); x && a.dtype().is_integer()) return int_imm(-*x, a.dtype());
  if (auto* f = a.as<FloatImmNode>()) return float_imm(-f->value, a.dtype());
  return make_node<Expr, UnaryNode>(a.dtype(), UnaryOp::Neg, a);
}
Expr bit_not(const Expr& a) {
  if (!a.dtype().is_integer())
    throw_user_error(a.span(), str_cat("'~' needs an integer operand, got ", a.dtype().name()));
  return make_node<Expr, UnaryNode>(a.dtype(), UnaryOp::BitNot, a);
}

Expr cast(DataType t, Expr v, SourceSpan span) {
  if (v.dtype() == t) return v;
  // An integer constant to an integer type stays exact (through a double, one past 2^53 would round).
  if (auto i = as_const_int(v); i && t.is_integer() && v.dtype().is_integer()) return int_imm(*i, t);
  if (t.is_scalar() && v.dtype().is_scalar() && is_imm(v) && !t.is_handle()) return make_const(t, *as_const_float(v));
  auto n = std::make_shared<CastNode>(t, std::move(v));
  n->span = span;
  return Expr(std::move(n));
}

Expr reinterpret(DataType t, Expr v, SourceSpan span) {
  if (t.bits() * t.lanes() != v.dtype().bits() * v.dtype().lanes())
    throw_user_error(span, str_cat("T.reinterpret needs types of equal size, got ", v.dtype().name(), " (",
                                   v.dtype().bits() * v.dtype().lanes(), " bits) to ", t.name(), " (",
                                   t.bits() * t.lanes(), " bits)"));
  if (v.dtype() == t) return v;
  auto n = std::make_shared<ReinterpretNode>(t, std::move(v));
  n->span = span;
  return Expr(std::move(n));
}

Expr select(Expr cond, Expr t, Expr f, SourceSpan span) {
  cond = as_bool(cond);
  DataType ty = promote_types(t, f);
  t = convert(t, ty);
  f = convert(f, ty);
  if (auto c = as_const_int(cond)) return *c ? t : f;
  auto n = std::make_shared<SelectNode>(ty, std::move(cond), std::move(t), std::move(f));
  n->span = span;
  return Expr(std::move(n));
}

Expr address_of(Expr element, AddressAccess access) {
  return call(Intrinsic::AddressOf, {std::move(element), int_imm(int64_t(access))});
}

AddressAccess address_access(const CallNode* address) {
  auto mask = address->args.size() == 2 ? as_const_int(address->args[1]) : std::nullopt;
  return mask ? AddressAccess(*mask) : AddressAccess::ReadWrite;
}

Expr call(Intrinsic op, std::vector<Expr> args, SourceSpan span) {
  int arity = intrinsic_arity(op);
  if (arity >= 0 && int(args.size()) != arity)
    throw_user_error(span, str_cat("T.", intrinsic_name(op), " takes ", arity, " argument(s), got ", args.size()));
  DataType t = dtype::Void;
  switch (op) {
    case Intrinsic::IsNan:
    case Intrinsic::IsInf:
    case Intrinsic::IsFinite:
      t = dtype::Bool.with_lanes(args[0].dtype().lanes());
      break;
    case Intrinsic::Abs:
      t = args[0].dtype();
      break;
    case Intrinsic::MaxNan:
    case Intrinsic::MinNan:
      TL_ICHECK(args[0].dtype() == args[1].dtype(), "max_nan / min_nan of ", args[0].dtype().name(), " and ",
                args[1].dtype().name());
      t = args[0].dtype();
      break;
    case Intrinsic::Extern:
    case Intrinsic::Print:
    case Intrinsic::DeviceAssert:
      t = dtype::Void;
      break;
    case Intrinsic::Assume:
      if (!args[0].dtype().is_bool() || args[0].dtype().lanes() != 1)
        throw_user_error(span, "T.assume takes a condition such as `i < N`, got " + args[0].dtype().name());
      t = dtype::Void;
      break;
    case Intrinsic::AddressOf: {
      const std::optional<int64_t> mask = args.size() == 2 ? as_const_int(args[1]) : std::nullopt;
      const int64_t m = mask.value_or(0);  // 0: none given, or not a constant
      if (args.empty() || args.size() > 2 || (args.size() == 2 && (m < 1 || m > 3) && m != 5)) {
        std::string given = str_cat(args.size(), " argument(s)");
        if (args.size() == 2) given += mask ? str_cat(", mask ", m) : std::string(", a mask that is not a constant");
        throw_user_error(span,
                         "address_of takes a buffer element and optionally an access mask 1 (read), 2 (write), "
                         "3 (both) or 5 (a read still in flight when the call returns); got " +
                             given);
      }
      t = dtype::Handle;
      break;
    }
    case Intrinsic::Pow:
    case Intrinsic::Atan2:
    case Intrinsic::Fmod:
    case Intrinsic::Fma: {
      // Float math on the promoted type of all operands (integers compute in float32).
      Expr acc = args[0];  // stands for the operands so far; non-constant once one is
      for (size_t i = 1; i < args.size(); ++i) {
        DataType ti = promote_types(acc, args[i]);
        acc = is_imm(acc) && !is_imm(args[i]) ? convert(args[i], ti) : convert(acc, ti);
      }
      t = acc.dtype();
      if (!t.is_float()) t = dtype::Float32.with_lanes(t.lanes());
      for (Expr& a : args) a = convert(a, t);
      break;
    }
    default:
      // Unary float math: integer arguments compute in float32.
      t = args[0].dtype();
      if (!t.is_float()) {
        t = dtype::Float32.with_lanes(t.lanes());
        args[0] = cast(t, args[0]);
      }
      break;
  }
  auto n = std::make_shared<CallNode>(t, op, std::move(args));
  n->span = span;
  return Expr(std::move(n));
}

Expr call_extern(DataType t, const std::string& name, std::vector<Expr> args) {
  args.insert(args.begin(), string_imm(name));
  return make_node<Expr, CallNode>(t, Intrinsic::Extern, std::move(args));
}

Expr buffer_load(const Buffer& b, std::vector<Expr> indices, SourceSpan span) {
  if (int(indices.size()) != b.ndim())
    throw_user_error(span, str_cat("buffer '", b->name, "' has ", b.ndim(), " dimension(s) but is indexed with ",
                                   indices.size(), " index(es)"));
  auto n = std::make_shared<BufferLoadNode>(b->dtype, b, std::move(indices));
  n->span = span;
  return Expr(std::move(n));
}

Expr ramp(Expr base, Expr stride, int lanes) {
  return make_node<Expr, RampNode>(std::move(base), std::move(stride), lanes);
}
Expr broadcast(Expr value, int lanes) {
  return make_node<Expr, BroadcastNode>(std::move(value), lanes);
}
Expr let(Var v, Expr value, Expr body) {
  return make_node<Expr, LetNode>(std::move(v), std::move(value), std::move(body));
}

Expr max_value(DataType t) {
  switch (t.scalar_type()) {
    case ScalarType::Float16:
      return float_imm(65504.0, t);
    case ScalarType::BFloat16:
      return float_imm(3.3895313892515355e38, t);
    case ScalarType::Float32:
    case ScalarType::TFloat32:
      return float_imm(std::numeric_limits<float>::max(), t);
    case ScalarType::Float64:
      return float_imm(std::numeric_limits<double>::max(), t);
    case ScalarType::Float8E4M3FN:
      return float_imm(448.0, t);
    case ScalarType::Float8E4M3FNUZ:
      return float_imm(240.0, t);
    case ScalarType::Float8E5M2:
    case ScalarType::Float8E5M2FNUZ:
      return float_imm(57344.0, t);
    case ScalarType::Float8E8M0FNU:
      return float_imm(1.7014118346046923e38, t);
    case ScalarType::Float4E2M1FN:
    case ScalarType::Float4E2M1Unpacked:
      return float_imm(6.0, t);
    case ScalarType::Bool:
      return bool_imm(true);
    default:
      break;
  }
  TL_ICHECK(t.is_integer(), "max_value of ", t.name());
  if (t.is_uint()) return int_imm(t.bits() == 64 ? int64_t(-1) : int64_t((uint64_t(1) << t.bits()) - 1), t);
  return int_imm(t.bits() == 64 ? std::numeric_limits<int64_t>::max() : (int64_t(1) << (t.bits() - 1)) - 1, t);
}

Expr min_value(DataType t) {
  if (t.is_float()) {
    if (t.scalar_type() == ScalarType::Float8E8M0FNU) return float_imm(5.877471754111438e-39, t);
    return float_imm(-*as_const_float(max_value(t)), t);
  }
  if (t.is_bool()) return bool_imm(false);
  TL_ICHECK(t.is_integer(), "min_value of ", t.name());
  if (t.is_uint()) return int_imm(0, t);
  return int_imm(t.bits() == 64 ? std::numeric_limits<int64_t>::min() : -(int64_t(1) << (t.bits() - 1)), t);
}

Expr infinity(DataType t, bool negative) {
  TL_ICHECK(t.is_float(), "infinity of ", t.name());
  double inf = std::numeric_limits<double>::infinity();
  return float_imm(negative ? -inf : inf, t);
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (auto* q = s.as<SeqNode>())
      flat.insert(flat.end(), q->seq.begin(), q->seq.end());
    else
      flat.push_back(std::move(s));
  }
  if (flat.size() == 1) return flat[0];
  return make_node<Stmt, SeqNode>(std::move(flat));
}

template <typename T, typename... Args>
static Stmt spanned(SourceSpan span, Args&&... args) {
  auto n = std::make_shared<T>(std::forward<Args>(args)...);
  n->span = span;
  return Stmt(std::move(n));
}

Stmt for_loop(Var v, Expr min, Expr extent, ForKind kind, Stmt body, Attrs ann, SourceSpan span) {
  return spanned<ForNode>(span, std::move(v), std::move(min), std::move(extent), kind, std::move(body), std::move(ann));
}
Stmt while_loop(const Expr& cond, Stmt body, SourceSpan span) {
  return spanned<WhileNode>(span, as_bool(cond), std::move(body));
}
Stmt if_then_else(const Expr& cond, Stmt then_case, Stmt else_case, SourceSpan span) {
  return spanned<IfThenElseNode>(span, as_bool(cond), std::move(then_case), std::move(else_case));
}
Stmt buffer_store(const Buffer& b, Expr value, std::vector<Expr> indices, SourceSpan span) {
  if (int(indices.size()) != b.ndim())
    throw_user_error(span, str_cat("buffer '", b->name, "' has ", b.ndim(), " dimension(s) but the store uses ",
                                   indices.size(), " index(es)"));
  DataType want = b->dtype.with_lanes(value.dtype().lanes());
  if (value.dtype() != want) value = convert(value, want);
  return spanned<BufferStoreNode>(span, b, std::move(value), std::move(indices));
}
Stmt evaluate(Expr v, SourceSpan span) {
  return spanned<EvaluateNode>(span, std::move(v));
}
Stmt let_stmt(Var v, Expr value, Stmt body, SourceSpan span) {
  return spanned<LetStmtNode>(span, std::move(v), std::move(value), std::move(body));
}
Stmt allocate(Buffer b, Stmt body, SourceSpan span) {
  return spanned<AllocateNode>(span, std::move(b), std::move(body));
}
Stmt attr_stmt(std::string key, AttrValue value, Stmt body, SourceSpan span) {
  return spanned<AttrNode>(span, std::move(key), std::move(value), std::move(body));
}
Stmt barrier(BarrierKind k, SourceSpan span) {
  return spanned<BarrierNode>(span, k);
}

Stmt with_body(const KernelLaunchNode* op, Stmt body) {
  auto n = std::make_shared<KernelLaunchNode>(op->block_vars, op->grid, op->thread_vars, op->threads, std::move(body),
                                              op->prelude, op->cluster);
  n->span = op->span;
  return Stmt(std::move(n));
}

Expr thread_rank(const KernelLaunchNode* launch) {
  Expr rank = int_imm(0);
  for (int d = int(launch->thread_vars.size()) - 1; d >= 0; --d)
    rank = add(mul(rank, int_imm(launch->threads[d])), cast(dtype::Int32, launch->thread_vars[d]));
  return rank;
}
Stmt break_stmt(SourceSpan span) {
  return spanned<BreakNode>(span);
}
Stmt continue_stmt(SourceSpan span) {
  return spanned<ContinueNode>(span);
}
Stmt tile_op(TileOpKind op, std::vector<BufferRegion> regions, std::vector<Expr> args, Attrs attrs, SourceSpan span) {
  return spanned<TileOpNode>(span, op, std::move(regions), std::move(args), std::move(attrs));
}

}  // namespace tl
