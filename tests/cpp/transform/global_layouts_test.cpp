// Golden tests of apply_global_layouts: the marker goes, the annotated parameter takes
// the layout's output shape and its accesses the layout's indices (under the logical
// bounds), other buffers stay node for node; invalid layouts are user errors.
#include <gtest/gtest.h>

#include "../ir/kernel_builders.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "support/error.h"
#include "transform/global_layouts.h"

namespace tl {
namespace {

using testing::make_kernel_launch;

// B[i, j] = A[i, j] over an 8 x 16 tile at row r, B annotated with `forward` (a function
// of the marker's loop variables), A not.
PrimFunc copy_kernel(const std::function<std::vector<Expr>(Var, Var)>& forward, int64_t rows = 8) {
  Buffer A = Buffer::make("A", dtype::Float32, {int_imm(rows), int_imm(16)}, Scope::Global);
  Buffer B = Buffer::make("B", dtype::Float32, {int_imm(rows), int_imm(16)}, Scope::Global);
  Var r("r", dtype::Int32), i("i", dtype::Int32), j("j", dtype::Int32), u("u", dtype::Int32), v("v", dtype::Int32);
  std::vector<Expr> args{buffer_load(B, {u, v})};
  for (const Expr& e : forward(u, v)) args.push_back(e);
  Stmt marker = for_loop(u, int_imm(0), int_imm(rows), ForKind::Serial,
                         for_loop(v, int_imm(0), int_imm(16), ForKind::Serial,
                                  evaluate(call_extern(dtype::Void, kGlobalLayoutMarker, args))));
  Expr row = add(mul(r, int_imm(8)), i);
  Stmt copy = for_loop(
      i, int_imm(0), int_imm(8), ForKind::Parallel,
      for_loop(j, int_imm(0), int_imm(16), ForKind::Parallel, buffer_store(B, buffer_load(A, {row, j}), {row, j})));
  Stmt launch = make_kernel_launch({r}, {int_imm(1)}, {}, {32}, seq({marker, copy}));
  return PrimFunc::make("main", {{"A", A, Var()}, {"B", B, Var()}}, launch);
}

TEST(GlobalLayoutsTest, AccessesGoThroughTheLayout) {
  PrimFunc f = copy_kernel([](Var u, Var v) {
    return std::vector<Expr>{floordiv(v, int_imm(8)), u, floormod(v, int_imm(8))};
  });
  PrimFunc g = apply_global_layouts(f);
  std::string out = to_string(g);
  EXPECT_EQ(out.find("tl::global_layout"), std::string::npos) << out;
  EXPECT_EQ(g->params[1].buffer->shape.size(), 3u);
  EXPECT_EQ(to_string(g->params[1].buffer->shape[0]), "2");
  EXPECT_TRUE(g->params[0].buffer.same_as(f->params[0].buffer));
  // Guarded by the logical bounds (the simplifier drops what the loops prove).
  EXPECT_NE(out.find("if (((((r * 8) + i) >= 0) && (((r * 8) + i) < 8)) && ((j >= 0) && (j < 16))):"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("B[T.floordiv(j, 8), (i + (r * 8)), T.floormod(j, 8)] = A[((r * 8) + i), j]"), std::string::npos)
      << out;
}

TEST(GlobalLayoutsTest, FunctionsWithoutMarkersAreUntouched) {
  Buffer A = Buffer::make("A", dtype::Float32, {int_imm(8)}, Scope::Global);
  Var r("r", dtype::Int32);
  PrimFunc f = PrimFunc::make(
      "main", {{"A", A, Var()}},
      make_kernel_launch({r}, {int_imm(1)}, {}, {32}, buffer_store(A, make_const(dtype::Float32, 1), {int_imm(0)})));
  EXPECT_EQ(apply_global_layouts(f).operator->(), f.operator->());
}

TEST(GlobalLayoutsTest, CollidingIndicesAreNamed) {
  PrimFunc f = copy_kernel([](Var u, Var v) { return std::vector<Expr>{floordiv(u, int_imm(2)), v}; });
  try {
    apply_global_layouts(f);
    FAIL() << "expected a user error";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not a bijection: logical indices (0, 0) and (1, 0) both map to [0, 0]"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace tl
