// Loading a compiled kernel from its files, and exporting one to a directory that
// loads back: the runtime library's whole job besides the launch, with no
// compiler (no codegen, no passes, no NVRTC or host compiler) behind it.
#include <sys/utsname.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "cache/private_dir.h"
#include "runtime/artifact.h"
#include "runtime/cpu/cpu_kernel.h"
#include "runtime/cuda/cuda_kernel.h"
#include "support/error.h"
#include "support/sha256.h"
#include "tl/runtime.h"

namespace fs = std::filesystem;

namespace tl {
namespace {

// export.txt: 'key value' lines (format, version, target, built_on, one 'file <name>
// <sha256>' per file, an optional one-line 'meta' the Python package fills), then
// 'signature' and the signature text. The version changes with the layout.
constexpr const char* kExportFormat = "tilelang-cpp-kernel";
constexpr const char* kExportVersion = "2";
constexpr const char* kOldExportFormat = "tilelang-cpp-kernel 1";  // the first line of version 1
constexpr const char* kExportFile = "export.txt";

// What an export holds besides the artifact: the cache entry's own checksums
// (manifest.txt) stay behind.
bool exported(const fs::path& file) {
  return file.filename() != "manifest.txt" && file.filename() != kExportFile;
}

std::string checksum(const std::string& data) {
  std::optional<std::string> h = sha256_hex(data);
  if (!h)
    throw_user_error({},
                     "exported kernels are checked with SHA-256, which needs OpenSSL's libcrypto; it was not "
                     "found on this machine");
  return *h;
}

// The same words as Python's platform.system() / platform.machine().
std::string this_machine() {
  struct utsname u;
  if (uname(&u) != 0) return "unknown";
  return str_cat(u.sysname, " ", u.machine);
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

void export_kernel(const Kernel& kernel, const std::string& dir, const std::string& meta) {
  const std::string& name = kernel.signature().name;
  const std::string& from = kernel.artifact_path();
  std::error_code ec;
  if (from.empty() || !fs::is_directory(from, ec))
    throw_user_error(
        {}, str_cat("kernel '", name, "' has no artifact directory to export (", from.empty() ? "none recorded" : from,
                    "): a metal kernel's artifact is its source, and a cache entry may have been "
                    "pruned since the kernel was compiled; compile it again and export right away"));
  if (meta.find('\n') != std::string::npos)
    throw_user_error({}, str_cat("cannot export kernel '", name, "': its meta text must be one line"));
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw_user_error({}, str_cat("cannot export kernel '", name, "' to ", dir, ": the directory cannot be made (",
                                 ec.message(), ")"));
  // The files an earlier export here listed go first (a file this export does not
  // write would be refused by the loader as unlisted), then its description: the new
  // description goes last, so a directory an export left half-written does not load.
  std::ifstream earlier(fs::path(dir) / kExportFile, std::ios::binary);
  for (std::string line; std::getline(earlier, line) && line != "signature";) {
    if (line.rfind("file ", 0) != 0) continue;
    std::string listed = line.substr(5, line.rfind(' ') - 5);
    if (!listed.empty() && fs::path(listed).filename().string() == listed && listed != kExportFile &&
        !fs::equivalent(fs::path(dir) / listed, fs::path(from) / listed, ec))
      fs::remove(fs::path(dir) / listed, ec);
  }
  earlier.close();
  fs::remove(fs::path(dir) / kExportFile, ec);
  std::vector<fs::path> files;
  for (const fs::directory_entry& e : fs::directory_iterator(from))
    if (e.is_regular_file() && exported(e.path())) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::string listing;
  for (const fs::path& f : files) {
    std::string data = read_text(f);
    listing += str_cat("file ", f.filename().string(), " ", checksum(data), "\n");
    fs::path to = fs::path(dir) / f.filename();
    if (fs::equivalent(f, to, ec)) continue;  // a kernel loaded from `dir`, exported to it again
    // Written aside and renamed over: a library a live kernel has mapped from here keeps
    // its old file rather than changing under it.
    fs::path staged = fs::path(dir) / str_cat(".", f.filename().string(), ".export");
    std::ofstream out(staged, std::ios::binary | std::ios::trunc);
    out.write(data.data(), std::streamsize(data.size()));
    out.close();
    if (!out || (fs::rename(staged, to, ec), ec))
      throw_user_error(
          {}, str_cat("cannot export kernel '", name, "': writing ", f.filename().string(), " to ", dir, " failed"));
  }
  std::ofstream out(fs::path(dir) / kExportFile, std::ios::binary);
  out << "format " << kExportFormat << "\nversion " << kExportVersion << "\ntarget " << kernel.target().str()
      << "\nbuilt_on " << this_machine() << "\n"
      << listing;
  if (!meta.empty()) out << "meta " << meta << "\n";
  out << "signature\n" << kernel.signature().serialize();
  if (!out.flush())
    throw_user_error({}, str_cat("cannot export kernel '", name, "': writing ", dir, "/", kExportFile, " failed"));
}

ExportDescription read_export(const std::string& dir) {
  std::ifstream in(fs::path(dir) / kExportFile, std::ios::binary);
  if (!in)
    throw_user_error({}, str_cat(dir, " is not an exported tilelang kernel: it has no ", kExportFile,
                                 "; write one with tl::export_kernel(kernel, dir) or kernel.export_library(dir)"));
  const std::string where = str_cat(dir, "/", kExportFile);
  ExportDescription d;
  std::string line, version, built_on;
  std::getline(in, line);
  if (line == kOldExportFormat)
    throw_user_error({}, str_cat(where, " was written by an earlier release (", kOldExportFormat,
                                 ", which carries no checksums) and is not loaded; export the kernel again with "
                                 "this release"));
  if (line != str_cat("format ", kExportFormat))
    throw_user_error(
        {}, str_cat(where, " is not a tilelang kernel description (its first line is '", line, "', expected 'format ",
                    kExportFormat, "'); write one with tl::export_kernel(kernel, dir) or kernel.export_library(dir)"));
  std::getline(in, line);
  if (line.rfind("version ", 0) != 0)
    throw_user_error({}, str_cat(where, " is damaged: its second line is '", line, "', expected 'version <n>'"));
  version = line.substr(8);
  if (version != kExportVersion)
    throw_user_error({}, str_cat(where, " is a tilelang kernel of format version ", version,
                                 ", which this release does not read (it reads version ", kExportVersion,
                                 "); export the kernel again with this release"));
  bool signature = false;
  while (!signature && std::getline(in, line)) {
    size_t space = line.find(' ');
    std::string key = line.substr(0, space), value = space == std::string::npos ? "" : line.substr(space + 1);
    if (line == "signature") {
      signature = true;
    } else if (key == "target") {
      d.target = value;
    } else if (key == "built_on") {
      built_on = value;
    } else if (key == "meta") {
      d.meta = value;
    } else if (key == "file" && value.rfind(' ') != std::string::npos) {
      size_t sp = value.rfind(' ');
      d.files.emplace_back(value.substr(0, sp), value.substr(sp + 1));
    } else {
      throw_user_error({}, str_cat(where, " is damaged: unexpected line '", line, "'"));
    }
  }
  if (d.target.empty() || built_on.empty() || !signature)
    throw_user_error({}, str_cat(where, " is damaged: it lacks one of the lines 'target', 'built_on', 'signature'"));
  if (built_on != this_machine())
    throw_user_error({}, str_cat(dir, " holds a kernel built for ", built_on, ", this machine is ", this_machine(),
                                 "; export it on a machine like this one"));
  std::stringstream rest;
  rest << in.rdbuf();
  d.signature = rest.str();
  // Every file the loader may read is listed and matches its checksum, and nothing
  // unlisted sits beside them.
  std::set<std::string> listed;
  for (const auto& [name, digest] : d.files) {
    if (name.empty() || fs::path(name).filename().string() != name || name == kExportFile)
      throw_user_error({}, str_cat(where, " lists the file '", name, "', which is not a plain file name"));
    listed.insert(name);
    fs::path p = fs::path(dir) / name;
    std::error_code ec;
    if (fs::is_symlink(p, ec))
      throw_user_error({}, str_cat("the exported kernel in ", dir, " has ", name,
                                   " as a symbolic link; an export holds plain files only"));
    if (!fs::is_regular_file(p, ec))
      throw_user_error({}, str_cat("the exported kernel in ", dir, " is incomplete: ", name, " is missing"));
    if (checksum(read_text(p)) != digest)
      throw_user_error({}, str_cat("the exported kernel in ", dir, " is damaged: ", name,
                                   " does not match its checksum in ", kExportFile));
  }
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    std::string name = e.path().filename().string();
    if (name != kExportFile && !listed.count(name))
      throw_user_error({}, str_cat("the exported kernel in ", dir, " holds ", name, ", which ", kExportFile,
                                   " does not list; remove it or export the kernel again"));
  }
  return d;
}

std::shared_ptr<Kernel> load_kernel(const std::string& dir) {
  ExportDescription d = read_export(dir);
  // The checked bytes are copied into a private directory (mkdtemp, 0700, files 0600)
  // and loaded from there, each checked once more as it is copied: a file swapped in
  // `dir` after read_export's checks is never loaded. The kernel owns the copy.
  std::string error;
  std::error_code tmp_error;
  fs::path tmp_root = fs::temp_directory_path(tmp_error);
  if (tmp_error)
    throw_environment_error(str_cat("no temporary directory to load the exported kernel in ", dir,
                                    " into: ", tmp_error.message(), "; point TMPDIR at a writable directory"));
  std::optional<std::string> made = make_temp_dir(tmp_root.string(), "tilelang-load-", &error);
  if (!made)
    throw_environment_error(str_cat("cannot make a private directory to load the exported kernel in ", dir,
                                    " from, under ", tmp_root.string(), ": ", error,
                                    "; point TMPDIR at a writable directory with free space"));
  const std::string tmp = *made;
  try {
    for (const auto& [name, digest] : d.files) {
      std::string data = read_text(fs::path(dir) / name);
      if (checksum(data) != digest)
        throw_user_error({}, str_cat("the exported kernel in ", dir, " changed while it was loaded: ", name,
                                     " no longer matches its checksum in ", kExportFile));
      if (!write_private_file((fs::path(tmp) / name).string(), data))
        throw_user_error({}, str_cat("cannot copy ", name, " of the exported kernel in ", dir, " to ", tmp, ": ",
                                     std::strerror(errno)));
    }
    std::shared_ptr<Kernel> k = load_kernel(d.signature, d.target, tmp);
    k->set_origin(tmp, "", tmp);
    return k;
  } catch (const std::runtime_error& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    if (dynamic_cast<const UserError*>(&e)) throw;
    throw_user_error({}, str_cat("the exported kernel in ", dir, " does not load: ", e.what()));
  }
}

}  // namespace tl
