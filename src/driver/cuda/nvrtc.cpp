// dlopen / dlsym of libnvrtc and NVRTC compilation (nvrtc.h).
#include "driver/cuda/nvrtc.h"

#include <dlfcn.h>

#include "driver/program_source.h"
#include "runtime/cuda/cuda_api.h"
#include "support/error.h"
#include "support/logging.h"

namespace tl {
namespace {

template <class F>
bool load(void* h, F& fn, const char* name) {
  fn = reinterpret_cast<F>(dlsym(h, name));
  return fn != nullptr;
}

}  // namespace

const Nvrtc* nvrtc() {
  static const Nvrtc* n = []() -> const Nvrtc* {
    void* h = dlopen_first({"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"});
    if (!h) return nullptr;
    static Nvrtc api;
    bool ok = load(h, api.nvrtcCreateProgram, "nvrtcCreateProgram") &&
              load(h, api.nvrtcCompileProgram, "nvrtcCompileProgram") &&
              load(h, api.nvrtcGetCUBINSize, "nvrtcGetCUBINSize") && load(h, api.nvrtcGetCUBIN, "nvrtcGetCUBIN") &&
              load(h, api.nvrtcGetPTXSize, "nvrtcGetPTXSize") && load(h, api.nvrtcGetPTX, "nvrtcGetPTX") &&
              load(h, api.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize") &&
              load(h, api.nvrtcGetProgramLog, "nvrtcGetProgramLog") &&
              load(h, api.nvrtcDestroyProgram, "nvrtcDestroyProgram") && load(h, api.nvrtcVersion, "nvrtcVersion");
    return ok ? &api : nullptr;
  }();
  return n;
}

std::string nvrtc_version() {
  const Nvrtc* n = nvrtc();
  if (!n) return "";
  int major = 0, minor = 0;
  n->nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

namespace {

// Creates `prog` from `source` and compiles it with our options and `extra_flags`;
// `log` gets NVRTC's program log.
nvrtcResult run_nvrtc(const Nvrtc& n, const std::string& source, const std::string& name, const std::string& arch,
                      const std::string& include_dir, const std::vector<std::string>& extra_flags, nvrtcProgram& prog,
                      std::string& log) {
  if (n.nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(), 0, nullptr, nullptr) != 0)
    throw_internal_error(__FILE__, __LINE__, "nvrtcCreateProgram failed");
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-I" + include_dir, "--std=c++17", "-default-device"};
  for (const std::string& f : extra_flags) opts.push_back(f);
  std::vector<const char*> cargs;
  for (const std::string& o : opts) cargs.push_back(o.c_str());
  nvrtcResult r = n.nvrtcCompileProgram(prog, int(cargs.size()), cargs.data());
  size_t log_size = 0;
  n.nvrtcGetProgramLogSize(prog, &log_size);
  log.assign(log_size, '\0');
  if (log_size) n.nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && log.back() == '\0') log.pop_back();
  return r;
}

}  // namespace

std::optional<std::string> nvrtc_rejects(const std::string& arch, const std::string& include_dir,
                                         const std::vector<std::string>& extra_flags) {
  const Nvrtc* n = nvrtc();
  if (!n) return std::nullopt;
  nvrtcProgram prog = nullptr;
  std::string log;
  nvrtcResult r = run_nvrtc(*n, "", "tl_flag_check", arch, include_dir, extra_flags, prog, log);
  n->nvrtcDestroyProgram(&prog);
  // NVRTC answers some malformed options (-Xptxas without its value) with success
  // and an error in the log.
  if (r == 0 && log.find("error") == std::string::npos) return std::nullopt;
  return log.empty() ? str_cat("nvrtcCompileProgram returned ", int(r)) : log;
}

std::vector<char> nvrtc_compile(const std::string& source, const std::string& name, const std::string& arch,
                                const std::string& include_dir, const std::vector<std::string>& extra_flags) {
  const Nvrtc* n = nvrtc();
  if (!n)
    throw_environment_error(
        "the cuda target needs NVRTC (libnvrtc.so), which was not found; install the CUDA toolkit "
        "or put its lib directory on the loader path");
  nvrtcProgram prog = nullptr;
  std::string log;
  nvrtcResult r = run_nvrtc(*n, source, name, arch, include_dir, extra_flags, prog, log);
  if (r != 0) {
    n->nvrtcDestroyProgram(&prog);
    // A valid-looking arch this NVRTC is too old (or too new) to know: the machine's
    // toolkit lacks it (an EnvironmentError), not a code generation bug.
    if (log.find("--gpu-architecture") != std::string::npos)
      throw_environment_error(str_cat("the CUDA toolkit's NVRTC cannot compile for ", arch, " (it answered: ",
                                      log.substr(0, log.find('\n')), "); pick an arch it supports or a newer toolkit"));
    if (is_program_source(source))
      throw_user_error({}, str_cat("the CUDA source of T.CUDASourceCodeKernel failed to compile for ", arch,
                                   " (the kernel takes the prim_func's parameters in order, then its dynamic "
                                   "dimensions):\n",
                                   log));
    throw_internal_error(__FILE__, __LINE__, str_cat("generated CUDA code failed to compile for ", arch, ":\n", log));
  }
  // NVRTC's warnings, and what ptxas reports when asked (-Xptxas=-v: registers,
  // spills, shared memory): to the info log then, else to the debug log.
  if (log.find_first_not_of(" \n") != std::string::npos) {
    bool asked = false;
    for (const std::string& f : extra_flags)
      asked = asked || f == "--ptxas-options=-v" || f == "--ptxas-options=--verbose";
    tl::log(asked ? LogLevel::Info : LogLevel::Debug,
            str_cat("NVRTC's log for kernel '", name, "' (", arch, "):\n", log));
  }
  const bool ptx = arch.rfind("compute_", 0) == 0;
  size_t size = 0;
  (ptx ? n->nvrtcGetPTXSize : n->nvrtcGetCUBINSize)(prog, &size);
  std::vector<char> out(size);
  (ptx ? n->nvrtcGetPTX : n->nvrtcGetCUBIN)(prog, out.data());
  n->nvrtcDestroyProgram(&prog);
  return out;
}

}  // namespace tl
