// msl_to_emulated_cpp: which lines it rewrites and which it keeps, and a kernel
// in the generated style built the way the runtime builds emulated Metal (host
// compiler, -include device/emu/metal_emu.h) and run against a reference.
#include "driver/metal_emu_source.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "driver/cpu/host_compiler.h"
#include "driver/device_dir.h"

namespace tl {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    size_t end = s.find('\n', pos);
    if (end == std::string::npos) end = s.size();
    out.push_back(s.substr(pos, end - pos));
    pos = end + 1;
  }
  return out;
}

TEST(MetalEmuSource, RewritesThreadgroupDeclarationsOnly) {
  const std::string msl =
      "  threadgroup half A_shared[2048];\n"
      "threadgroup float4 red[4][8]; // scratch\n"
      "    threadgroup atomic_int counter;\r\n"
      "  threadgroup half* A = (threadgroup half*)buf;\n"
      "  threadgroup float& r = red[0][0];\n"
      "  threadgroup_barrier(mem_flags::mem_threadgroup);\n"
      "  threadgroup float x[4] = {0, 1, 2, 3};\n"
      "  // threadgroup float y[4];\n"
      "  threadgroupish float z[4];\n"
      "  threadgroup [4];";
  std::vector<std::string> in = lines_of(msl), out = lines_of(msl_to_emulated_cpp(msl));
  ASSERT_EQ(out.size(), in.size());
  EXPECT_EQ(out[0], "  alignas(16) static thread_local half A_shared[2048];");
  EXPECT_EQ(out[1], "alignas(16) static thread_local float4 red[4][8]; // scratch");
  EXPECT_EQ(out[2], "    alignas(16) static thread_local atomic_int counter;\r");
  for (size_t i = 3; i < in.size(); ++i) EXPECT_EQ(out[i], in[i]) << "line " << i;
}

TEST(MetalEmuSource, CommentsOutMetalIncludesOnly) {
  const std::string msl =
      "#include <metal_stdlib>\n"
      "# include <metal_simdgroup>\n"
      "#include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>\n"
      "#include <cstdint>\n"
      "#include \"metal_stdlib\"\n";
  std::vector<std::string> out = lines_of(msl_to_emulated_cpp(msl));
  ASSERT_EQ(out.size(), 6u);
  EXPECT_EQ(out[0], "// (provided by metal_emu.h) #include <metal_stdlib>");
  EXPECT_EQ(out[1], "// (provided by metal_emu.h) # include <metal_simdgroup>");
  EXPECT_EQ(out[2], "// (provided by metal_emu.h) #include <MetalPerformancePrimitives/MetalPerformancePrimitives.h>");
  EXPECT_EQ(out[3], "#include <cstdint>");
  EXPECT_EQ(out[4], "#include \"metal_stdlib\"");
}

// Per threadgroup of 96 threads: Y[i] = X[i] * arg.scale + (sum of the group's X),
// the sum through simd_sum and a threadgroup array, in half precision on the way in.
constexpr const char* kKernel = R"MSL(#include <metal_stdlib>
using namespace metal;

struct group_sum_kernel_args_t {
  float scale;
};

[[kernel, max_total_threads_per_threadgroup(96)]] void group_sum_kernel(
    const device half* __restrict X [[buffer(0)]], device float* __restrict Y [[buffer(1)]],
    constant group_sum_kernel_args_t& arg [[buffer(2)]], uint3 blockIdx [[threadgroup_position_in_grid]],
    uint3 threadIdx [[thread_position_in_threadgroup]], uint simd_group_id [[simdgroup_index_in_threadgroup]]) {
  threadgroup float partial[3];
  int i = ((int)blockIdx.x) * 96 + ((int)threadIdx.x);
  float x = ((float)X[i]);
  float s = simd_sum(x);
  if ((threadIdx.x % 32) == 0) {
    partial[simd_group_id] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  Y[i] = (x * arg.scale) + ((partial[0] + partial[1]) + partial[2]);
}

#ifdef TL_EMULATE
extern "C" void tl_emu_group_sum_kernel(const ::tl::emu::Arg* args, int64_t bx, int64_t by, int64_t bz) {
  ::tl::emu::run_threadgroup(bx, by, bz, 96, 1, 1, [&](uint3 tl_group, uint3 tl_thread, uint tl_simdgroup) {
    group_sum_kernel_args_t tl_args{float(args[2].f)};
    group_sum_kernel(static_cast<device half*>(args[0].ptr), static_cast<device float*>(args[1].ptr), tl_args,
                     tl_group, tl_thread, tl_simdgroup);
  });
}
#endif
)MSL";

uint16_t to_half_bits(float f) {  // normal range only, round to nearest even
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t rounded = x + 0xfffu + ((x >> 13) & 1u);
  return uint16_t(((x >> 16) & 0x8000u) | (((rounded & 0x7fffffffu) - (112u << 23)) >> 13));
}
float from_half_bits(uint16_t h) {
  uint32_t x = (uint32_t(h & 0x8000u) << 16) | ((uint32_t(h & 0x7fffu) + (112u << 10)) << 13);
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

TEST(MetalEmuSource, GeneratedStyleKernelRunsOnTheCpu) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("tl_metal_emu_" + std::to_string(getpid()));
  fs::create_directories(dir);
  std::ofstream(dir / "kernel.cpp") << msl_to_emulated_cpp(kKernel);
  compile_shared_library(
      (dir / "kernel.cpp").string(), (dir / "kernel.so").string(),
      {"-x", "c++", "-std=c++20", "-fno-strict-aliasing", "-include", device_include_dir() + "/emu/metal_emu.h"});
  void* lib = dlopen((dir / "kernel.so").c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lib, nullptr) << dlerror();
  union Arg {
    void* ptr;
    int64_t i;
    double f;
  };
  using Entry = void (*)(const Arg*, int64_t, int64_t, int64_t);
  auto entry = reinterpret_cast<Entry>(dlsym(lib, "tl_emu_group_sum_kernel"));
  ASSERT_NE(entry, nullptr);

  constexpr int kGroups = 3, kThreads = 96;
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> dist(0.5f, 2.0f);
  std::vector<uint16_t> x(kGroups * kThreads);
  for (uint16_t& v : x) v = to_half_bits(gen() % 2 ? dist(gen) : -dist(gen));
  std::vector<float> y(x.size(), 0.0f);
  Arg args[3];
  args[0].ptr = x.data();
  args[1].ptr = y.data();
  args[2].f = 0.75;
  for (int g = 0; g < kGroups; ++g) entry(args, g, 0, 0);
  for (int g = 0; g < kGroups; ++g) {
    double sum = 0;
    for (int t = 0; t < kThreads; ++t) sum += from_half_bits(x[g * kThreads + t]);
    for (int t = 0; t < kThreads; ++t) {
      const int i = g * kThreads + t;
      EXPECT_NEAR(y[i], from_half_bits(x[i]) * 0.75 + sum, 1e-4) << "element " << i;
    }
  }
  dlclose(lib);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tl
