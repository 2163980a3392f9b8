// Tests of pair_lane_stores: two adjacent stores of a T.Ramp pair become one packed-pair
// call, and every store pair whose second half could read what the first wrote, that
// touches shared memory or that is not one op of loads stays as it was.
#include <gtest/gtest.h>

#include "../ir/kernel_builders.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "transform/pair_lane_stores.h"

namespace tl {
namespace {

using testing::make_kernel_launch;

// C[2 t + k] = op(A[2 t + k + a_shift], B[2 t + k]) for k = 0, 1, as two statements.
PrimFunc lanes(DataType t, BinaryOp op, Scope c_scope = Scope::Global, int64_t a_shift = 0, bool c_is_a = false) {
  Buffer A = Buffer::make("A", t, {int_imm(258)}, Scope::Global);
  Buffer B = Buffer::make("B", t, {int_imm(256)}, Scope::Global);
  Buffer C = c_is_a ? A : Buffer::make("C", t, {int_imm(256)}, c_scope);
  Var tx("tx", dtype::Int32);
  std::vector<Stmt> stores;
  for (int64_t k = 0; k < 2; ++k) {
    Expr i = add(mul(tx, int_imm(2)), int_imm(k));
    stores.push_back(buffer_store(C, binary(op, buffer_load(A, {add(i, int_imm(a_shift))}), buffer_load(B, {i})),
                                  {c_is_a ? add(i, int_imm(1)) : i}));
  }
  Stmt body = seq(stores);
  if (c_scope == Scope::Shared && !c_is_a) body = allocate(C, body);
  Var bx("bx", dtype::Int32);
  Stmt launch = make_kernel_launch({bx}, {int_imm(1)}, {tx}, {128}, body);
  std::vector<Param> params{{"A", A, Var()}, {"B", B, Var()}};
  if (c_scope == Scope::Global && !c_is_a) params.push_back({"C", C, Var()});
  return PrimFunc::make("main", params, launch);
}

std::string printed(const PrimFunc& f) {
  return to_string(f);
}

// D[2 t + k] = fma(A[2 t + k], B[2 t + k], C[2 t + k + c_shift]) for k = 0, 1 (T.fma2).
PrimFunc fma_lanes(DataType t, int64_t c_shift = 0) {
  Buffer A = Buffer::make("A", t, {int_imm(256)}, Scope::Global);
  Buffer B = Buffer::make("B", t, {int_imm(256)}, Scope::Global);
  Buffer C = Buffer::make("C", t, {int_imm(258)}, Scope::Global);
  Buffer D = Buffer::make("D", t, {int_imm(256)}, Scope::Global);
  Var tx("tx", dtype::Int32);
  std::vector<Stmt> stores;
  for (int64_t k = 0; k < 2; ++k) {
    Expr i = add(mul(tx, int_imm(2)), int_imm(k));
    Expr c = k == 1 && c_shift ? Expr(float_imm(1.0, t)) : buffer_load(C, {add(i, int_imm(c_shift))});
    stores.push_back(buffer_store(D, call(Intrinsic::Fma, {buffer_load(A, {i}), buffer_load(B, {i}), c}), {i}));
  }
  Var bx("bx", dtype::Int32);
  Stmt launch = make_kernel_launch({bx}, {int_imm(1)}, {tx}, {128}, seq(stores));
  return PrimFunc::make("main", {{"A", A, Var()}, {"B", B, Var()}, {"C", C, Var()}, {"D", D, Var()}}, launch);
}

TEST(PairLaneStoresTest, TwoLanesBecomeOneCall) {
  std::string out = printed(pair_lane_stores(lanes(dtype::Float16, BinaryOp::Add)));
  EXPECT_NE(out.find("tl::add2<tl::__half2>"), std::string::npos) << out;
  EXPECT_EQ(out.find("C[((tx * 2) + 1)]"), std::string::npos) << out;  // the second store is gone
  EXPECT_NE(printed(pair_lane_stores(lanes(dtype::BFloat16, BinaryOp::Max))).find("tl::max2<tl::__nv_bfloat162>"),
            std::string::npos);
  EXPECT_NE(printed(pair_lane_stores(lanes(dtype::Float32, BinaryOp::Mul))).find("tl::mul2<tl::float2>"),
            std::string::npos);
}

TEST(PairLaneStoresTest, FmaLanesBecomeOneCall) {
  std::string out = printed(pair_lane_stores(fma_lanes(dtype::Float16)));
  EXPECT_NE(out.find("tl::fma2<tl::__half2>"), std::string::npos) << out;
  EXPECT_NE(printed(pair_lane_stores(fma_lanes(dtype::BFloat16))).find("tl::fma2<tl::__nv_bfloat162>"),
            std::string::npos);
  // A lane whose addend is not the next element's load stays as it was.
  PrimFunc mixed = fma_lanes(dtype::Float16, 1);
  EXPECT_EQ(printed(pair_lane_stores(mixed)), printed(mixed));
}

TEST(PairLaneStoresTest, WhatCouldChangeMeaningIsLeftAlone) {
  for (const PrimFunc& f : {
           lanes(dtype::Int32, BinaryOp::Add),                                       // no float pair
           lanes(dtype::Float16, BinaryOp::Div),                                     // no pair function
           lanes(dtype::Float16, BinaryOp::Add, Scope::Shared),                      // the race detector's accesses
           lanes(dtype::Float16, BinaryOp::Add, Scope::Global, 0, /*c_is_a=*/true),  // lane 1 reads lane 0's store
       })
    EXPECT_EQ(printed(pair_lane_stores(f)), printed(f));
}

}  // namespace
}  // namespace tl
