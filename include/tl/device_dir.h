// Where the device headers live at run time. Generated kernels include them
// (device/cpu/tl_cpu.h, device/cuda/tl_cuda.cuh ...), so compiling a kernel needs
// the directory; a program that cannot find it gets a DeviceDirError, never a
// failed compile of the kernel source.
#pragma once

#include <string>

#include "support/error.h"

namespace tl {

// The device headers were not found, or a directory named for them does not hold
// them. The message names what was searched and TILELANG_DEVICE_DIR. One kind of
// EnvironmentError (support/error.h): what the machine lacks.
class DeviceDirError : public EnvironmentError {
 public:
  using EnvironmentError::EnvironmentError;
};

// The device header directory, searched once in this order:
//   1. the TILELANG_DEVICE_DIR environment variable (an error if it does not hold them),
//   2. a directory given to set_device_include_dir,
//   3. next to the installed library: <prefix>/share/tilelang_cpp/device, found from
//      the location of libtilelang_cpp (or of the program the library is linked into),
//   4. for a library or program run from its CMake build tree (not installed), the
//      device/ folder of the source tree, which the build tree names in
//      tilelang_source_device_dir.txt beside its binaries.
// Throws DeviceDirError when none holds them.
const std::string& device_include_dir();

// Uses `dir` (a folder holding cpu/tl_cpu.h) from now on, unless TILELANG_DEVICE_DIR
// is set, which wins. Throws DeviceDirError if `dir` does not hold the headers.
void set_device_include_dir(const std::string& dir);

}  // namespace tl
