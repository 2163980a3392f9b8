// The C++ operators on Expr (ir/expr_ops.h) build what the named constructors build.
#include <gtest/gtest.h>

#include "ir/expr_ops.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "ir/structural.h"

namespace tl {
namespace {

#define EXPECT_SAME(a, b) EXPECT_TRUE(structural_equal(a, b)) << to_string(a) << " vs " << to_string(b)

TEST(ExprOps, ArithmeticIsTheNamedConstructors) {
  Var i("i", dtype::Int32), j("j", dtype::Int32);
  EXPECT_SAME(i * 64 + j, add(mul(i, int_imm(64)), j));
  EXPECT_SAME(64 * i - j, sub(mul(int_imm(64), i), j));
  EXPECT_SAME(i / 4, div(i, int_imm(4)));
  EXPECT_SAME(i % 4, binary(BinaryOp::Mod, i, int_imm(4)));
  EXPECT_SAME(-i, neg(i));
  EXPECT_SAME(~i, bit_not(i));
  EXPECT_SAME((i & 7) | (j << 2),
              binary(BinaryOp::BitOr, binary(BinaryOp::BitAnd, i, int_imm(7)), binary(BinaryOp::Shl, j, int_imm(2))));
  EXPECT_SAME((i ^ j) >> 1, binary(BinaryOp::Shr, binary(BinaryOp::BitXor, i, j), int_imm(1)));
}

TEST(ExprOps, ComparisonsAndLogicBuildExpressions) {
  Var i("i", dtype::Int32), n("n", dtype::Int32);
  EXPECT_SAME(i < n && i >= 0, logical_and(lt(i, n), ge(i, int_imm(0))));
  EXPECT_SAME(i == 3 || !(i != n), logical_or(eq(i, int_imm(3)), logical_not(ne(i, n))));
  EXPECT_SAME(i <= n, le(i, n));
  EXPECT_SAME(n > i, gt(n, i));
  EXPECT_EQ((i < n).dtype(), dtype::Bool);
}

TEST(ExprOps, NumbersTakeTheOtherOperandsDtype) {
  Var x("x", dtype::Float16), k("k", dtype::Int64), i("i", dtype::Int32);
  EXPECT_EQ((x * 2).dtype(), dtype::Float16);  // an integer beside a float16 is a float16 2
  EXPECT_SAME(x * 2, mul(x, make_const(dtype::Float16, 2)));
  Expr big = k + (int64_t(1) << 40);  // int64 constants keep every bit
  EXPECT_SAME(big, add(k, int_imm(int64_t(1) << 40, dtype::Int64)));
  // 0.5 beside an int32 expression is a float32 constant, not a truncated 0
  EXPECT_SAME(i * 0.5, mul(i, float_imm(0.5)));
  EXPECT_EQ((i * 0.5).dtype(), dtype::Float32);
}

TEST(ExprOps, ConstantsFoldAndDivisionByZeroIsRefused) {
  EXPECT_SAME(int_imm(6) * 7, int_imm(42));
  Var i("i", dtype::Int32);
  EXPECT_THROW(i / 0, UserError);
  EXPECT_THROW(i % 0, UserError);
}

}  // namespace
}  // namespace tl
