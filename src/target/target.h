// Target: what the code is generated for, and the capabilities passes may ask
// about. Target names are parsed here and tested only in pipeline.cpp, codegen/
// and device/ (DESIGN §4).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace tl {

enum class TargetKind { CPU, CUDA, Metal };

// The oldest CUDA compute capability the code generator supports (sm_80).
constexpr int kMinSmVersion = 75;

// Hardware constants of the CUDA targets that passes plan with, named once.
// Hopper's warpgroup: the four warps that issue a wgmma together, and the producer of
// a warp-specialized pipeline.
constexpr int64_t kWarpGroupThreads = 128;
// The most threads of a CUDA block (all dimensions together).
constexpr int64_t kMaxThreadsPerBlock = 1024;
// TMA's largest box extent along one dimension (cuTensorMapEncodeTiled's boxDim).
constexpr int64_t kTmaMaxBox = 256;
// The register file of one SM, in 32-bit registers: the pool setmaxnreg redistributes.
constexpr int64_t kRegistersPerSm = 65536;

struct Target {
  TargetKind kind = TargetKind::CPU;
  std::string arch;            // "sm_90a" for CUDA; empty for the CPU
  std::set<std::string> keys;  // e.g. "metal4"
  // Run the target's exact source on the CPU through device/emu shims ("-emulate").
  bool emulated = false;

  // Parses "cpu", "c", "llvm", "cuda", "cuda -arch=sm_90a", "metal", "metal -keys=metal4",
  // or the dict form as JSON ({"kind": "metal", "keys": ["metal4"]}). Throws a
  // UserError on others.
  static Target parse(const std::string& text);
  std::string str() const;  // canonical form, part of the cache key

  int warp_size() const { return kind == TargetKind::Metal ? 32 : kind == TargetKind::CUDA ? 32 : 1; }
  // One executor runs a whole thread block (fragments are block-wide arrays).
  bool runs_blocks_serially() const { return kind == TargetKind::CPU; }
  // The compute capability in arch "sm_XY[a]" as XY (0 when not a CUDA arch).
  int sm_version() const {
    if (kind != TargetKind::CUDA || arch.rfind("sm_", 0) != 0) return 0;
    int v = 0;
    for (size_t i = 3; i < arch.size() && arch[i] >= '0' && arch[i] <= '9'; ++i) v = v * 10 + (arch[i] - '0');
    return v;
  }
  // mma.sync.aligned.m16n8k16 with f16/bf16 operands and f32 accumulators, tf32, int8
  // and (sm_89) fp8 (sm_80+).
  bool has_mma_sync() const { return sm_version() >= 80; }
  // Tensor cores for float16 operands into float32 alone: sm_75 (Turing) has
  // mma.sync.m16n8k8 for them (two make one m16n8k16) and ldmatrix, but no bfloat16,
  // tf32 or 16-deep integer mma, and no cp.async.
  bool has_mma_sync_f16() const { return sm_version() >= 75; }
  // wgmma.mma_async (warpgroup tensor-core gemms from shared-memory descriptors): sm_90a only.
  bool has_wgmma() const { return kind == TargetKind::CUDA && arch == "sm_90a"; }
  bool has_tma() const { return sm_version() >= 90; }  // cp.async.bulk.tensor and mbarrier transactions
  // The alignment in bytes generated code assumes of a tensor argument's data
  // pointer (0: none): CUDA lowering picks 16-byte vector copies (copy_vec, cp.async,
  // vectorized loops) from offsets relative to it, and a GPU faults on a misaligned
  // vector access. The runtime refuses arguments that break it.
  int tensor_base_alignment() const { return kind == TargetKind::CUDA ? 16 : 0; }
  // The most shared memory one block may have (bytes, with the opt-in above 48 KB
  // the runtime makes), by compute capability; 0 when not a CUDA arch.
  int64_t max_shared_memory_per_block() const {
    int v = sm_version();
    if (v == 0) return 0;
    if (v == 90 || v == 100 || v == 103) return int64_t{227} * 1024;
    if (v == 80 || v == 87) return int64_t{163} * 1024;
    if (v == 86 || v == 89 || v >= 110) return int64_t{99} * 1024;
    if (v == 75) return int64_t{64} * 1024;
    return int64_t{96} * 1024;  // sm_70, sm_72
  }
  // Shared memory of one SM (bytes), which its resident blocks share; 0 when not a
  // CUDA arch.
  int64_t max_shared_memory_per_sm() const {
    int v = sm_version();
    if (v == 0) return 0;
    if (v == 90 || v == 100 || v == 103) return int64_t{228} * 1024;
    if (v == 80 || v == 87) return int64_t{164} * 1024;
    if (v == 86 || v == 89 || v >= 110) return int64_t{100} * 1024;
    if (v == 75) return int64_t{64} * 1024;
    return int64_t{96} * 1024;
  }
  // The most blocks a launch may have along grid dimension `d` (0 = x), and the most
  // threads a block may have along `d`; 0 means no limit of the target's own (the
  // cpu target runs any int64 count of blocks). Metal bounds the threads of the whole
  // grid per dimension instead (thread_position_in_grid is a uint): max_grid_threads.
  int64_t max_grid_dim(int d) const {
    if (kind != TargetKind::CUDA) return 0;
    return d == 0 ? (int64_t(1) << 31) - 1 : 65535;
  }
  int64_t max_block_dim(int d) const {
    if (kind == TargetKind::CUDA) return d == 2 ? 64 : 1024;
    return kind == TargetKind::Metal ? 1024 : 0;
  }
  int64_t max_grid_threads() const { return kind == TargetKind::Metal ? (int64_t(1) << 32) - 1 : 0; }
  // Metal 4 cooperative tensors (MetalPerformancePrimitives matmul2d): the "metal4" key.
  bool has_metal4() const { return kind == TargetKind::Metal && keys.count("metal4"); }
};

// What is wrong with a launch of `grid` blocks (x, y, z; an entry of -1 is not known
// yet, a dynamic extent before the call) of `threads` threads on `t`, or nullopt when
// it fits: a negative extent or one past the target's limits. (An extent of 0 is an
// empty launch, which the runtime skips; T.Kernel(0) written as a constant is refused
// by the builder.)
std::optional<std::string> launch_limit_violation(const Target& t, const std::array<int64_t, 3>& grid,
                                                  const std::vector<int64_t>& threads);

// The keys "metal" gets on this machine when none are given: {"metal4"} on macOS 26
// or later with an Apple M5 or later GPU, else none (always none off macOS).
std::set<std::string> detect_metal_keys();
// The same decision from its inputs (testable anywhere): the macOS product version
// ("26.1") and the chip name ("Apple M5 Pro").
bool metal4_supported(const std::string& macos_version, const std::string& chip);

}  // namespace tl
