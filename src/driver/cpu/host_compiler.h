// Compiles generated CPU C++ into a shared library with the host compiler
// (TILELANG_CXX, else CXX, else c++), with a time limit.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace tl {

// A line identifying the host compiler and its flags, for cache keys.
const std::string& host_compiler_id();
// Whether the host compiler is GCC (its precompiled headers fall back to the text
// header on a mismatch).
bool host_compiler_is_gcc();
// Compiles `source_path` to `library_path`, linking `objects` into it; throws an
// InternalError with the compiler's output on failure (generated code that does
// not compile is our bug).
void compile_shared_library(const std::string& source_path, const std::string& library_path,
                            const std::vector<std::string>& extra_flags, const std::vector<std::string>& objects = {});
// Compiles `source_path` to the relocatable object `object_path` (-c), to be linked
// into shared libraries later; fails as compile_shared_library does.
void compile_object(const std::string& source_path, const std::string& object_path,
                    const std::vector<std::string>& extra_flags);
// What the host compiler says when it checks an empty C++ file with our language
// standard and `flags` (an option it does not know, a bad value); nothing when it
// takes them.
std::optional<std::string> host_compiler_rejects(const std::vector<std::string>& flags);

}  // namespace tl
