// NVRTC, loaded at run time with dlopen: the compiler library builds CUDA
// kernels with it (cubins for the exact arch, PTX for newer GPUs). The runtime
// library never calls it (docs/cpp_api.md).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace tl {

using nvrtcResult = int;
using nvrtcProgram = void*;

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

// The loaded library, or nullptr when it is not on this machine.
const Nvrtc* nvrtc();
// "13.0"-style NVRTC version, for cache keys ("" when NVRTC is missing).
std::string nvrtc_version();

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

}  // namespace tl
