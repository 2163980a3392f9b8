// dlopen / dlsym of libcuda and error reporting: the driver, which the runtime
// library launches with (NVRTC, which only the compiler uses, is nvrtc.cpp).
#include "runtime/cuda/cuda_api.h"

#include <dlfcn.h>

#include "support/error.h"
#include "support/logging.h"

namespace tl {

void* dlopen_first(std::initializer_list<const char*> names) {
  for (const char* n : names)
    if (void* h = dlopen(n, RTLD_NOW | RTLD_GLOBAL)) return h;
  return nullptr;
}

namespace {

template <class F>
bool load(void* h, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

void* libcuda() {
  static void* h = dlopen_first({"libcuda.so.1", "libcuda.so"});
  return h;
}

}  // namespace

const CudaDriver* cuda_driver() {
  static const CudaDriver* d = []() -> const CudaDriver* {
    void* h = libcuda();
    if (!h) return nullptr;
    static CudaDriver api;
    bool ok = load(h, api.cuInit, "cuInit") && load(h, api.cuDeviceGet, "cuDeviceGet") &&
              load(h, api.cuDeviceGetCount, "cuDeviceGetCount") &&
              load(h, api.cuDeviceGetAttribute, "cuDeviceGetAttribute") &&
              load(h, api.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain") &&
              load(h, api.cuCtxSetCurrent, "cuCtxSetCurrent") && load(h, api.cuCtxGetCurrent, "cuCtxGetCurrent") &&
              load(h, api.cuModuleLoadData, "cuModuleLoadData") && load(h, api.cuModuleUnload, "cuModuleUnload") &&
              load(h, api.cuModuleGetFunction, "cuModuleGetFunction") &&
              load(h, api.cuFuncSetAttribute, "cuFuncSetAttribute") && load(h, api.cuLaunchKernel, "cuLaunchKernel") &&
              load(h, api.cuLaunchCooperativeKernel, "cuLaunchCooperativeKernel") &&
              load(h, api.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor") &&
              load(h, api.cuEventCreate, "cuEventCreate") && load(h, api.cuEventRecord, "cuEventRecord") &&
              load(h, api.cuStreamWaitEvent, "cuStreamWaitEvent") &&
              load(h, api.cuGetErrorString, "cuGetErrorString") && load(h, api.cuGetErrorName, "cuGetErrorName") &&
              load(h, api.cuDriverGetVersion, "cuDriverGetVersion");
    load(h, api.cuTensorMapEncodeTiled, "cuTensorMapEncodeTiled");  // optional: sm_90 TMA maps (runtime/cuda/tma.h)
    if (!load(h, api.cuEventDestroy, "cuEventDestroy_v2")) load(h, api.cuEventDestroy, "cuEventDestroy");  // optional
    if (!ok || api.cuInit(0) != 0) return nullptr;
    return &api;
  }();
  return d;
}

std::string cuda_driver_version() {
  static const std::string v = []() -> std::string {
    void* h = libcuda();
    CUresult (*get)(int*) = nullptr;
    int version = 0;
    if (!h || !load(h, get, "cuDriverGetVersion") || get(&version) != 0) return "";
    return std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10);
  }();
  return v;
}

void check_cuda(CUresult r, const std::string& what) {
  if (r == 0) return;
  const char* name = "?";
  const char* msg = "?";
  if (const CudaDriver* d = cuda_driver()) {
    d->cuGetErrorName(r, &name);
    d->cuGetErrorString(r, &msg);
  }
  throw_user_error({}, str_cat(what, " failed: ", name, " (", msg, ")"));
}

int cuda_device_count() {
  const CudaDriver* d = cuda_driver();
  int count = 0;
  if (!d || d->cuDeviceGetCount(&count) != 0) return 0;
  return count;
}

std::optional<int> cuda_device_attribute(int attribute, int device) {
  if (device < 0 || device >= cuda_device_count()) return std::nullopt;
  const CudaDriver* d = cuda_driver();
  CUdevice dev;
  int value = 0;
  if (d->cuDeviceGet(&dev, device) != 0 || d->cuDeviceGetAttribute(&value, attribute, dev) != 0) return std::nullopt;
  return value;
}

std::string present_gpu_arch() {
  const CudaDriver* d = cuda_driver();
  if (!d) return "";
  int count = 0;
  if (d->cuDeviceGetCount(&count) != 0 || count == 0) return "";
  CUdevice dev;
  if (d->cuDeviceGet(&dev, 0) != 0) return "";
  int major = 0, minor = 0;
  d->cuDeviceGetAttribute(&major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  d->cuDeviceGetAttribute(&minor, 76, dev);  // ..._MINOR
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

}  // namespace tl
