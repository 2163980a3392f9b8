// Runs a kernel that another program compiled and exported, without compiling
// anything: this program links only the runtime library (tilelang_cpp::runtime),
// which holds no compiler. It loads the GEMM that `gemm --export DIR` wrote (or one
// with the same signature that Python's kernel.export_library(DIR) wrote: the format
// is the same), calls it on random float16 inputs and checks the result against a
// plain triple loop.
//
//   gemm --export /tmp/gemm_kernel && load_and_run /tmp/gemm_kernel
#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <vector>

#include "tl/runtime.h"
#include "tl/types.h"

namespace {

tl::ArgValue tensor(void* data, tl::DataType t, const std::vector<int64_t>& shape) {
  tl::ArgValue v;
  v.kind = tl::ArgValue::Kind::Tensor;
  v.tensor.data = data;
  v.tensor.dtype = t;
  v.tensor.ndim = int(shape.size());
  v.tensor.shape = shape.data();
  return v;
}

int run(const char* dir) {
  std::shared_ptr<tl::Kernel> kernel = tl::load_kernel(dir);
  const tl::KernelSignature& sig = kernel->signature();
  std::printf("loaded kernel '%s' for %s with %zu parameters\n", sig.name.c_str(), kernel->target().str().c_str(),
              sig.params.size());

  const int64_t M = 300, N = 200, K = 100;
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<tl::half_t> a(M * K), b(K * N);
  std::vector<float> c(M * N, -1), ref(M * N, 0);
  for (auto& x : a) x = tl::half_t(dist(rng));
  for (auto& x : b) x = tl::half_t(dist(rng));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t j = 0; j < N; ++j) ref[i * N + j] += float(a[i * K + k]) * float(b[k * N + j]);

  // The runtime checks each argument against the signature (dtype, rank, shape)
  // and names the parameter when one is wrong, as it does for a compiled kernel.
  std::vector<int64_t> sa{M, K}, sb{K, N}, sc{M, N};
  kernel->call({tensor(a.data(), tl::dtype::Float16, sa), tensor(b.data(), tl::dtype::Float16, sb),
                tensor(c.data(), tl::dtype::Float32, sc)});

  double max_err = 0;
  for (int64_t i = 0; i < M * N; ++i) max_err = std::max(max_err, double(std::fabs(c[i] - ref[i])));
  std::printf("loaded gemm %lldx%lldx%lld: max abs error %.2e\n", (long long)M, (long long)N, (long long)K, max_err);
  if (max_err > 1e-3) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}

}  // namespace

// A missing or damaged export, or arguments the kernel refuses, is a tl::UserError.
int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: load_and_run DIR (a kernel written by `gemm --export DIR`)\n");
    return 2;
  }
  try {
    return run(argv[1]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "load_and_run: %s\n", e.what());
    return 1;
  }
}
