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

// find_stmt: the first statement in pre-order (a parent before its children, children
// in order) that the predicate holds for; any_stmt whether there is one.
TEST(Visitor, FindStmtGivesTheFirstMatchInPreOrder) {
  Var i("i", dtype::Int32);
  Stmt first = evaluate(int_imm(1)), second = evaluate(int_imm(2));
  Stmt inner = attr_stmt("mark", int64_t(1), first);
  Stmt loop = for_loop(i, int_imm(0), int_imm(4), ForKind::Serial, seq({inner, second}));
  auto is_evaluate = [](const Stmt& s) { return s.as<EvaluateNode>() != nullptr; };
  EXPECT_EQ(find_stmt(loop, is_evaluate), first.get());
  EXPECT_EQ(find_stmt(loop, [](const Stmt& s) { return s.as<AttrNode>() != nullptr; }), inner.get());
  EXPECT_EQ(find_stmt(loop, [](const Stmt& s) { return s.as<ForNode>() != nullptr; }), loop.get());
  EXPECT_TRUE(any_stmt(loop, is_evaluate));
  EXPECT_FALSE(any_stmt(loop, [](const Stmt& s) { return s.as<BarrierNode>() != nullptr; }));
  EXPECT_EQ(find_stmt(Stmt(), is_evaluate), nullptr);
}

}  // namespace tl
