// Lazy module loading per device, and the launch with driver errors that name
// the kernel and its launch shape.
#include "runtime/cuda/cuda_kernel.h"

#include "runtime/cuda/cuda_api.h"

namespace tl {

CudaKernel::CudaKernel(KernelSignature sig, Target target, std::string source, std::vector<char> cubin,
                       std::string entry, int64_t shared_bytes)
    : Kernel(std::move(sig), std::move(target), std::move(source), ""),
      cubin_(std::move(cubin)),
      entry_(std::move(entry)),
      shared_bytes_(shared_bytes) {
  for (size_t i = 0; i < signature().threads.size() && i < 3; ++i) threads_[i] = unsigned(signature().threads[i]);
  for (auto& f : functions_) f.store(nullptr, std::memory_order_relaxed);
}

void* CudaKernel::function_for(int device_id) const {
  if (device_id >= 0 && device_id < kMaxDevices)
    if (void* fn = functions_[device_id].load(std::memory_order_acquire)) return fn;
  return load_function(device_id);
}

void* CudaKernel::load_function(int device_id) const {
  if (device_id < 0 || device_id >= kMaxDevices)
    throw_user_error({}, str_cat("kernel '", signature().name, "': cuda device ", device_id,
                                 " is out of the range this runtime supports (0..", kMaxDevices - 1, ")"));
  std::lock_guard<std::mutex> lock(mu_);
  if (void* fn = functions_[device_id].load(std::memory_order_acquire)) return fn;
  const CudaDriver* d = cuda_driver();
  if (!d)
    throw_user_error({}, str_cat("kernel '", signature().name,
                                 "' targets cuda, but the CUDA driver (libcuda.so.1) could not be loaded"));
  CUdevice dev;
  check_cuda(d->cuDeviceGet(&dev, device_id), str_cat("cuDeviceGet(", device_id, ")"));
  CUcontext ctx;
  check_cuda(d->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check_cuda(d->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule mod;
  check_cuda(d->cuModuleLoadData(&mod, cubin_.data()),
             str_cat("loading the cubin of kernel '", signature().name, "' (built for ", target().arch, ")"));
  CUfunction fn;
  check_cuda(d->cuModuleGetFunction(&fn, mod, entry_.c_str()), "cuModuleGetFunction(" + entry_ + ")");
  if (shared_bytes_ > 48 * 1024)  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check_cuda(d->cuFuncSetAttribute(fn, 8, int(shared_bytes_)),
               str_cat("kernel '", signature().name, "' asking for ", shared_bytes_, " bytes of shared memory"));
  functions_[device_id].store(fn, std::memory_order_release);
  return fn;
}

void CudaKernel::launch(const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid, int device_id,
                        void* stream) const {
  void* fn = function_for(device_id);
  constexpr size_t kInline = 32;
  void* inline_params[kInline];
  std::vector<void*> heap_params;
  void** params = inline_params;
  if (num_slots > kInline) {
    heap_params.resize(num_slots);
    params = heap_params.data();
  }
  // A TMA map's slot points at its 128 bytes, which are the parameter's value.
  const size_t first_map = size_t(signature().num_args());
  for (size_t i = 0; i < num_slots; ++i) params[i] = i < first_map ? const_cast<KernelArg*>(&slots[i]) : slots[i].ptr;
  CUresult r =
      cuda_driver()->cuLaunchKernel(fn, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]), threads_[0],
                                    threads_[1], threads_[2], unsigned(shared_bytes_), stream, params, nullptr);
  if (r == 0) return;
  check_cuda(r, str_cat("launching kernel '", signature().name, "' with grid (", grid[0], ", ", grid[1], ", ", grid[2],
                        "), block (", threads_[0], ", ", threads_[1], ", ", threads_[2], "), ", shared_bytes_,
                        " bytes of shared memory"));
}

}  // namespace tl
