// Compiles generated CPU C++ into a shared library with the host compiler
// (TILELANG_CXX, else CXX, else c++), with a time limit.
#pragma once

#include <string>
#include <vector>

namespace tl {

// A line identifying the host compiler and its flags, for cache keys.
const std::string& host_compiler_id();
// Compiles `source_path` to `library_path`; throws an InternalError with the
// compiler's output on failure (generated code that does not compile is our bug).
void compile_shared_library(const std::string& source_path, const std::string& library_path,
                            const std::vector<std::string>& extra_flags);

}  // namespace tl
