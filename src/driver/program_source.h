// Kernels given as CUDA source (T.CUDASourceCodeKernel): the code generator prints
// this line before the program's own source, and the compilers (the host compiler of
// the emulator, NVRTC) report a failure of code that carries it as the program's
// error, naming the source, instead of as a code generation bug.
#pragma once

#include <string_view>

namespace tl {

inline constexpr std::string_view kProgramSourceMarker =
    "// T.CUDASourceCodeKernel: the program's own CUDA source follows";

inline bool is_program_source(std::string_view code) {
  return code.find(kProgramSourceMarker) != std::string_view::npos;
}

}  // namespace tl
