// The runtime library's API (tilelang_cpp::runtime): load a compiled kernel and
// launch it, with no compiler inside. A program that only runs kernels exported
// by another (tl::export_kernel, or tl::compile's cache entries) links this alone.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/kernel.h"
#include "target/target.h"

namespace tl {

// Writes a compiled kernel to directory `dir` (made if missing; files of an earlier
// export there are replaced): its binary and source, and export.txt naming the
// format version, target, machine, each file's SHA-256 and the signature. `meta` is
// one line of text carried along unread (the Python package keeps its JSON there).
// Python's kernel.export_library writes the same directory. Throws a UserError when
// the kernel has no artifact on disk (a metal kernel) or `dir` cannot be written.
void export_kernel(const Kernel& kernel, const std::string& dir, const std::string& meta = "");

// An export's description, checked: the format and version are this release's, the
// kernel was built for this machine (OS and CPU architecture), and every file in
// `dir` is listed with a matching SHA-256. Anything else is a UserError naming it.
struct ExportDescription {
  std::string target;
  std::string signature;
  std::string meta;
  std::vector<std::pair<std::string, std::string>> files;  // name, SHA-256
};
ExportDescription read_export(const std::string& dir);

// Loads a kernel that export_kernel (or Python's export_library) wrote to `dir`
// after read_export's checks; nothing is compiled. The checked files are copied
// into a private temporary directory (checked again as they are copied) and loaded
// from there, so `dir` may change or go once this returns. A directory without an
// export, or one whose binary does not load, is a UserError naming it.
std::shared_ptr<Kernel> load_kernel(const std::string& dir);

// Loads a kernel from its parts: the signature text (KernelSignature::serialize),
// the target string and the directory holding its artifact files (those of a
// cache entry: kernel.cpp + kernel.so on the CPU).
std::shared_ptr<Kernel> load_kernel(const std::string& signature, const std::string& target,
                                    const std::string& artifact_dir);

}  // namespace tl
