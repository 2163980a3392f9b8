// A tile GEMM written with the C++ builder API, compiled for the CPU and checked
// against a plain triple loop. Built and run by the test command twice: in the
// build tree (ctest), and as an outside project against an installed, relocated
// prefix (examples/cpp/CMakeLists.txt, tests/python/test_cpp_package.py).
// `gemm --export DIR` also writes the compiled kernel to DIR, which load_and_run.cpp
// (linked only against the runtime library) loads and runs.
//
//   C[M, N] = A[M, K] @ B[K, N], float16 inputs, float32 accumulation,
//   128x128x32 tiles, M/N/K not multiples of the tile (tails are predicated).
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "tl/tl.h"
#include "tl/types.h"

namespace {

int run(const std::string& export_dir) {
  using namespace tl;
  const int64_t M = 300, N = 200, K = 100, BM = 64, BN = 64, BK = 32;

  FunctionBuilder fb("gemm");
  Buffer A = fb.tensor_param("A", {int_imm(M), int_imm(K)}, dtype::Float16);
  Buffer B = fb.tensor_param("B", {int_imm(K), int_imm(N)}, dtype::Float16);
  Buffer C = fb.tensor_param("C", {int_imm(M), int_imm(N)}, dtype::Float32);
  fb.kernel({int_imm((N + BN - 1) / BN), int_imm((M + BM - 1) / BM)}, {128}, [&](KernelVars kv) {
    Expr bx = kv.blocks[0], by = kv.blocks[1];
    Buffer As = fb.alloc("A_shared", {int_imm(BM), int_imm(BK)}, dtype::Float16, Scope::SharedDyn);
    Buffer Bs = fb.alloc("B_shared", {int_imm(BK), int_imm(BN)}, dtype::Float16, Scope::SharedDyn);
    Buffer Cl = fb.alloc("C_local", {int_imm(BM), int_imm(BN)}, dtype::Float32, Scope::Fragment);
    fb.fill(BufferRegion::full(Cl), float_imm(0));
    fb.pipelined(int_imm((K + BK - 1) / BK), 3, [&](Var k) {
      fb.copy({A, {by * BM, k * BK}, {}}, {As, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BK)}});
      fb.copy({B, {k * BK, bx * BN}, {}}, {Bs, {int_imm(0), int_imm(0)}, {int_imm(BK), int_imm(BN)}});
      fb.gemm(BufferRegion::full(As), BufferRegion::full(Bs), BufferRegion::full(Cl));
    });
    fb.copy({Cl, {int_imm(0), int_imm(0)}, {int_imm(BM), int_imm(BN)}}, {C, {by * BM, bx * BN}, {}});
  });
  PrimFunc f = fb.finish();
  std::printf("%s\n", to_string(f).c_str());

  CompileOptions opt;
  opt.target = Target::parse("cpu");
  std::shared_ptr<Kernel> kernel = compile(f, opt);
  std::printf("device headers: %s\n", device_include_dir().c_str());
  if (!export_dir.empty()) {
    export_kernel(*kernel, export_dir);
    std::printf("exported to %s\n", export_dir.c_str());
  }

  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<half_t> a(M * K), b(K * N);
  std::vector<float> c(M * N, -1), ref(M * N, 0);
  for (auto& x : a) x = half_t(dist(rng));
  for (auto& x : b) x = half_t(dist(rng));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) ref[i * N + j] += float(a[i * K + k]) * float(b[k * N + j]);

  auto tensor = [](void* data, DataType t, const std::vector<int64_t>& shape) {
    ArgValue v;
    v.kind = ArgValue::Kind::Tensor;
    v.tensor.data = data;
    v.tensor.dtype = t;
    v.tensor.ndim = int(shape.size());
    v.tensor.shape = shape.data();
    return v;
  };
  std::vector<int64_t> sa{M, K}, sb{K, N}, sc{M, N};
  kernel->call({tensor(a.data(), dtype::Float16, sa), tensor(b.data(), dtype::Float16, sb),
                tensor(c.data(), dtype::Float32, sc)});

  double max_err = 0;
  for (int64_t i = 0; i < M * N; ++i) max_err = std::max(max_err, double(std::fabs(c[i] - ref[i])));
  std::printf("gemm %lldx%lldx%lld on cpu: max abs error %.2e\n", (long long)M, (long long)N, (long long)K, max_err);
  if (max_err > 1e-3) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}

}  // namespace

// Every failure is an exception: a kernel mistake (tl::UserError), missing device
// headers (tl::DeviceDirError), a compiler bug (tl::InternalError).
int main(int argc, char** argv) {
  std::string export_dir;
  if (argc == 3 && std::strcmp(argv[1], "--export") == 0) {
    export_dir = argv[2];
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: gemm [--export DIR]\n");
    return 2;
  }
  try {
    return run(export_dir);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gemm: %s\n", e.what());
    return 1;
  }
}
