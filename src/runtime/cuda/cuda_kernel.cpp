// Lazy module loading per device, and the launch with driver errors that name
// the kernel and its launch shape; kernels that call T.sync_grid are launched
// cooperatively, after a check that their grid fits on the GPU at once.
#include "runtime/cuda/cuda_kernel.h"

#include <atomic>
#include <cctype>

#include "runtime/cuda/cuda_api.h"

namespace tl {
namespace {

std::atomic<PtxCompiler> ptx_compiler{nullptr};
std::atomic<int64_t> modules_loaded{0};

}  // namespace

int64_t cuda_modules_loaded() {
  return modules_loaded.load();
}

void set_ptx_compiler(PtxCompiler compiler) {
  ptx_compiler.store(compiler);
}

CudaKernel::CudaKernel(KernelSignature sig, Target target, std::string source, std::vector<char> cubin,
                       std::vector<CudaEntry> entries, std::vector<std::string> compile_flags)
    : Kernel(std::move(sig), std::move(target), std::move(source), ""),
      cubin_(std::move(cubin)),
      entries_(std::move(entries)),
      compile_flags_(std::move(compile_flags)),
      functions_(new std::atomic<void*>[kMaxDevices * entries_.size()]),
      residency_(kMaxDevices * entries_.size()),
      last_cooperative_(kMaxDevices, nullptr),
      modules_(kMaxDevices, {nullptr, nullptr}) {
  if (entries_.size() != signature().launches.size())
    throw std::runtime_error(str_cat("kernel '", signature().name, "': ", entries_.size(), " cuda entries for ",
                                     signature().launches.size(), " launches"));
  for (const LaunchSpec& l : signature().launches) {
    std::array<unsigned, 3> t{1, 1, 1};
    for (size_t i = 0; i < l.threads.size() && i < 3; ++i) t[i] = unsigned(l.threads[i]);
    threads_.push_back(t);
  }
  for (size_t i = 0; i < kMaxDevices * entries_.size(); ++i) functions_[i].store(nullptr, std::memory_order_relaxed);
}

CudaKernel::~CudaKernel() {
  const CudaDriver* d = cuda_driver();
  if (!d) return;
  CUcontext previous = nullptr;
  bool switched = false;
  for (int device = 0; device < kMaxDevices; ++device) {
    auto [mod, ctx] = modules_[device];
    if (!mod && !last_cooperative_[device]) continue;
    if (!switched) d->cuCtxGetCurrent(&previous);
    switched = true;
    d->cuCtxSetCurrent(static_cast<CUcontext>(ctx));  // errors ignored: the driver may be shutting down
    if (last_cooperative_[device] && d->cuEventDestroy)
      d->cuEventDestroy(static_cast<CUevent>(last_cooperative_[device]));
    if (mod) {
      d->cuModuleUnload(static_cast<CUmodule>(mod));
      modules_loaded.fetch_sub(1);
    }
  }
  if (switched) d->cuCtxSetCurrent(previous);
}

void* CudaKernel::function_for(int device_id, size_t index) const {
  if (device_id >= 0 && device_id < kMaxDevices)
    if (void* fn = functions_[device_id * entries_.size() + index].load(std::memory_order_acquire)) return fn;
  load_functions(device_id);
  return functions_[device_id * entries_.size() + index].load(std::memory_order_acquire);
}

void CudaKernel::load_functions(int device_id) const {
  if (device_id < 0 || device_id >= kMaxDevices)
    throw_user_error({}, str_cat("kernel '", signature().name, "': cuda device ", device_id,
                                 " is out of the range this runtime supports (0..", kMaxDevices - 1, ")"));
  std::lock_guard<std::mutex> lock(mu_);
  std::atomic<void*>* slots = &functions_[device_id * entries_.size()];
  if (slots[0].load(std::memory_order_acquire)) return;
  const CudaDriver* d = cuda_driver();
  if (!d)
    throw_environment_error(str_cat("kernel '", signature().name,
                                    "' targets cuda, but the CUDA driver (libcuda.so.1) could not be loaded"));
  CUdevice dev;
  check_cuda(d->cuDeviceGet(&dev, device_id), str_cat("cuDeviceGet(", device_id, ")"));
  CUcontext ctx;
  check_cuda(d->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check_cuda(d->cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  CUmodule mod;
  CUresult r = d->cuModuleLoadData(&mod, cubin_.data());
  if (r == kNoBinaryForGpu) r = load_as_ptx(device_id, &mod);
  check_cuda(r, str_cat("loading the cubin of kernel '", signature().name, "' (built for ", target().arch, ")"));
  modules_[device_id] = {mod, ctx};
  modules_loaded.fetch_add(1);
  std::vector<void*> fns;
  for (const CudaEntry& e : entries_) {
    CUfunction fn;
    check_cuda(d->cuModuleGetFunction(&fn, mod, e.name.c_str()), "cuModuleGetFunction(" + e.name + ")");
    if (e.shared_bytes > int64_t{48} * 1024)  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
      check_cuda(d->cuFuncSetAttribute(fn, 8, int(e.shared_bytes)),
                 str_cat("kernel '", signature().name, "' (", e.name, ") asking for ", e.shared_bytes,
                         " bytes of shared memory"));
    fns.push_back(fn);
  }
  bool cooperative = false;
  int sms = 0;  // the device's SM count, asked once
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (!signature().launches[i].cooperative) continue;
    if (!cooperative)
      check_cuda(d->cuDeviceGetAttribute(&sms, 16, dev), "the SM count");  // CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
    cooperative = true;
    const std::array<unsigned, 3>& t = threads_[i];
    int per_sm = 0;
    check_cuda(d->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fns[i], int(t[0] * t[1] * t[2]),
                                                              size_t(entries_[i].shared_bytes)),
               str_cat("the occupancy of kernel '", signature().name, "' (", entries_[i].name, ")"));
    residency_[device_id * entries_.size() + i] = Residency{per_sm, sms};
  }
  if (cooperative && !last_cooperative_[device_id])  // here, where the device's context is current
    check_cuda(d->cuEventCreate(&last_cooperative_[device_id], 2), "cuEventCreate");  // CU_EVENT_DISABLE_TIMING
  // Slot 0 last: its being set tells the unlocked readers that all are.
  for (size_t i = fns.size(); i-- > 0;) slots[i].store(fns[i], std::memory_order_release);
}

// A cubin runs only on its own major arch: code built for an older GPU (sm_80 on an
// sm_90 card) goes to the driver as PTX, which it compiles for the card, as nvcc's
// default compute_XX PTX would. Arch-specific targets (sm_90a) have no such PTX.
int CudaKernel::load_as_ptx(int device_id, CUmodule* mod) const {
  const CudaDriver* d = cuda_driver();
  CUdevice dev;
  int major = 0, minor = 0;
  d->cuDeviceGet(&dev, device_id);
  d->cuDeviceGetAttribute(&major, 75, dev);  // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
  d->cuDeviceGetAttribute(&minor, 76, dev);
  const std::string& arch = target().arch;
  const int built = target().sm_version();
  if (arch.empty() || !std::isdigit(static_cast<unsigned char>(arch.back())) || built > major * 10 + minor)
    throw_user_error(
        {}, str_cat("kernel '", signature().name, "' was built for ", arch, ", which cannot run on this GPU (sm_",
                    major, minor, "); compile it with target=\"cuda\" to build for the present GPU"));
  PtxCompiler compile_ptx = ptx_compiler.load();
  if (!compile_ptx)
    throw_user_error(
        {}, str_cat("kernel '", signature().name, "' was built for ", arch, " and this GPU is sm_", major, minor,
                    ": running it needs its PTX built from the source by NVRTC, which the "
                    "tilelang_cpp runtime library does not carry; export the kernel compiled for sm_",
                    major, minor, ", or link the compiler library (tilelang_cpp::compiler)"));
  std::vector<char> ptx = compile_ptx(source(), signature().name, "compute_" + std::to_string(built), compile_flags_);
  ptx.push_back('\0');
  return d->cuModuleLoadData(mod, ptx.data());
}

void CudaKernel::launch(size_t index, const KernelArg* slots, size_t num_slots, const std::array<int64_t, 3>& grid,
                        int device_id, void* stream) const {
  void* fn = function_for(device_id, index);
  constexpr size_t kInline = 32;
  void* inline_params[kInline];
  std::vector<void*> heap_params;
  void** params = inline_params;
  if (num_slots > kInline) {
    heap_params.resize(num_slots);
    params = heap_params.data();
  }
  // A TMA map's slot points at its 128 bytes, which are the parameter's value.
  const size_t first_map = size_t(signature().num_args());
  for (size_t i = 0; i < num_slots; ++i) params[i] = i < first_map ? const_cast<KernelArg*>(&slots[i]) : slots[i].ptr;
  if (signature().launches[index].cooperative) return launch_cooperative(index, fn, params, grid, device_id, stream);
  const std::array<unsigned, 3>& block = threads_[index];
  const CudaEntry& entry = entries_[index];
  CUresult r = cuda_driver()->cuLaunchKernel(fn, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]), block[0],
                                             block[1], block[2], unsigned(entry.shared_bytes), stream, params, nullptr);
  if (r == 0) return;
  check_cuda(r, str_cat("launching kernel '", signature().name, "' (", entry.name, ") with grid (", grid[0], ", ",
                        grid[1], ", ", grid[2], "), block (", block[0], ", ", block[1], ", ", block[2], "), ",
                        entry.shared_bytes, " bytes of shared memory"));
}

// A grid barrier waits for every block, so every block must be resident at once: a
// grid that does not fit is refused here with the numbers (the driver would answer
// CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE).
void CudaKernel::launch_cooperative(size_t index, void* fn, void** params, const std::array<int64_t, 3>& grid,
                                    int device_id, void* stream) const {
  const CudaDriver* d = cuda_driver();
  const std::array<unsigned, 3>& block = threads_[index];
  const CudaEntry& entry = entries_[index];
  const Residency& fit = residency_[device_id * entries_.size() + index];
  const int64_t blocks = grid[0] * grid[1] * grid[2], most = fit.per_sm * fit.sms;
  if (blocks > most)
    throw_user_error(
        signature().launches[index].span,
        str_cat("kernel '", signature().name, "' (", entry.name,
                ") calls T.sync_grid(), so every block of its grid must be resident on the GPU at once, but its grid (",
                grid[0], ", ", grid[1], ", ", grid[2], ") has ", blocks, " blocks and at most ", most, " fit (",
                fit.per_sm, " per SM x ", fit.sms, " SMs, with ", block[0] * block[1] * block[2], " threads and ",
                entry.shared_bytes, " bytes of dynamic shared memory per block); launch at most ", most,
                " blocks and let each loop over its share of the work (a persistent kernel)"));
  std::lock_guard<std::mutex> lock(cooperative_mu_);
  CUevent last = last_cooperative_[device_id];
  check_cuda(d->cuStreamWaitEvent(stream, last, 0), "cuStreamWaitEvent (ordering cooperative launches)");
  CUresult r = d->cuLaunchCooperativeKernel(fn, unsigned(grid[0]), unsigned(grid[1]), unsigned(grid[2]), block[0],
                                            block[1], block[2], unsigned(entry.shared_bytes), stream, params);
  check_cuda(r, str_cat("launching kernel '", signature().name, "' (", entry.name, ") cooperatively with grid (",
                        grid[0], ", ", grid[1], ", ", grid[2], "), block (", block[0], ", ", block[1], ", ", block[2],
                        "), ", entry.shared_bytes, " bytes of shared memory"));
  check_cuda(d->cuEventRecord(last, stream), "cuEventRecord (ordering cooperative launches)");
}

}  // namespace tl
