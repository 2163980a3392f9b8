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
  for (size_t i = 0; i < signature().threads.size() && i < 3; ++i) threads_[i] = signature().threads[i];
}

void* CudaKernel::function_for(int device_id) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (device_id < int(functions_.size()) && functions_[device_id]) return functions_[device_id];
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
  if (int(functions_.size()) <= device_id) functions_.resize(device_id + 1, nullptr);
  functions_[device_id] = fn;
  return fn;
}

void CudaKernel::launch(const std::vector<KernelArg>& slots, const std::array<int64_t, 3>& grid, int device_id,
                        void* stream) const {
  void* fn = function_for(device_id);
  const CudaDriver* d = cuda_driver();
  std::vector<void*> params(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) params[i] = const_cast<KernelArg*>(&slots[i]);
  CUresult r = d->cuLaunchKernel(fn, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]), unsigned(threads_[0]),
                                 unsigned(threads_[1]), unsigned(threads_[2]), unsigned(shared_bytes_), stream,
                                 params.data(), nullptr);
  check_cuda(r, str_cat("launching kernel '", signature().name, "' with grid (", grid[0], ", ", grid[1], ", ", grid[2],
                        "), block (", threads_[0], ", ", threads_[1], ", ", threads_[2], "), ", shared_bytes_,
                        " bytes of shared memory"));
}

}  // namespace tl
