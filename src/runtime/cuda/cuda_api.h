// The CUDA driver, loaded at run time with dlopen so that the package builds,
// imports and runs its CPU target on machines without CUDA. Only the few entry
// points we call are declared, with the driver's ABI. NVRTC is nvrtc.h.
#pragma once

#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

namespace tl {

using CUresult = int;
using CUdevice = int;
using CUcontext = void*;
using CUmodule = void*;
using CUfunction = void*;
using CUstream = void*;
using CUevent = void*;

struct CudaDriver {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDeviceGet)(CUdevice*, int);
  CUresult (*cuDeviceGetCount)(int*);
  CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuCtxGetCurrent)(CUcontext*);
  CUresult (*cuModuleLoadData)(CUmodule*, const void*);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                             void**, void**);
  // Cooperative launches (T.sync_grid): the launch, the occupancy its check needs,
  // and the events that order launches of one module on different streams.
  CUresult (*cuLaunchCooperativeKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                        unsigned, CUstream, void**);
  CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
  CUresult (*cuEventCreate)(CUevent*, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventDestroy)(CUevent);  // null where the driver lacks it: the event is then left
  CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
  CUresult (*cuGetErrorString)(CUresult, const char**);
  CUresult (*cuGetErrorName)(CUresult, const char**);
  CUresult (*cuDriverGetVersion)(int*);
  CUresult (*cuTensorMapEncodeTiled)(void*, int, unsigned, void*, const unsigned long long*, const unsigned long long*,
                                     const unsigned*, const unsigned*, int, int, int, int);  // null before CUDA 12
};

// dlopen of the first of `names` that loads (RTLD_NOW | RTLD_GLOBAL); nullptr if none.
void* dlopen_first(std::initializer_list<const char*> names);

// The loaded driver, or nullptr when it is not on this machine.
const CudaDriver* cuda_driver();
// The installed driver's CUDA version ("13.0"; "" without a driver), for cache
// keys: read with cuDriverGetVersion, which needs no cuInit and no GPU.
std::string cuda_driver_version();

// Throws a UserError naming `what` when a driver call failed.
void check_cuda(CUresult r, const std::string& what);

// The compute capability of device 0 as "sm_XY" ("" when no GPU answers).
std::string present_gpu_arch();
// The driver's device count (0 without a driver), and attribute number `attribute` (a
// CUdevice_attribute) of device `device` (nullopt without a driver or that device).
// The Python package asks these instead of loading libcuda a second time.
int cuda_device_count();
std::optional<int> cuda_device_attribute(int attribute, int device);

}  // namespace tl
