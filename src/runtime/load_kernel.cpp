// Loading a compiled kernel from its files, and exporting one to a directory that
// loads back: the runtime library's whole job besides the launch, with no
// compiler (no codegen, no passes, no NVRTC or host compiler) behind it.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "runtime/artifact.h"
#include "runtime/cpu/cpu_kernel.h"
#include "runtime/cuda/cuda_kernel.h"
#include "support/error.h"
#include "tl/runtime.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

// The first line of an export's description file; the number changes with the layout.
constexpr const char* kExportFormat = "tilelang-cpp-kernel 1";
constexpr const char* kExportFile = "export.txt";

// What an export holds besides the artifact: the cache entry's own checksums
// (manifest.txt) stay behind.
bool exported(const fs::path& file) {
  return file.filename() != "manifest.txt" && file.filename() != kExportFile;
}

}  // namespace

std::shared_ptr<Kernel> load_kernel(const std::string& signature, const std::string& target,
                                    const std::string& artifact_dir) {
  KernelSignature sig = KernelSignature::parse(signature);
  Target t = Target::parse(target);
  fs::path dir(artifact_dir);
  std::shared_ptr<Kernel> k;
  switch (t.kind) {
    case TargetKind::CPU: {
      std::vector<std::string> entries = cpu_entries(sig);
      k = std::make_shared<CpuKernel>(std::move(sig), t, read_text(dir / "kernel.cpp"), (dir / "kernel.so").string(),
                                      entries);
      break;
    }
    case TargetKind::CUDA: {
      // Same files as the cache entry build_cuda / build_cuda_emulated write.
      // The TMA maps: meta.txt lists them for the binary (the signature text does too).
      std::vector<CudaLaunchInfo> meta = read_meta(dir);
      sig = with_meta(std::move(sig), meta);
      if (t.emulated) {
        std::vector<std::string> entries = cuda_emulated_entries(sig);
        k = std::make_shared<CpuKernel>(std::move(sig), t, read_text(dir / "kernel.cu"), (dir / "kernel.so").string(),
                                        entries);
        break;
      }
      std::string cubin = read_text(dir / "kernel.cubin");
      if (cubin.empty())
        throw_user_error({}, str_cat("the exported kernel '", sig.name, "' has no kernel.cubin in ", artifact_dir,
                                     "; export it again from a kernel compiled for ", t.str()));
      // The module is loaded at the first call, so loading needs no GPU.
      k = std::make_shared<CudaKernel>(std::move(sig), t, read_text(dir / "kernel.cu"),
                                       std::vector<char>(cubin.begin(), cubin.end()), cuda_entries(meta));
      break;
    }
    case TargetKind::Metal: {
      if (t.emulated) {  // the files build_metal_emulated writes
        check_one_metal_kernel(sig);
        std::string entry = metal_emu_entry_name(sig.name);
        k = std::make_shared<CpuKernel>(std::move(sig), t, read_text(dir / "kernel.metal"),
                                        (dir / "kernel.so").string(), std::vector<std::string>{entry});
        break;
      }
      // The torch backend's artifact is the source itself, compiled where it runs.
      throw_user_error({}, str_cat("loading an exported ", t.str(),
                                   " kernel is not supported: a metal kernel's artifact is its source, which the "
                                   "torch backend compiles at load; compile the kernel again instead"));
    }
  }
  k->set_origin(artifact_dir, "");
  return k;
}

void export_kernel(const Kernel& kernel, const std::string& dir) {
  const std::string& from = kernel.artifact_path();
  std::error_code ec;
  if (from.empty() || !fs::is_directory(from, ec))
    throw_user_error({}, str_cat("kernel '", kernel.signature().name, "' has no artifact directory to export (",
                                 from.empty() ? "none recorded" : from,
                                 "): a metal kernel's artifact is its source, and a cache entry may have been "
                                 "pruned since the kernel was compiled; compile it again and export right away"));
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw_user_error({}, str_cat("cannot export kernel '", kernel.signature().name, "' to ", dir,
                                 ": the directory cannot be made (", ec.message(), ")"));
  // The description goes last: a directory an export left half-written does not load.
  fs::remove(fs::path(dir) / kExportFile, ec);
  for (const fs::directory_entry& e : fs::directory_iterator(from)) {
    if (!e.is_regular_file() || !exported(e.path())) continue;
    fs::copy_file(e.path(), fs::path(dir) / e.path().filename(), fs::copy_options::overwrite_existing, ec);
    if (ec)
      throw_user_error({}, str_cat("cannot export kernel '", kernel.signature().name, "': copying ", e.path().string(),
                                   " to ", dir, " failed (", ec.message(), ")"));
  }
  std::ofstream out(fs::path(dir) / kExportFile, std::ios::binary);
  out << kExportFormat << "\ntarget " << kernel.target().str() << "\nsignature\n" << kernel.signature().serialize();
  if (!out.flush())
    throw_user_error({}, str_cat("cannot export kernel '", kernel.signature().name, "': writing ", dir, "/",
                                 kExportFile, " failed"));
}

std::shared_ptr<Kernel> load_kernel(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kExportFile, std::ios::binary);
  if (!in)
    throw_user_error({}, str_cat(dir, " is not an exported tilelang kernel: it has no ", kExportFile,
                                 "; write one with tl::export_kernel(kernel, dir)"));
  std::string format, target_line, signature_line;
  std::getline(in, format);
  std::getline(in, target_line);
  std::getline(in, signature_line);
  if (format != kExportFormat)
    throw_user_error({}, str_cat(dir, "/", kExportFile,
                                 " is not a tilelang kernel description of this release (its "
                                 "first line is '",
                                 format, "', expected '", kExportFormat,
                                 "'); export the kernel again with this release's tl::export_kernel"));
  if (target_line.rfind("target ", 0) != 0 || signature_line != "signature")
    throw_user_error({}, str_cat(dir, "/", kExportFile, " is damaged: its second and third lines are '", target_line,
                                 "' and '", signature_line, "', expected 'target <target>' and 'signature'"));
  std::stringstream signature;
  signature << in.rdbuf();
  try {
    return load_kernel(signature.str(), target_line.substr(7), dir);
  } catch (const std::runtime_error& e) {
    if (dynamic_cast<const UserError*>(&e)) throw;
    throw_user_error({}, str_cat("the exported kernel in ", dir, " does not load: ", e.what()));
  }
}

}  // namespace tl
