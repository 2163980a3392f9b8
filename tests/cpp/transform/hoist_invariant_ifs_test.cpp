// Tests of hoist_invariant_ifs: `for k: if c: S` becomes `if c: for k: S` when c is the
// same in every iteration, and stays as it was where c reads the loop's variable, a
// let of the loop, a buffer the loop writes, or where the loop is parallel or may run
// no iteration while c reads memory.
#include <gtest/gtest.h>

#include "../ir/kernel_builders.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "transform/hoist_invariant_ifs.h"

namespace tl {
namespace {

using testing::make_kernel_launch;

struct Loop {
  ForKind kind = ForKind::Unrolled;
  Expr extent = int_imm(4);
  bool cond_reads_k = false;    // c: k < 2 (varies)
  bool cond_reads_let = false;  // c: j < 2 with j = k + tx (varies)
  bool body_writes_c = false;   // the body stores into the buffer c reads
  bool cond_reads_memory = true;
};

// B[k] = A[k] for k in [0, extent) under `if c`, c = (C[0] >= 0) or (tx < 64); a let
// j = k + tx first.
PrimFunc kernel(const Loop& l) {
  Buffer A = Buffer::make("A", dtype::Float32, {int_imm(4)}, Scope::Local);
  Buffer B = Buffer::make("B", dtype::Float32, {int_imm(4)}, Scope::Local);
  Buffer C = Buffer::make("C", dtype::Float32, {int_imm(1)}, Scope::Local);
  Buffer O = Buffer::make("O", dtype::Float32, {int_imm(4)}, Scope::Global);
  Var tx("tx", dtype::Int32), k("k", dtype::Int32), j("j", dtype::Int32);
  Expr cond =
      l.cond_reads_memory ? ge(buffer_load(C, {int_imm(0)}), float_imm(0.0, dtype::Float32)) : lt(tx, int_imm(64));
  if (l.cond_reads_k) cond = lt(k, int_imm(2));
  if (l.cond_reads_let) cond = lt(j, int_imm(2));
  Stmt then = buffer_store(B, buffer_load(A, {k}), {k});
  if (l.body_writes_c) then = seq({then, buffer_store(C, float_imm(-1.0, dtype::Float32), {int_imm(0)})});
  Stmt loop = for_loop(k, int_imm(0), l.extent, l.kind, let_stmt(j, add(k, tx), if_then_else(cond, then)));
  Stmt body = seq({loop, buffer_store(O, buffer_load(B, {tx}), {tx})});
  for (const Buffer& b : {A, B, C}) body = allocate(b, body);
  Var bx("bx", dtype::Int32);
  Stmt launch = make_kernel_launch({bx}, {int_imm(1)}, {tx}, {4}, body);
  return PrimFunc::make("main", {{"O", O, Var()}}, launch);
}

// Whether the printed function tests its condition before (outside) its loop.
bool hoisted(const PrimFunc& f) {
  std::string out = to_string(f);
  return out.find("if (") < out.find("for k");
}

TEST(HoistInvariantIfsTest, AnInvariantConditionGoesAroundTheLoop) {
  for (ForKind kind : {ForKind::Unrolled, ForKind::Serial, ForKind::Vectorized}) {
    Loop l;
    l.kind = kind;
    PrimFunc before = kernel(l);
    ASSERT_FALSE(hoisted(before)) << to_string(before);
    PrimFunc after = hoist_invariant_ifs(before);
    EXPECT_TRUE(hoisted(after)) << to_string(after);
    // the loop's let stays inside it, with the body
    std::string out = to_string(after);
    EXPECT_LT(out.find("for k"), out.find("j = ")) << out;
  }
  Loop no_loads;
  no_loads.cond_reads_memory = false;
  no_loads.extent = Var("n", dtype::Int32);  // may be empty: fine, c reads no memory
  EXPECT_TRUE(hoisted(hoist_invariant_ifs(kernel(no_loads))));
}

TEST(HoistInvariantIfsTest, WhatCouldChangeMeaningIsLeftAlone) {
  Loop reads_k, reads_let, writes_c, parallel, maybe_empty;
  reads_k.cond_reads_k = true;
  reads_let.cond_reads_let = true;
  writes_c.body_writes_c = true;
  parallel.kind = ForKind::Parallel;
  maybe_empty.extent = Var("n", dtype::Int32);
  for (const Loop& l : {reads_k, reads_let, writes_c, parallel, maybe_empty}) {
    PrimFunc f = kernel(l);
    EXPECT_EQ(to_string(hoist_invariant_ifs(f)), to_string(f));
  }
}

}  // namespace
}  // namespace tl
