// A CUDA kernel: a cubin built by NVRTC for the exact arch, loaded into the
// device's primary context at its first call (so compiling needs no GPU).
#pragma once

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

#include "runtime/kernel.h"

namespace tl {

// What the driver needs to launch one kernel of the module (one per T.Kernel
// block): its entry and the dynamic shared memory it asks for. The block comes
// from the signature's LaunchSpec.
struct CudaEntry {
  std::string name;
  int64_t shared_bytes = 0;
};

// Builds the PTX of a kernel's CUDA `source` for virtual `arch` ("compute_80"), for
// a GPU newer than the cubin's arch. The compiler library registers NVRTC here
// (compile.cpp); a program linked only against the runtime library has none, and
// such a launch is then a UserError that says so.
using PtxCompiler = std::vector<char> (*)(const std::string& source, const std::string& name, const std::string& arch,
                                          const std::vector<std::string>& flags);
void set_ptx_compiler(PtxCompiler compiler);

// How many CUDA modules the kernels of this process hold loaded now (one per kernel
// and device it ran on; a kernel's destructor unloads its own): a test's measure of
// modules that dropped kernels leave behind.
int64_t cuda_modules_loaded();

class CudaKernel : public Kernel {
 public:
  // `entries` has one element per launch of `sig`.
  // `compile_flags` are the NVRTC flags of the cubin, for the PTX a newer GPU loads.
  CudaKernel(KernelSignature sig, Target target, std::string source, std::vector<char> cubin,
             std::vector<CudaEntry> entries, std::vector<std::string> compile_flags = {});
  // Unloads the modules it loaded (each in its device's context), so that a kernel
  // evicted from the memory cache and dropped by its users frees its device memory.
  ~CudaKernel() override;

  const std::vector<char>& cubin() const { return cubin_; }

 protected:
  void launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
              void* stream) const override;

 private:
  void* function_for(int device_id, size_t index) const;
  // A launch of a kernel that calls T.sync_grid (LaunchSpec::cooperative).
  void launch_cooperative(size_t index, void* fn, void** params, const std::array<int64_t, 3>& grid, int device_id,
                          void* stream) const;
  void load_functions(int device_id) const;
  static constexpr int kNoBinaryForGpu = 209;        // CUDA_ERROR_NO_BINARY_FOR_GPU
  int load_as_ptx(int device_id, void** mod) const;  // a CUresult

  std::vector<char> cubin_;
  std::vector<CudaEntry> entries_;
  std::vector<std::string> compile_flags_;
  std::vector<std::array<unsigned, 3>> threads_;  // per launch
  // The loaded functions, device-major (device * entries + launch): read without
  // a lock on every launch (set once, under mu_, by the first call on that device).
  static constexpr int kMaxDevices = 64;
  std::unique_ptr<std::atomic<void*>[]> functions_;
  mutable std::mutex mu_;
  // Per device and cooperative launch (device-major, as functions_): the blocks that
  // fit on the GPU at once, per SM and in all; written with the functions.
  struct Residency {
    int64_t per_sm = 0, sms = 0;
  };
  mutable std::vector<Residency> residency_;
  // Per device: the event of the last cooperative launch of this module, which the
  // next one waits for. Its blocks share the module's arrival word (device/cuda/
  // grid_sync.cuh), so two must never run at once, whatever their streams.
  mutable std::vector<void*> last_cooperative_;
  // Per device: the loaded module and the context it was loaded in (null: none).
  mutable std::vector<std::pair<void*, void*>> modules_;
  mutable std::mutex cooperative_mu_;
};

}  // namespace tl
