// Turns generated Metal Shading Language into C++ that the host compiler builds
// against device/emu/metal_emu.h, so the exact MSL of a kernel runs on the CPU
// (docs/design/metal.md, "Emulated build").
#pragma once

#include <string>

namespace tl {

// Rewrites, line by line and keeping the line count (compiler messages and
// emulator reports point at the MSL's own lines):
//   `threadgroup T name[N]...;`  ->  `alignas(16) static thread_local T name[N]...;`
//     (each OS thread runs one threadgroup at a time, its threads as fibers);
//   `#include <metal_*>` and the MetalPerformancePrimitives include  ->  a comment
//     (metal_emu.h, force-included, provides what they declare).
// Every other line is kept as it is.
std::string msl_to_emulated_cpp(const std::string& msl);

}  // namespace tl
