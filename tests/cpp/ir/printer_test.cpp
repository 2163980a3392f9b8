// The printer's output on a small but complete kernel: it is read by people in
// dumps and hashed into cache keys, so its exact text (including the suffixes
// that tell same-named vars apart) is pinned here.
#include "ir/printer.h"

#include <gtest/gtest.h>

#include "kernel_builders.h"

namespace tl {
namespace {

TEST(Printer, KernelReadsLikeTheDsl) {
  const char* expected = R"(@T.prim_func
def scale_kernel(A: T.Tensor((M, 64), "float16"), B: T.Tensor((M, 64), "float16"), scale: T.float32):
    with T.Kernel(T.floordiv(((M + 32) - 1), 32), threads=128) as (bx):
        tx, = T.get_thread_bindings()
        S = T.alloc_shared((32, 64), "float16", scope="shared")
        F = T.alloc_fragment((32, 64), "float32", scope="local.fragment")
        for k in T.Pipelined(2, num_stages=2):
            T.copy(A[((bx * 32) + (k * 16)):(((bx * 32) + (k * 16)) + 16), 0:64], S[(k * 16):((k * 16) + 16), 0:64])
        for i in T.Parallel(32):
            for j in T.Parallel(64):
                F[i, j] = (T.cast(S[i, j], "float32") * scale)
        for i_1 in T.Parallel(32):
            for j_1 in T.Parallel(64):
                B[((bx * 32) + i_1), j_1] = T.cast(F[i_1, j_1], "float16")
)";
  EXPECT_EQ(to_string(testing::make_scale_kernel()), expected);
}

TEST(Printer, SameNamedVarsGetSuffixesInOrderOfFirstUse) {
  Buffer a = Buffer::make("A", dtype::Int32, {int_imm(4)}, Scope::Global);
  Var first("i", dtype::Int32), second("i", dtype::Int32), literal("i_1", dtype::Int32);
  auto body = [&](const Var& v) { return buffer_store(a, v, {v}); };
  Stmt s = seq({for_loop(first, int_imm(0), int_imm(4), ForKind::Serial, body(first)),
                for_loop(second, int_imm(0), int_imm(4), ForKind::Serial, body(second)),
                for_loop(literal, int_imm(0), int_imm(4), ForKind::Unrolled, body(literal))});
  const char* expected = R"(for i in T.serial(4):
    A[i] = i
for i_1 in T.serial(4):
    A[i_1] = i_1
for i_1_1 in T.unroll(4):
    A[i_1_1] = i_1_1
)";
  EXPECT_EQ(to_string(s), expected);
  EXPECT_EQ(to_string(s), to_string(s));  // names do not leak from one print to the next
}

TEST(Printer, StoreAndAllocateOfLocalBuffers) {
  Buffer acc = Buffer::make("acc", dtype::Float32, {int_imm(8)}, Scope::Local);
  Var i("i", dtype::Int32);
  Stmt s = allocate(acc, for_loop(i, int_imm(1), int_imm(7), ForKind::Vectorized,
                                  buffer_store(acc, float_imm(0.5), {sub(i, int_imm(1))})));
  const char* expected = R"(acc = T.alloc_local((8,), "float32", scope="local")
for i in T.vectorized(1, 8):
    acc[(i - 1)] = 0.5
)";
  EXPECT_EQ(to_string(s), expected);
}

}  // namespace
}  // namespace tl
