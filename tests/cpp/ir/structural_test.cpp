// Structural equality and hashing: alpha-equivalence of bound vars and buffers,
// identity of free vars, sensitivity to every field, and hashes that depend on
// neither addresses nor construction order.
#include "ir/structural.h"

#include <gtest/gtest.h>

#include <cmath>

#include "ir/printer.h"
#include "kernel_builders.h"

namespace tl {
namespace {

using testing::make_scale_kernel;

Buffer vec_buffer(const std::string& name, DataType t = dtype::Float32) {
  return Buffer::make(name, t, {int_imm(16)}, Scope::Global);
}

// for <v> in [0, 16): A[v] = A[v] + 1
Stmt increment_loop(const Buffer& a, const Var& v, ForKind kind = ForKind::Serial, Attrs ann = {}) {
  return for_loop(v, int_imm(0), int_imm(16), kind, buffer_store(a, add(buffer_load(a, {v}), float_imm(1.0f)), {v}),
                  std::move(ann));
}

void expect_equal(const Stmt& a, const Stmt& b) {
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_TRUE(structural_equal(b, a));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}

void expect_unequal(const Expr& a, const Expr& b) {
  EXPECT_FALSE(structural_equal(a, b)) << to_string(a) << " vs " << to_string(b);
  EXPECT_FALSE(structural_equal(b, a));
  EXPECT_NE(structural_hash(a), structural_hash(b));
}

TEST(Structural, AlphaEquivalentLoopsAreEqualAndHashEqual) {
  Buffer a = vec_buffer("A");
  Stmt s1 = increment_loop(a, Var("i", dtype::Int32));
  Stmt s2 = increment_loop(a, Var("j", dtype::Int32));
  expect_equal(s1, s2);
  expect_equal(s1, s1);
}

TEST(Structural, NestedLoopsMatchVarsByBindingSite) {
  Buffer a = Buffer::make("A", dtype::Float32, {int_imm(4), int_imm(4)}, Scope::Global);
  auto nest = [&](bool transpose) {
    Var i("i", dtype::Int32), j("j", dtype::Int32);
    Expr load = transpose ? buffer_load(a, {j, i}) : buffer_load(a, {i, j});
    return for_loop(i, int_imm(0), int_imm(4), ForKind::Serial,
                    for_loop(j, int_imm(0), int_imm(4), ForKind::Serial, evaluate(load)));
  };
  expect_equal(nest(false), nest(false));
  EXPECT_FALSE(structural_equal(nest(false), nest(true)));
  EXPECT_NE(structural_hash(nest(false)), structural_hash(nest(true)));
}

TEST(Structural, ShadowingOnOneSideIsSeen) {
  Buffer a = vec_buffer("A");
  Var x1("x", dtype::Int32), x2("x", dtype::Int32), y("y", dtype::Int32);
  auto two_loops = [](const Var& outer, const Var& inner, Stmt body) {
    return for_loop(outer, int_imm(0), int_imm(4), ForKind::Serial,
                    for_loop(inner, int_imm(0), int_imm(4), ForKind::Serial, std::move(body)));
  };
  // Left reads the outer loop var; right rebinds y and so reads the inner one.
  Stmt lhs = two_loops(x1, x2, evaluate(buffer_load(a, {x1})));
  Stmt rhs = two_loops(y, y, evaluate(buffer_load(a, {y})));
  EXPECT_FALSE(structural_equal(lhs, rhs));
  EXPECT_FALSE(structural_equal(rhs, lhs));
  EXPECT_NE(structural_hash(lhs), structural_hash(rhs));
  expect_equal(two_loops(x1, x2, evaluate(buffer_load(a, {x2}))), rhs);
}

TEST(Structural, LetBindsItsVar) {
  Var x("x", dtype::Int32), y("y", dtype::Int32), n("n", dtype::Int32);
  Expr e1 = let(x, add(n, int_imm(1)), mul(x, x));
  Expr e2 = let(y, add(n, int_imm(1)), mul(y, y));
  EXPECT_TRUE(structural_equal(e1, e2));
  EXPECT_EQ(structural_hash(e1), structural_hash(e2));
  // The value is outside the binding: `let y = y + 1` refers to a free y.
  Expr e3 = let(y, add(y, int_imm(1)), mul(y, y));
  EXPECT_FALSE(structural_equal(e1, e3));
}

TEST(Structural, FreeVarsCompareByIdentity) {
  Var x1("x", dtype::Int32), x2("x", dtype::Int32);
  EXPECT_TRUE(structural_equal(add(x1, int_imm(1)), add(x1, int_imm(1))));
  EXPECT_FALSE(structural_equal(add(x1, int_imm(1)), add(x2, int_imm(1))));
  // A free var hashes by name and dtype, so same-named free vars hash alike.
  EXPECT_EQ(structural_hash(Expr(x1)), structural_hash(Expr(x2)));
  EXPECT_NE(structural_hash(Expr(x1)), structural_hash(Expr(Var("y", dtype::Int32))));
}

TEST(Structural, BoundVarDoesNotMatchFreeVar) {
  Buffer a = vec_buffer("A");
  Var i("i", dtype::Int32), j("j", dtype::Int32);
  Stmt uses_bound = for_loop(j, int_imm(0), int_imm(16), ForKind::Serial, buffer_store(a, float_imm(0), {j}));
  Stmt uses_free = for_loop(j, int_imm(0), int_imm(16), ForKind::Serial, buffer_store(a, float_imm(0), {i}));
  EXPECT_FALSE(structural_equal(uses_bound, uses_free));
  EXPECT_FALSE(structural_equal(uses_free, uses_bound));
  EXPECT_NE(structural_hash(uses_bound), structural_hash(uses_free));
}

TEST(Structural, DifferentConstantsDtypesAndOpsAreUnequal) {
  Var x("x", dtype::Int32);
  expect_unequal(int_imm(1), int_imm(2));
  expect_unequal(int_imm(1), int_imm(1, dtype::Int64));
  expect_unequal(float_imm(1.0), float_imm(1.0, dtype::Float16));
  expect_unequal(float_imm(0.0), float_imm(-0.0));
  expect_unequal(add(x, int_imm(1)), sub(x, int_imm(1)));
  expect_unequal(floordiv(x, int_imm(2)), div(x, int_imm(2)));
  expect_unequal(cast(dtype::Float16, x), cast(dtype::BFloat16, x));
  expect_unequal(cast(dtype::Float32, x), reinterpret(dtype::Float32, x));
  expect_unequal(call(Intrinsic::Exp, {cast(dtype::Float32, x)}), call(Intrinsic::Log, {cast(dtype::Float32, x)}));
  expect_unequal(string_imm("a"), string_imm("b"));
  expect_unequal(broadcast(x, 4), broadcast(x, 8));
  expect_unequal(Expr(Var("x", dtype::Int32)), Expr(Var("x", dtype::Int64)));
}

TEST(Structural, NanEqualsItself) {
  Expr nan = float_imm(std::nan(""));
  EXPECT_TRUE(structural_equal(nan, float_imm(std::nan(""))));
  EXPECT_EQ(structural_hash(nan), structural_hash(float_imm(std::nan(""))));
}

TEST(Structural, StatementFieldsMatter) {
  Buffer a = vec_buffer("A");
  Var i("i", dtype::Int32);
  Stmt base = increment_loop(a, i);
  auto differ = [&](const Stmt& other) {
    EXPECT_FALSE(structural_equal(base, other)) << to_string(other);
    EXPECT_NE(structural_hash(base), structural_hash(other)) << to_string(other);
  };
  differ(increment_loop(a, i, ForKind::Parallel));
  differ(increment_loop(a, i, ForKind::Serial, {{"num_stages", int64_t(2)}}));
  // Another free buffer of the same name and type: unequal, though it may hash alike.
  EXPECT_FALSE(structural_equal(base, increment_loop(vec_buffer("A"), i)));
  differ(increment_loop(a, Var("i", dtype::Int64)));
  differ(attr_stmt("pragma", int64_t(1), base));
  expect_equal(attr_stmt("pragma", std::string("x"), base), attr_stmt("pragma", std::string("x"), base));
  differ(barrier(BarrierKind::Threads));
  EXPECT_FALSE(structural_equal(barrier(BarrierKind::Threads), barrier(BarrierKind::Warp)));
  EXPECT_FALSE(structural_equal(break_stmt(), continue_stmt()));
}

// The thread block cluster of a launch is part of the kernel (and of its cache key).
TEST(Structural, KernelClusterMatters) {
  Buffer a = vec_buffer("A");
  auto launch = [&](std::vector<int64_t> cluster) {
    Var bx("bx", dtype::Int32), tx("tx", dtype::Int32);
    return make_node<Stmt, KernelLaunchNode>(std::vector<Var>{bx}, std::vector<Expr>{int_imm(4)}, std::vector<Var>{tx},
                                             std::vector<int64_t>{128}, buffer_store(a, float_imm(1.0f), {bx}),
                                             std::string(), std::move(cluster));
  };
  expect_equal(launch({2, 1, 1}), launch({2, 1, 1}));
  Stmt none = launch({}), two = launch({2, 1, 1}), four = launch({4, 1, 1});
  EXPECT_FALSE(structural_equal(none, two));
  EXPECT_FALSE(structural_equal(two, four));
  EXPECT_NE(structural_hash(none), structural_hash(two));
  EXPECT_NE(structural_hash(two), structural_hash(four));
}

TEST(Structural, AnnotationsCompareEntryWise) {
  Buffer a = vec_buffer("A");
  Var i("i", dtype::Int32);
  Attrs two{{"num_stages", int64_t(2)}, {"order", std::vector<int64_t>{0, 1}}};
  Attrs three{{"num_stages", int64_t(3)}, {"order", std::vector<int64_t>{0, 1}}};
  Attrs reordered{{"num_stages", int64_t(2)}, {"order", std::vector<int64_t>{1, 0}}};
  Attrs as_double{{"num_stages", 2.0}, {"order", std::vector<int64_t>{0, 1}}};
  Stmt base = increment_loop(a, i, ForKind::Serial, two);
  expect_equal(base, increment_loop(a, Var("k", dtype::Int32), ForKind::Serial, two));
  EXPECT_FALSE(structural_equal(base, increment_loop(a, i, ForKind::Serial, three)));
  EXPECT_FALSE(structural_equal(base, increment_loop(a, i, ForKind::Serial, reordered)));
  EXPECT_FALSE(structural_equal(base, increment_loop(a, i, ForKind::Serial, as_double)));
}

TEST(Structural, AllocatedBuffersMapByDefinition) {
  Var i("i", dtype::Int32);
  auto kernel = [&](Scope scope, int64_t size, bool swap_uses) {
    Buffer x = Buffer::make("x", dtype::Float32, {int_imm(size)}, scope);
    Buffer y = Buffer::make("y", dtype::Float32, {int_imm(size)}, scope);
    Stmt copy = swap_uses ? buffer_store(y, buffer_load(x, {i}), {i}) : buffer_store(x, buffer_load(y, {i}), {i});
    return allocate(x, allocate(y, copy));
  };
  expect_equal(kernel(Scope::Shared, 8, false), kernel(Scope::Shared, 8, false));
  EXPECT_FALSE(structural_equal(kernel(Scope::Shared, 8, false), kernel(Scope::Shared, 8, true)));
  EXPECT_FALSE(structural_equal(kernel(Scope::Shared, 8, false), kernel(Scope::Fragment, 8, false)));
  EXPECT_FALSE(structural_equal(kernel(Scope::Shared, 8, false), kernel(Scope::Shared, 4, false)));
  EXPECT_NE(structural_hash(kernel(Scope::Shared, 8, false)), structural_hash(kernel(Scope::Shared, 8, true)));
}

TEST(Structural, SameFunctionBuiltInAnotherOrderIsEqualAndHashesEqual) {
  PrimFunc f = make_scale_kernel(false);
  PrimFunc g = make_scale_kernel(true);
  EXPECT_TRUE(structural_equal(f, g));
  EXPECT_TRUE(structural_equal(g, f));
  EXPECT_EQ(structural_hash(f), structural_hash(g));
  EXPECT_EQ(structural_hash(f), structural_hash(make_scale_kernel(false)));
}

TEST(Structural, FunctionDifferencesAreSeen) {
  PrimFunc f = make_scale_kernel();
  // A different name, a changed body, a changed parameter shape.
  PrimFunc renamed = PrimFunc::make("other", f->params, f->body);
  EXPECT_FALSE(structural_equal(f, renamed));
  PrimFunc no_body = f.with_body(evaluate(int_imm(0)));
  EXPECT_FALSE(structural_equal(f, no_body));
  EXPECT_NE(structural_hash(f), structural_hash(no_body));
  std::vector<Param> params = f->params;
  const Buffer& a = params[0].buffer;
  params[0].buffer = Buffer::make("A", a->dtype, {a->shape[0], int_imm(128)}, Scope::Global);
  PrimFunc reshaped = PrimFunc::make(f->name, params, f->body);
  EXPECT_FALSE(structural_equal(f, reshaped));
  EXPECT_NE(structural_hash(f), structural_hash(reshaped));
}

TEST(Structural, SymbolicShapeVarsBindAtParameters) {
  auto func = [](bool same_dim) {
    Var m("m", dtype::Int32), n("n", dtype::Int32);
    Buffer a = Buffer::make("A", dtype::Float32, {m}, Scope::Global);
    Buffer b = Buffer::make("B", dtype::Float32, {same_dim ? m : n}, Scope::Global);
    Var i("i", dtype::Int32);
    Stmt body = for_loop(i, int_imm(0), m, ForKind::Serial, buffer_store(b, buffer_load(a, {i}), {i}));
    return PrimFunc::make("f", {{"A", a, {}}, {"B", b, {}}}, body);
  };
  EXPECT_TRUE(structural_equal(func(true), func(true)));
  EXPECT_EQ(structural_hash(func(true)), structural_hash(func(true)));
  EXPECT_TRUE(structural_equal(func(false), func(false)));
  EXPECT_FALSE(structural_equal(func(true), func(false)));
  EXPECT_NE(structural_hash(func(true)), structural_hash(func(false)));
}

TEST(Structural, SpansAreIgnored) {
  SourceSpan here{intern_file("kernel.py"), 12};
  Var x("x", dtype::Int32);
  Stmt a = evaluate(x, here);
  Stmt b = evaluate(x);
  expect_equal(a, b);
}

// The hash feeds on-disk keys: it must not change between runs or processes.
TEST(Structural, HashIsAFixedFunctionOfTheTree) {
  Buffer a = vec_buffer("A");
  uint64_t h = structural_hash(increment_loop(a, Var("i", dtype::Int32)));
  EXPECT_EQ(h, structural_hash(increment_loop(a, Var("q", dtype::Int32))));
  EXPECT_EQ(h, uint64_t(0x5ec061db85d2ce3eULL)) << std::hex << h;
}

}  // namespace
}  // namespace tl
