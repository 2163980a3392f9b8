// The CUDA driver and NVRTC, loaded at run time with dlopen so that the package
// builds, imports and runs its CPU target on machines without CUDA. Only the few
// entry points we call are declared, with the driver's ABI.
#pragma once

#include <cstddef>
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
using nvrtcResult = int;
using nvrtcProgram = void*;

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

struct Nvrtc {
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                    const char* const*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcVersion)(int*, int*);
};

// The loaded libraries, or nullptr when they are not on this machine.
const CudaDriver* cuda_driver();
const Nvrtc* nvrtc();
// "13.0"-style NVRTC version, for cache keys ("" when NVRTC is missing).
std::string nvrtc_version();
// The installed driver's CUDA version ("13.0"; "" without a driver), for cache
// keys: read with cuDriverGetVersion, which needs no cuInit and no GPU.
std::string cuda_driver_version();

// Compiles CUDA source to a cubin for `arch` ("sm_90a"), or to PTX when `arch` is
// virtual ("compute_80"); throws an InternalError with NVRTC's log when the
// generated code does not compile.
std::vector<char> nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                                const std::string& include_dir, const std::vector<std::string>& extra_flags);
// What NVRTC says when it compiles an empty program for `arch` with nvrtc_compile's
// options and `extra_flags` (an unknown option, a ptxas option ptxas refuses);
// nothing when it takes them, or when NVRTC is missing (nvrtc_compile says so).
std::optional<std::string> nvrtc_rejects(const std::string& arch, const std::string& include_dir,
                                         const std::vector<std::string>& extra_flags);

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
