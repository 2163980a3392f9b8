// The runtime library's API (tilelang_cpp::runtime): load a compiled kernel and
// launch it, with no compiler inside. A program that only runs kernels exported
// by another (tl::export_kernel, or tl::compile's cache entries) links this alone.
#pragma once

#include <memory>
#include <string>

#include "runtime/kernel.h"
#include "target/target.h"

namespace tl {

// Writes a compiled kernel to directory `dir` (made if missing; files of an earlier
// export there are replaced): its binary and source, and export.txt naming its
// target and signature. Throws a UserError when the kernel has no artifact on disk
// (a metal kernel) or `dir` cannot be written.
void export_kernel(const Kernel& kernel, const std::string& dir);

// Loads a kernel that export_kernel wrote to `dir`; nothing is compiled. The files
// must stay in `dir` while the kernel lives. A directory without an export, or one
// whose binary does not load, is a UserError naming it.
std::shared_ptr<Kernel> load_kernel(const std::string& dir);

// Loads a kernel from its parts: the signature text (KernelSignature::serialize),
// the target string and the directory holding its artifact files (those of a
// cache entry: kernel.cpp + kernel.so on the CPU).
std::shared_ptr<Kernel> load_kernel(const std::string& signature, const std::string& target,
                                    const std::string& artifact_dir);

}  // namespace tl
