#include <gtest/gtest.h>

#include "ir/printer.h"
#include "ir/visitor.h"

namespace tl {

// Expressions kept in loop annotations and tile-op attributes are part of the
// tree: substitution must reach them.
TEST(Mutator, SubstitutesInsideAnnotationsAndTileOpAttributes) {
  Var n("n", dtype::Int32), i("i", dtype::Int32);
  Buffer a = Buffer::make("A", dtype::Float32, {int_imm(16)}, Scope::Shared);
  Stmt op = tile_op(TileOpKind::Fill, {BufferRegion::full(a)}, {float_imm(0)}, Attrs{{"limit", Expr(n)}});
  Stmt loop = for_loop(i, int_imm(0), int_imm(4), ForKind::Serial, op, Attrs{{"stages", add(Expr(n), int_imm(1))}});
  Stmt out = substitute(loop, {{n.node(), int_imm(7)}});
  std::string text = to_string(out);
  EXPECT_NE(text.find("stages=8"), std::string::npos) << text;
  EXPECT_NE(text.find("limit=7"), std::string::npos) << text;
}

TEST(Visitor, SeesExpressionsInsideAnnotations) {
  Var n("n", dtype::Int32), i("i", dtype::Int32);
  Stmt loop = for_loop(i, int_imm(0), int_imm(4), ForKind::Serial, evaluate(int_imm(0)), Attrs{{"stages", Expr(n)}});
  bool seen = false;
  for_each_expr(loop, [&](const Expr& e) { seen |= e.same_as(n); });
  EXPECT_TRUE(seen);
}

}  // namespace tl
