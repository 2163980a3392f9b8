// Small, realistic kernels shared by the IR tests (structural equality, verifier),
// so each test starts from well-formed IR and changes one thing.
#pragma once

#include <memory>
#include <vector>

#include "ir/ir.h"

namespace tl::testing {

inline Stmt make_kernel_launch(std::vector<Var> block_vars, std::vector<Expr> grid, std::vector<Var> thread_vars,
                               std::vector<int64_t> threads, Stmt body) {
  return make_node<Stmt, KernelLaunchNode>(std::move(block_vars), std::move(grid), std::move(thread_vars),
                                           std::move(threads), std::move(body));
}

inline BufferRegion region(const Buffer& b, std::vector<Range> ranges) {
  return BufferRegion{b, std::move(ranges)};
}

// B[M, 64] = float16(float32(A[M, 64]) * scale), staged through shared memory and a
// fragment, one 32-row tile per block. With `shuffled`, every var, buffer and
// node is created in another order (with unrelated allocations in between), so
// that addresses and creation order differ while the IR is the same.
inline PrimFunc make_scale_kernel(bool shuffled = false) {
  std::vector<std::shared_ptr<int>> noise;
  auto make_noise = [&] {
    if (shuffled)
      for (int n = 0; n < 7; ++n) noise.push_back(std::make_shared<int>(n));
  };

  Var M, scale, bx, tx, k, i, j, i2, j2;
  Buffer A, B, S, F;
  if (shuffled) {
    j2 = Var("col", dtype::Int32);
    make_noise();
    i2 = Var("row", dtype::Int32);
    F = Buffer::make("frag", dtype::Float32, {int_imm(32), int_imm(64)}, Scope::Fragment);
    S = Buffer::make("smem", dtype::Float16, {int_imm(32), int_imm(64)}, Scope::Shared);
    make_noise();
    tx = Var("thread_x", dtype::Int32);
    bx = Var("block_x", dtype::Int32);
    j = Var("jj", dtype::Int32);
    i = Var("ii", dtype::Int32);
    k = Var("kk", dtype::Int32);
    scale = Var("alpha", dtype::Float32);
    M = Var("rows", dtype::Int32);
    make_noise();
    B = Buffer::make("Out", dtype::Float16, {M, int_imm(64)}, Scope::Global);
    A = Buffer::make("In", dtype::Float16, {M, int_imm(64)}, Scope::Global);
  } else {
    M = Var("M", dtype::Int32);
    scale = Var("scale", dtype::Float32);
    A = Buffer::make("A", dtype::Float16, {M, int_imm(64)}, Scope::Global);
    B = Buffer::make("B", dtype::Float16, {M, int_imm(64)}, Scope::Global);
    S = Buffer::make("S", dtype::Float16, {int_imm(32), int_imm(64)}, Scope::Shared);
    F = Buffer::make("F", dtype::Float32, {int_imm(32), int_imm(64)}, Scope::Fragment);
    bx = Var("bx", dtype::Int32);
    tx = Var("tx", dtype::Int32);
    k = Var("k", dtype::Int32);
    i = Var("i", dtype::Int32);
    j = Var("j", dtype::Int32);
    i2 = Var("i", dtype::Int32);
    j2 = Var("j", dtype::Int32);
  }

  Expr row0 = mul(bx, int_imm(32));
  Stmt load = for_loop(k, int_imm(0), int_imm(2), ForKind::Serial,
                       tile_op(TileOpKind::Copy,
                               {region(A, {{add(row0, mul(k, int_imm(16))), int_imm(16)}, {int_imm(0), int_imm(64)}}),
                                region(S, {{mul(k, int_imm(16)), int_imm(16)}, {int_imm(0), int_imm(64)}})},
                               {}, {}),
                       Attrs{{"num_stages", int64_t(2)}});
  Stmt compute = for_loop(i, int_imm(0), int_imm(32), ForKind::Parallel,
                          for_loop(j, int_imm(0), int_imm(64), ForKind::Parallel,
                                   buffer_store(F, mul(cast(dtype::Float32, buffer_load(S, {i, j})), scale), {i, j})));
  Stmt store = for_loop(i2, int_imm(0), int_imm(32), ForKind::Parallel,
                        for_loop(j2, int_imm(0), int_imm(64), ForKind::Parallel,
                                 buffer_store(B, cast(dtype::Float16, buffer_load(F, {i2, j2})), {add(row0, i2), j2})));
  Stmt body = make_kernel_launch({bx}, {ceildiv(M, int_imm(32))}, {tx}, {128},
                                 allocate(S, allocate(F, seq({load, compute, store}))));
  std::vector<Param> params = {{A->name, A, {}}, {B->name, B, {}}, {scale.name(), {}, scale}};
  return PrimFunc::make("scale_kernel", std::move(params), body);
}

}  // namespace tl::testing
