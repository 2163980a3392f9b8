// See artifact.h.
#include "runtime/artifact.h"

#include <fcntl.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "support/error.h"

namespace fs = std::filesystem;

namespace tl {

std::string read_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_build_file(const fs::path& p, std::string_view data) {
  int fd = open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
  int error = fd < 0 ? errno : 0;
  for (size_t done = 0; !error && done < data.size();) {
    ssize_t n = write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      error = n < 0 ? errno : ENOSPC;
    else
      done += size_t(n);
  }
  if (fd >= 0 && close(fd) != 0 && !error) error = errno;
  if (!error) return;
  const std::string dir = p.parent_path().string();
  throw_user_error({}, str_cat("cannot write ", p.string(), " (", data.size(),
                               " bytes) to build the kernel: ", std::strerror(error), "; free space in ", dir,
                               " or point TILELANG_CACHE_DIR (the cache) and TMPDIR (builds without it) at a "
                               "writable directory with room",
                               error == EFBIG ? ", or raise the file size limit (ulimit -f)" : ""));
}

namespace {

std::string entry_name(const std::string& kernel_name) {
  std::string s;
  for (char c : kernel_name) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "tl_block_" + s;
}

}  // namespace

std::vector<std::string> cpu_entries(const KernelSignature& sig) {
  std::vector<std::string> out;
  for (size_t i = 0; i < sig.launches.size(); ++i) out.push_back(entry_name(kernel_part_name(sig.name, i)));
  return out;
}

std::vector<std::string> cuda_emulated_entries(const KernelSignature& sig) {
  std::vector<std::string> out;
  for (const std::string& e : cpu_entries(sig))
    out.push_back("tl_emu_tl_kernel_" + e.substr(std::string("tl_block_").size()));
  return out;
}

std::string metal_emu_entry_name(const std::string& kernel_name) {
  std::string base = entry_name(kernel_name).substr(std::string("tl_block_").size());
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;  // as CodeGenC::c_ident
  return "tl_emu_" + base + "_kernel";
}

void check_one_metal_kernel(const KernelSignature& sig) {
  if (sig.launches.size() < 2) return;
  throw_user_error(sig.launches[1].span,
                   str_cat("kernel '", sig.name, "' has ", sig.launches.size(),
                           " `with T.Kernel(...)` blocks; the metal target supports one per prim_func (cpu and cuda "
                           "launch several in order). Split it into one prim_func per T.Kernel and call them in turn"));
}

std::vector<CudaLaunchInfo> read_meta(const fs::path& dir) {
  std::vector<CudaLaunchInfo> out;
  std::ifstream in(dir / "meta.txt");
  if (!in) return out;
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string key;
    words >> key;
    if (key.empty()) continue;
    if (key == "entry") {
      out.emplace_back();
      words >> out.back().entry_name;
      continue;
    }
    if (out.empty()) throw std::runtime_error("meta.txt: '" + key + "' before any entry");
    CudaLaunchInfo& l = out.back();
    if (key == "shared_bytes") {
      if (!(words >> l.shared_bytes)) throw std::runtime_error("meta.txt: malformed '" + line + "'");
    } else if (key == "threads") {
      for (int64_t t; words >> t;) l.threads.push_back(t);
    } else if (key == "tma") {
      l.tma_maps.push_back(TmaMapSpec::parse(line));
    }
  }
  return out;
}

KernelSignature with_meta(KernelSignature sig, const std::vector<CudaLaunchInfo>& meta) {
  if (meta.empty()) return sig;
  if (meta.size() != sig.launches.size())
    throw std::runtime_error(str_cat("meta.txt lists ", meta.size(), " kernel(s), the signature of '", sig.name,
                                     "' has ", sig.launches.size()));
  for (size_t i = 0; i < meta.size(); ++i) {
    sig.launches[i].tma_maps = meta[i].tma_maps;
    if (!meta[i].threads.empty()) sig.launches[i].threads = meta[i].threads;
  }
  return sig;
}

std::vector<CudaEntry> cuda_entries(const std::vector<CudaLaunchInfo>& meta) {
  if (meta.empty()) throw std::runtime_error("the artifact has no meta.txt listing its kernels");
  std::vector<CudaEntry> out;
  for (const CudaLaunchInfo& l : meta) out.push_back(CudaEntry{l.entry_name, l.shared_bytes});
  return out;
}

}  // namespace tl
