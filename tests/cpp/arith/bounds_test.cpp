// Tests of the interval analysis: each rule on positive, negative and unbounded
// ranges, and can_prove on the shapes lowering asks about.
#include <gtest/gtest.h>

#include "arith/bounds.h"
#include "ir/ir.h"

namespace tl {
namespace {

Interval iv(int64_t lo, int64_t hi) {
  return Interval::range(lo, hi);
}
Expr c32(int64_t v) {
  return int_imm(v);
}

class BoundsTest : public ::testing::Test {
 protected:
  Var x{"x", dtype::Int32}, y{"y", dtype::Int32}, z{"z", dtype::Int32};
  BoundAnalyzer a;
};

TEST(BoundsIntervalTest, ArithmeticHandlesUnboundedEnds) {
  EXPECT_EQ(interval_add(iv(1, 2), iv(10, 20)), iv(11, 22));
  EXPECT_EQ(interval_add(Interval::at_least(0), iv(1, 2)), Interval::at_least(1));
  EXPECT_EQ(interval_scale(iv(-2, 3), -2), iv(-6, 4));
  EXPECT_EQ(interval_scale(Interval::at_least(5), -1), (Interval{std::nullopt, -5}));
  EXPECT_EQ(interval_scale(Interval::everything(), 0), Interval::single(0));
  EXPECT_EQ(interval_mul(iv(-2, 3), iv(-5, 4)), iv(-15, 12));
  EXPECT_EQ(interval_mul(Interval::at_least(0), iv(0, 4)), Interval::at_least(0));
  EXPECT_EQ(interval_mul(Interval::at_least(0), iv(-1, 1)), Interval::everything());
  EXPECT_EQ(interval_union(iv(0, 3), iv(5, 9)), iv(0, 9));
  EXPECT_EQ(interval_intersect(iv(0, 30), Interval::at_least(5)), iv(5, 30));
}

TEST(BoundsIntervalTest, OverflowBecomesUnbounded) {
  int64_t big = int64_t(1) << 62;
  Interval r = interval_add(iv(0, big), iv(0, big));
  EXPECT_EQ(r.min, 0);
  EXPECT_FALSE(r.max.has_value());
  EXPECT_FALSE(interval_mul(iv(2, big), iv(2, big)).max.has_value());
}

TEST_F(BoundsTest, ConstantsAndVars) {
  EXPECT_EQ(a.bounds(c32(7)), Interval::single(7));
  EXPECT_TRUE(a.bounds(x).is_everything());
  a.bind(x, 0, 127);
  EXPECT_EQ(a.bounds(x), iv(0, 127));
  a.unbind(x);
  EXPECT_TRUE(a.bounds(x).is_everything());
  Var u("u", dtype::UInt32);
  EXPECT_EQ(a.bounds(u), iv(0, 4294967295LL));
  Var b("b", dtype::Bool);
  EXPECT_EQ(a.bounds(b), iv(0, 1));
}

TEST_F(BoundsTest, BindRangeUsesBoundsOfMinAndExtent) {
  a.bind(y, 0, 3);
  a.bind_range(x, mul(y, c32(32)), c32(32));
  EXPECT_EQ(a.bounds(x), iv(0, 127));
  Var n("n", dtype::Int32);
  a.bind_range(z, c32(0), n);  // symbolic extent: only the lower end is known
  EXPECT_EQ(a.bounds(z), Interval::at_least(0));
}

TEST_F(BoundsTest, AddSubMulAreSignAware) {
  a.bind(x, -2, 3);
  a.bind(y, -5, 4);
  EXPECT_EQ(a.bounds(add(x, y)), iv(-7, 7));
  EXPECT_EQ(a.bounds(sub(x, y)), iv(-6, 8));
  EXPECT_EQ(a.bounds(mul(x, y)), iv(-15, 12));
  EXPECT_EQ(a.bounds(mul(x, c32(-4))), iv(-12, 8));
  EXPECT_EQ(a.bounds(neg(x)), iv(-3, 2));
}

TEST_F(BoundsTest, FloorDivAndModByConstants) {
  a.bind(x, -7, 7);
  EXPECT_EQ(a.bounds(floordiv(x, c32(4))), iv(-2, 1));
  EXPECT_EQ(a.bounds(floormod(x, c32(4))), iv(0, 3));
  EXPECT_EQ(a.bounds(floordiv(x, c32(-4))), iv(-2, 1));
  EXPECT_EQ(a.bounds(floormod(x, c32(-4))), iv(-3, 0));
  a.bind(x, 4, 6);
  EXPECT_EQ(a.bounds(floormod(x, c32(4))), iv(0, 2));
  a.bind(x, -3, -1);
  EXPECT_EQ(a.bounds(floormod(x, c32(4))), iv(1, 3));
  EXPECT_EQ(a.bounds(floordiv(x, c32(4))), Interval::single(-1));
}

TEST_F(BoundsTest, TruncatingDivAndModFollowTheNumeratorSign) {
  a.bind(x, -7, 7);
  EXPECT_EQ(a.bounds(div(x, c32(4))), iv(-1, 1));
  EXPECT_EQ(a.bounds(binary(BinaryOp::Mod, x, c32(4))), iv(-3, 3));
  a.bind(x, 0, 2);
  EXPECT_EQ(a.bounds(binary(BinaryOp::Mod, x, c32(4))), iv(0, 2));
  a.bind(x, -9, -1);
  EXPECT_EQ(a.bounds(binary(BinaryOp::Mod, x, c32(4))), iv(-3, 0));
  EXPECT_EQ(a.bounds(div(x, c32(4))), iv(-2, 0));
}

TEST_F(BoundsTest, DivisionByPositiveExpressions) {
  a.bind(x, 0, 100);
  a.bind(y, 1, 10);
  EXPECT_EQ(a.bounds(floordiv(x, y)), iv(0, 100));
  EXPECT_EQ(a.bounds(floormod(x, y)), iv(0, 9));
  a.bind(x, -100, 100);
  EXPECT_EQ(a.bounds(floordiv(x, y)), iv(-100, 100));
  a.bind(y, 10, 20);
  EXPECT_EQ(a.bounds(floordiv(x, y)), iv(-10, 10));
  EXPECT_EQ(a.bounds(div(x, y)), iv(-10, 10));
  a.bind(y, -1, 1);  // may be zero: nothing known
  EXPECT_TRUE(a.bounds(floordiv(x, y)).is_everything());
}

TEST_F(BoundsTest, MinMaxSelectCastLet) {
  a.bind(x, 0, 10);
  a.bind(y, 5, 20);
  EXPECT_EQ(a.bounds(min(x, y)), iv(0, 10));
  EXPECT_EQ(a.bounds(max(x, y)), iv(5, 20));
  EXPECT_EQ(a.bounds(min(x, z)), (Interval{std::nullopt, 10}));
  EXPECT_EQ(a.bounds(max(x, z)), Interval::at_least(0));
  EXPECT_EQ(a.bounds(select(lt(z, c32(3)), x, y)), iv(0, 20));
  EXPECT_EQ(a.bounds(cast(dtype::Int64, x)), iv(0, 10));
  Var w("w", dtype::Int64);
  a.bind(w, 0, int64_t(1) << 40);
  EXPECT_EQ(a.bounds(cast(dtype::Int32, w)), iv(-(int64_t(1) << 31), (int64_t(1) << 31) - 1));
  EXPECT_EQ(a.bounds(cast(dtype::Int8, x)), iv(0, 10));
  Var t("t", dtype::Int32);
  EXPECT_EQ(a.bounds(let(t, add(x, c32(1)), mul(t, c32(2)))), iv(2, 22));
  EXPECT_EQ(a.bounds(lt(x, y)), iv(0, 1));
}

TEST_F(BoundsTest, UnknownIsUnbounded) {
  Buffer b = Buffer::make("B", dtype::Int32, {c32(16)}, Scope::Global);
  EXPECT_TRUE(a.bounds(buffer_load(b, {c32(0)})).is_everything());
  Buffer b8 = Buffer::make("C", dtype::UInt8, {c32(16)}, Scope::Global);
  EXPECT_EQ(a.bounds(buffer_load(b8, {c32(0)})), iv(0, 255));
}

TEST_F(BoundsTest, UnsignedAndNarrowArithmeticMayWrap) {
  Var u("u", dtype::UInt32);
  a.bind(u, 0, 10);
  Expr one = int_imm(1, dtype::UInt32);
  EXPECT_EQ(a.bounds(add(u, one)), iv(1, 11));
  // u - 1 wraps to 4294967295 when u == 0.
  EXPECT_EQ(a.bounds(sub(u, one)), iv(0, 4294967295LL));
  Var s8("s8", dtype::Int8);
  a.bind(s8, 100, 120);
  EXPECT_EQ(a.bounds(add(s8, int_imm(20, dtype::Int8))), iv(-128, 127));
  EXPECT_EQ(a.bounds(add(s8, int_imm(5, dtype::Int8))), iv(105, 125));
}

TEST_F(BoundsTest, BitOperations) {
  a.bind(x, 0, 1000);
  EXPECT_EQ(a.bounds(binary(BinaryOp::BitAnd, z, c32(7))), iv(0, 7));
  EXPECT_EQ(a.bounds(binary(BinaryOp::Shr, x, c32(3))), iv(0, 125));
  EXPECT_EQ(a.bounds(binary(BinaryOp::Shl, x, c32(2))), iv(0, 4000));
}

TEST_F(BoundsTest, CanProveComparisons) {
  a.bind(x, 0, 127);
  a.bind(y, 0, 3);
  EXPECT_TRUE(a.can_prove(lt(x, c32(128))));
  EXPECT_FALSE(a.can_prove(lt(x, c32(127))));
  EXPECT_TRUE(a.can_prove(le(x, c32(127))));
  EXPECT_TRUE(a.can_prove(ge(x, c32(0))));
  EXPECT_FALSE(a.can_prove(gt(x, c32(0))));
  EXPECT_TRUE(a.can_prove(lt(add(mul(x, c32(4)), y), c32(512))));
  EXPECT_FALSE(a.can_prove(lt(add(mul(x, c32(4)), y), c32(511))));
  EXPECT_TRUE(a.can_prove(ne(x, c32(-1))));
  EXPECT_FALSE(a.can_prove(eq(x, c32(3))));
  EXPECT_TRUE(a.can_prove(eq(sub(x, x), c32(0))));
}

TEST_F(BoundsTest, CanProveCancelsCommonTerms) {
  // No ranges at all: only the simplification of a - b proves these.
  EXPECT_TRUE(a.can_prove(lt(add(z, c32(4)), add(z, c32(5)))));
  EXPECT_TRUE(a.can_prove(ge(add(mul(z, c32(2)), z), mul(z, c32(3)))));
  EXPECT_FALSE(a.can_prove(lt(z, add(z, y))));
  EXPECT_TRUE(a.can_prove(lt(floormod(z, c32(4)), c32(4))));
  EXPECT_TRUE(a.can_prove(ge(floormod(z, c32(4)), c32(0))));
  EXPECT_TRUE(a.can_prove(ne(mul(z, c32(2)), c32(1))));  // parity
}

TEST_F(BoundsTest, CanProveLogic) {
  a.bind(x, 0, 15);
  EXPECT_TRUE(a.can_prove(logical_and(ge(x, c32(0)), lt(x, c32(16)))));
  EXPECT_FALSE(a.can_prove(logical_and(ge(x, c32(0)), lt(x, c32(15)))));
  EXPECT_FALSE(a.can_prove(logical_or(lt(x, c32(3)), lt(z, c32(16)))));  // neither side is known
  EXPECT_TRUE(a.can_prove(logical_or(lt(z, c32(3)), lt(x, c32(16)))));
  EXPECT_TRUE(a.can_prove(logical_not(lt(x, c32(0)))));
  EXPECT_TRUE(a.can_prove(bool_imm(true)));
  EXPECT_FALSE(a.can_prove(bool_imm(false)));
}

TEST_F(BoundsTest, Int64RangesBeyondInt32) {
  Var w("w", dtype::Int64);
  int64_t big = int64_t(1) << 40;
  a.bind(w, 0, big - 1);
  Expr idx = add(mul(w, int_imm(4, dtype::Int64)), int_imm(3, dtype::Int64));
  EXPECT_EQ(a.bounds(idx), iv(3, 4 * big - 1));
  EXPECT_TRUE(a.can_prove(lt(idx, int_imm(4 * big, dtype::Int64))));
}

}  // namespace
}  // namespace tl
