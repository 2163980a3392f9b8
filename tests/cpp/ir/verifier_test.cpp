// The verifier accepts well-formed kernels and rejects each kind of malformed IR
// with an InternalError that names the problem and shows the offending node.
// Malformed nodes are built with make_node, bypassing the checked constructors.
#include "ir/verifier.h"

#include <gtest/gtest.h>

#include "ir/printer.h"
#include "kernel_builders.h"

namespace tl {
namespace {

using testing::make_kernel_launch;

class Verifier : public ::testing::Test {
 protected:
  Var m{"M", dtype::Int32};
  Var n{"n", dtype::Int32};
  Buffer a = Buffer::make("A", dtype::Float16, {m, int_imm(64)}, Scope::Global);
  Var i{"i", dtype::Int32};

  PrimFunc func_of(Stmt body) { return PrimFunc::make("bad", {{"A", a, {}}, {"n", {}, n}}, std::move(body)); }

  Stmt loop(const Var& v, Stmt body, ForKind kind = ForKind::Serial) {
    return for_loop(v, int_imm(0), int_imm(4), kind, std::move(body));
  }
  Stmt store_a(const Expr& row) { return buffer_store(a, float_imm(1.0, dtype::Float16), {row, int_imm(0)}); }

  // Expects verify(f) to throw an InternalError whose message contains every fragment.
  void expect_malformed(const PrimFunc& f, std::initializer_list<std::string> fragments) {
    try {
      verify(f);
      ADD_FAILURE() << "verify accepted:\n" << to_string(f);
    } catch (const InternalError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("internal compiler error"), std::string::npos) << msg;
      EXPECT_NE(msg.find("malformed IR in function 'bad'"), std::string::npos) << msg;
      for (const std::string& fragment : fragments)
        EXPECT_NE(msg.find(fragment), std::string::npos) << "no '" << fragment << "' in\n" << msg;
    }
  }
};

TEST_F(Verifier, AcceptsWellFormedKernels) {
  EXPECT_NO_THROW(verify(testing::make_scale_kernel(false)));
  EXPECT_NO_THROW(verify(testing::make_scale_kernel(true)));
  // Symbolic shape vars and scalar params are in scope everywhere; break inside a loop is fine.
  Var t("t", dtype::Int32);
  Stmt body = loop(i, seq({store_a(i), let_stmt(t, add(m, n), store_a(t)), break_stmt()}));
  EXPECT_NO_THROW(verify(func_of(body)));
}

TEST_F(Verifier, VarUsedOutsideItsLoop) {
  expect_malformed(func_of(seq({loop(i, store_a(i)), store_a(i)})),
                   {"var 'i' is used outside the scope that binds it", "offending node (Var): i",
                    "in statement (BufferStore): A[i, 0] = 1.0f16"});
}

TEST_F(Verifier, VarUsedOutsideItsLetStmt) {
  Var t("t", dtype::Int32);
  expect_malformed(func_of(seq({let_stmt(t, add(n, int_imm(1)), evaluate(t)), evaluate(t)})),
                   {"var 't' is used outside the scope that binds it", "(Var): t"});
}

TEST_F(Verifier, LetVarUsedInItsOwnValue) {
  Var x("x", dtype::Int32);
  expect_malformed(func_of(evaluate(let(x, add(x, int_imm(1)), mul(x, int_imm(2))))),
                   {"var 'x' is used outside the scope that binds it", "(Evaluate)"});
}

TEST_F(Verifier, KernelVarUsedAfterTheKernel) {
  Var bx("bx", dtype::Int32);
  Stmt kernel = make_kernel_launch({bx}, {int_imm(4)}, {}, {}, store_a(bx));
  expect_malformed(func_of(seq({kernel, store_a(bx)})), {"var 'bx' is used outside the scope that binds it"});
}

TEST_F(Verifier, BufferUsedOutsideItsAllocate) {
  Buffer s = Buffer::make("S", dtype::Float32, {int_imm(4)}, Scope::Shared);
  Stmt alloc = allocate(s, buffer_store(s, float_imm(0), {int_imm(0)}));
  expect_malformed(func_of(seq({alloc, buffer_store(s, float_imm(1), {int_imm(1)})})),
                   {"buffer 'S' is used outside the Allocate that declares it", "(BufferStore): S[1] = 1.0"});
  // A load and a tile-op region are uses too.
  expect_malformed(func_of(seq({alloc, evaluate(buffer_load(s, {int_imm(0)}))})),
                   {"buffer 'S' is used outside", "offending node (BufferLoad): S[0]"});
  expect_malformed(func_of(tile_op(TileOpKind::Fill, {BufferRegion::full(s)}, {float_imm(0)}, {})),
                   {"buffer 'S' is used outside", "(TileOp): T.fill(S[0:4], 0.0)"});
}

TEST_F(Verifier, IndexCountDiffersFromBufferRank) {
  Stmt store = make_node<Stmt, BufferStoreNode>(a, float_imm(1.0, dtype::Float16), std::vector<Expr>{int_imm(0)});
  expect_malformed(func_of(store), {"buffer 'A' has 2 dimension(s) but is indexed with 1 index(es)", "(BufferStore)"});
  Expr load = make_node<Expr, BufferLoadNode>(dtype::Float16, a, std::vector<Expr>{int_imm(0), int_imm(0), int_imm(0)});
  expect_malformed(func_of(evaluate(load)), {"buffer 'A' has 2 dimension(s) but is indexed with 3 index(es)",
                                             "offending node (BufferLoad): A[0, 0, 0]"});
  BufferRegion one_range{a, {{int_imm(0), int_imm(4)}}};
  expect_malformed(func_of(tile_op(TileOpKind::Fill, {one_range}, {float_imm(0)}, {})),
                   {"region of buffer 'A' has 1 range(s) but the buffer has 2 dimension(s)", "(TileOp)"});
}

TEST_F(Verifier, NonIntegerIndex) {
  Stmt store = make_node<Stmt, BufferStoreNode>(a, float_imm(1.0, dtype::Float16),
                                                std::vector<Expr>{float_imm(0.0), int_imm(0)});
  expect_malformed(func_of(store), {"index 0.0 into buffer 'A' has type float32, expected an integer"});
  Stmt bool_index = make_node<Stmt, BufferStoreNode>(a, float_imm(1.0, dtype::Float16),
                                                     std::vector<Expr>{bool_imm(true), int_imm(0)});
  expect_malformed(func_of(bool_index), {"has type bool, expected an integer"});
}

TEST_F(Verifier, NonBoolConditions) {
  Stmt bad_if = make_node<Stmt, IfThenElseNode>(Expr(n), evaluate(int_imm(0)), Stmt());
  expect_malformed(func_of(bad_if),
                   {"If condition has type int32, expected bool", "offending node (IfThenElse): if n:"});
  Stmt bad_while = make_node<Stmt, WhileNode>(Expr(n), evaluate(int_imm(0)));
  expect_malformed(func_of(bad_while), {"While condition has type int32, expected bool", "(While)"});
}

TEST_F(Verifier, StoredValueTypeDiffersFromBuffer) {
  Stmt store = make_node<Stmt, BufferStoreNode>(a, float_imm(1.0), std::vector<Expr>{int_imm(0), int_imm(0)});
  expect_malformed(func_of(store), {"store of a float32 value into buffer 'A' of type float16", "(BufferStore)"});
  // Vector stores differ in lanes only: fine.
  Buffer v = Buffer::make("V", dtype::Float16, {int_imm(64)}, Scope::Global);
  Stmt vec = buffer_store(v, broadcast(float_imm(1.0, dtype::Float16), 4), {ramp(int_imm(0), int_imm(1), 4)});
  EXPECT_NO_THROW(verify(PrimFunc::make("ok", {{"V", v, {}}}, vec)));
}

TEST_F(Verifier, BreakAndContinueOutsideLoops) {
  expect_malformed(func_of(break_stmt()), {"Break outside a loop", "offending node (Break): break"});
  expect_malformed(func_of(seq({loop(i, store_a(i)), continue_stmt()})), {"Continue outside a loop", "(Continue)"});
  EXPECT_NO_THROW(verify(func_of(make_node<Stmt, WhileNode>(bool_imm(true), break_stmt()))));
  // A loop around the launch is on the host: the kernel cannot break out of it.
  Var bx("bx", dtype::Int32);
  expect_malformed(func_of(loop(i, make_kernel_launch({bx}, {int_imm(2)}, {}, {}, break_stmt()))),
                   {"Break outside a loop"});
}

TEST_F(Verifier, NestedKernelLaunch) {
  Var bx("bx", dtype::Int32), by("by", dtype::Int32), tx("tx", dtype::Int32);
  Stmt inner = make_kernel_launch({by}, {int_imm(2)}, {}, {}, store_a(by));
  Stmt outer = make_kernel_launch({bx}, {int_imm(2)}, {tx}, {32}, inner);
  expect_malformed(func_of(outer), {"KernelLaunch nested inside another KernelLaunch",
                                    "offending node (KernelLaunch): with T.Kernel(2, threads=[]) as (by):"});
}

TEST_F(Verifier, KernelLaunchVarCountsMatchDims) {
  Var bx("bx", dtype::Int32);
  Stmt k = make_kernel_launch({bx}, {int_imm(2), int_imm(3)}, {}, {}, evaluate(int_imm(0)));
  expect_malformed(func_of(k), {"KernelLaunch has 1 block var(s) for 2 grid dimension(s)"});
}

TEST_F(Verifier, LongOffendingStatementsAreClipped) {
  std::vector<Stmt> many;
  for (int k = 0; k < 200; ++k) many.push_back(store_a(int_imm(k)));
  Stmt bad = make_node<Stmt, IfThenElseNode>(Expr(n), seq(many), Stmt());
  try {
    verify(func_of(bad));
    ADD_FAILURE();
  } catch (const InternalError& e) {
    EXPECT_LT(std::string(e.what()).size(), 1000u);
    EXPECT_NE(std::string(e.what()).find(" ..."), std::string::npos);
  }
}

}  // namespace
}  // namespace tl
