// A kernel compiled for CUDA and launched from C++ on device memory and a stream of
// the program's own: y = alpha * x + y over n float32 elements. Like the library,
// the program loads the CUDA driver at run time (dlopen of libcuda), so it builds and
// compiles its kernel (NVRTC) on machines without a GPU; there it says so and exits
// with 77, the code CTest and the test command read as "skipped".
//
//   cuda_launch            (needs NVRTC, libnvrtc.so, on the loader path)
#include <dlfcn.h>

#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "tl/tl.h"

namespace {

constexpr int kNoGpu = 77;

// The few driver entry points the program calls, with the driver's ABI (cuda.h's
// CUdeviceptr is an unsigned 64-bit integer, CUresult an int, 0 on success).
struct Driver {
  using CUdeviceptr = unsigned long long;
  int (*cuInit)(unsigned);
  int (*cuDeviceGetCount)(int*);
  int (*cuDeviceGet)(int*, int);
  int (*cuDevicePrimaryCtxRetain)(void**, int);
  int (*cuCtxSetCurrent)(void*);
  int (*cuMemAlloc)(CUdeviceptr*, size_t);
  int (*cuMemFree)(CUdeviceptr);
  int (*cuMemcpyHtoD)(CUdeviceptr, const void*, size_t);
  int (*cuMemcpyDtoH)(void*, CUdeviceptr, size_t);
  int (*cuStreamCreate)(void**, unsigned);
  int (*cuStreamSynchronize)(void*);
  int (*cuStreamDestroy)(void*);
};

template <class F>
bool load(void* lib, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(lib, name));
  return fn != nullptr;
}

// The driver, or an empty string saying why there is none usable here.
std::string open_driver(Driver& d) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return "the CUDA driver (libcuda.so.1) is not installed";
  bool ok =
      load(lib, d.cuInit, "cuInit") && load(lib, d.cuDeviceGetCount, "cuDeviceGetCount") &&
      load(lib, d.cuDeviceGet, "cuDeviceGet") && load(lib, d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
      load(lib, d.cuCtxSetCurrent, "cuCtxSetCurrent") && load(lib, d.cuMemAlloc, "cuMemAlloc_v2") &&
      load(lib, d.cuMemFree, "cuMemFree_v2") && load(lib, d.cuMemcpyHtoD, "cuMemcpyHtoD_v2") &&
      load(lib, d.cuMemcpyDtoH, "cuMemcpyDtoH_v2") && load(lib, d.cuStreamCreate, "cuStreamCreate") &&
      load(lib, d.cuStreamSynchronize, "cuStreamSynchronize") && load(lib, d.cuStreamDestroy, "cuStreamDestroy_v2");
  if (!ok) return "the CUDA driver lacks an entry point this program calls";
  int count = 0;
  if (d.cuInit(0) != 0 || d.cuDeviceGetCount(&count) != 0 || count == 0) return "no CUDA GPU answers";
  return "";
}

void check(int result, const char* what) {
  if (result != 0) throw std::runtime_error(std::string(what) + " failed: CUresult " + std::to_string(result));
}

tl::PrimFunc axpy() {
  using namespace tl;
  FunctionBuilder fb("axpy");
  Var n = fb.dynamic_var("n");
  Var alpha = fb.scalar_param("alpha", dtype::Float32);
  Buffer x = fb.tensor_param("x", {n}, dtype::Float32);
  Buffer y = fb.tensor_param("y", {n}, dtype::Float32);
  fb.kernel({floordiv(n + 255, int_imm(256))}, {256}, [&](KernelVars kv) {
    fb.parallel({int_imm(256)}, [&](std::vector<Var> iv) {
      Expr i = kv.blocks[0] * 256 + iv[0];
      fb.begin_if(i < n);
      fb.store(y, {i}, alpha * buffer_load(x, {i}) + buffer_load(y, {i}));
      fb.end_if();
    });
  });
  return fb.finish();
}

int run() {
  // "cuda": the present GPU's arch, or sm_80 where there is none.
  tl::CompileOptions opt;
  opt.target = tl::Target::parse("cuda");
  std::shared_ptr<tl::Kernel> kernel = tl::compile(axpy(), opt);
  std::printf("compiled kernel 'axpy' for %s (%zu bytes of CUDA source)\n", kernel->target().str().c_str(),
              kernel->source().size());

  Driver d{};
  std::string missing = open_driver(d);
  if (!missing.empty()) {
    std::printf(
        "cuda_launch: %s, so the kernel is not launched here; run this program on a machine with an "
        "NVIDIA GPU\n",
        missing.c_str());
    return kNoGpu;
  }
  int device = 0;
  void* context = nullptr;
  check(d.cuDeviceGet(&device, 0), "cuDeviceGet");
  check(d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
  check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");

  const int64_t n = 1000003;  // not a multiple of the block: the last block's guard
  const float alpha = 1.75f;
  std::mt19937 rng(0);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> x(n), y(n), out(n);
  for (auto& v : x) v = dist(rng);
  for (auto& v : y) v = dist(rng);
  const size_t bytes = size_t(n) * sizeof(float);
  Driver::CUdeviceptr dx = 0, dy = 0;
  void* stream = nullptr;
  check(d.cuMemAlloc(&dx, bytes), "cuMemAlloc");
  check(d.cuMemAlloc(&dy, bytes), "cuMemAlloc");
  check(d.cuStreamCreate(&stream, 0), "cuStreamCreate");
  check(d.cuMemcpyHtoD(dx, x.data(), bytes), "cuMemcpyHtoD");
  check(d.cuMemcpyHtoD(dy, y.data(), bytes), "cuMemcpyHtoD");

  // Device pointers: each tensor says it lives on CUDA device 0, which the runtime
  // checks before it launches on `stream`.
  std::vector<int64_t> shape{n};
  auto tensor = [&](Driver::CUdeviceptr p) {
    tl::ArgValue v;
    v.kind = tl::ArgValue::Kind::Tensor;
    v.tensor.data = reinterpret_cast<void*>(p);
    v.tensor.dtype = tl::dtype::Float32;
    v.tensor.ndim = 1;
    v.tensor.shape = shape.data();
    v.tensor.device_type = int32_t(tl::DeviceType::CUDA);
    v.tensor.device_id = 0;
    return v;
  };
  tl::ArgValue a;
  a.kind = tl::ArgValue::Kind::Float;
  a.f = alpha;
  kernel->call({a, tensor(dx), tensor(dy)}, stream);
  check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
  check(d.cuMemcpyDtoH(out.data(), dy, bytes), "cuMemcpyDtoH");
  d.cuStreamDestroy(stream);
  d.cuMemFree(dx);
  d.cuMemFree(dy);

  double max_err = 0;
  for (int64_t i = 0; i < n; ++i)
    max_err = std::max(max_err, std::fabs(double(out[i]) - (double(alpha) * x[i] + double(y[i]))));
  std::printf("axpy of %lld elements on the GPU: max abs error %.2e\n", (long long)n, max_err);
  if (max_err > 1e-5) {
    std::printf("FAILED\n");
    return 1;
  }
  std::printf("OK\n");
  return 0;
}

}  // namespace

int main() {
  try {
    return run();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_launch: %s\n", e.what());
    return 1;
  }
}
