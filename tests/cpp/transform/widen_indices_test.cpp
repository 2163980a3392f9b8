// Golden tests of widen_indices: int32 index arithmetic that may pass 2^31 is redone
// in int64 (only the operations that need it), and everything that fits is left as
// it was, node for node.
#include <gtest/gtest.h>

#include "../ir/kernel_builders.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "transform/widen_indices.h"

namespace tl {
namespace {

using testing::make_kernel_launch;

// A[bx * 1024 + i] = A[bx * 1024 + i] + 1 over `n` int8 elements (a constant or a var),
// one 1024-element tile per block.
PrimFunc increment(const Expr& n) {
  Buffer A = Buffer::make("A", dtype::Int8, {n}, Scope::Global);
  Var bx("bx", dtype::Int32), i("i", dtype::Int32);
  Expr idx = add(mul(bx, int_imm(1024)), i);
  Stmt body = for_loop(i, int_imm(0), int_imm(1024), ForKind::Serial,
                       buffer_store(A, add(buffer_load(A, {idx}), make_const(dtype::Int8, 1)), {idx}));
  Expr grid = cast(dtype::Int32, floordiv(add(n, make_const(n.dtype(), 1023)), make_const(n.dtype(), 1024)));
  Stmt launch = make_kernel_launch({bx}, {grid}, {}, {}, body);
  std::vector<Param> params{{"A", A, Var()}};
  if (auto* v = n.as<VarNode>()) params.push_back({v->name, Buffer(), Var::from(n)});
  return PrimFunc::make("main", params, launch);
}

std::string printed(const PrimFunc& f) {
  return to_string(f);
}

TEST(WidenIndicesTest, IndexPast2To31IsComputedIn64Bits) {
  PrimFunc f = increment(int_imm((int64_t(1) << 31) + 4096, dtype::Int64));
  std::string out = printed(widen_indices(f));
  EXPECT_NE(out.find("A[((T.cast(bx, \"int64\") * T.int64(1024)) + T.cast(i, \"int64\"))]"), std::string::npos) << out;
  EXPECT_EQ(out.find("A[((bx * 1024) + i)]"), std::string::npos) << out;
}

TEST(WidenIndicesTest, IndexThatFitsIsUntouched) {
  PrimFunc f = increment(int_imm((int64_t(1) << 31) - 1024, dtype::Int64));
  EXPECT_EQ(printed(widen_indices(f)), printed(f));
  PrimFunc small = increment(int_imm(4096));
  EXPECT_EQ(printed(widen_indices(small)), printed(small));
}

TEST(WidenIndicesTest, Int32SymbolicSizeIsBoundedInt64IsNot) {
  // An int32 size is at most 2^31 - 1 (the runtime refuses more): bx * 1024 + i fits.
  PrimFunc f32 = increment(Var("n", dtype::Int32));
  EXPECT_EQ(printed(widen_indices(f32)), printed(f32));
  // The grid of an int64 size is unbounded: the index is widened.
  PrimFunc f64 = increment(Var("n", dtype::Int64));
  std::string out = printed(widen_indices(f64));
  EXPECT_NE(out.find("A[((T.cast(bx, \"int64\") * T.int64(1024)) + T.cast(i, \"int64\"))]"), std::string::npos) << out;
}

TEST(WidenIndicesTest, CastToInt64OfAnOverflowingSumIsWidened) {
  Buffer A = Buffer::make("A", dtype::Int8, {int_imm((int64_t(1) << 31) + 4096, dtype::Int64)}, Scope::Global);
  Var bx("bx", dtype::Int32), i("i", dtype::Int32);
  Expr idx = add(mul(bx, int_imm(1024)), i);
  // The guard compares with a constant past 2^31: the int32 side is cast to int64.
  Expr guard = lt(idx, int_imm((int64_t(1) << 31) + 4096, dtype::Int64));
  ASSERT_NE(to_string(guard).find("T.int64"), std::string::npos) << to_string(guard);
  Stmt body = for_loop(i, int_imm(0), int_imm(1024), ForKind::Serial,
                       if_then_else(guard, buffer_store(A, make_const(dtype::Int8, 1), {int_imm(0)})));
  PrimFunc f = PrimFunc::make("main", {{"A", A, Var()}}, make_kernel_launch({bx}, {int_imm(2097156)}, {}, {}, body));
  std::string out = printed(widen_indices(f));
  EXPECT_NE(out.find("if (((T.cast(bx, \"int64\") * T.int64(1024)) + T.cast(i, \"int64\")) < "), std::string::npos)
      << out;
}

TEST(WidenIndicesTest, TailGuardThatMayPass2To31ComparesIn64Bits) {
  // n <= 2^31 - 1, blocks of 1000: the last block's bx * 1000 + 999 may reach 2^31 + 351.
  Var n("n", dtype::Int32), bx("bx", dtype::Int32), i("i", dtype::Int32), count("count", dtype::Int32);
  Buffer A = Buffer::make("A", dtype::Int8, {n}, Scope::Global);
  Buffer C = Buffer::make("C", dtype::Int32, {int_imm(1)}, Scope::Local);
  Expr idx = add(mul(bx, int_imm(1000)), i);
  // A counter the kernel keeps itself: unknown, so its comparison keeps int32 (as in C).
  Stmt own = let_stmt(count, buffer_load(C, {int_imm(0)}),
                      if_then_else(ge(add(count, i), int_imm(2)), buffer_store(C, int_imm(0), {int_imm(0)})));
  Stmt body = for_loop(i, int_imm(0), int_imm(1000), ForKind::Serial,
                       seq({if_then_else(lt(idx, n), buffer_store(A, make_const(dtype::Int8, 1), {idx})), own}));
  Expr grid = floordiv(add(n, int_imm(999)), int_imm(1000));
  PrimFunc f = PrimFunc::make("main", {{"A", A, Var()}, {"n", Buffer(), n}},
                              make_kernel_launch({bx}, {grid}, {}, {}, allocate(C, body)));
  std::string out = printed(widen_indices(f));
  EXPECT_NE(out.find("if ((T.cast((bx * 1000), \"int64\") + T.cast(i, \"int64\")) < T.cast(n, \"int64\")):"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("if ((count + i) >= 2):"), std::string::npos) << out;
}

}  // namespace
}  // namespace tl
