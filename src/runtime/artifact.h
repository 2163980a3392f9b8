// The files of a compiled kernel (a cache entry, or an exported kernel) and how
// the runtime library loads them without the compiler: the entry names codegen
// gives each launch, and a CUDA artifact's meta.txt (compile.cpp writes both).
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/cuda/cuda_kernel.h"
#include "runtime/signature.h"

namespace tl {

// One kernel of a CUDA artifact as meta.txt records it (codegen_cuda fills it).
struct CudaLaunchInfo {
  std::string entry_name;
  int64_t shared_bytes = 0;  // dynamic shared memory the launch must provide
  // The TMA maps the kernel takes after its arguments, in parameter order.
  std::vector<TmaMapSpec> tma_maps;
  // The block the kernel is launched with: the lowering may add threads to the
  // T.Kernel's (a warp-specialized pipeline's producer warpgroup).
  std::vector<int64_t> threads;
};

// The whole file (empty when it cannot be read).
std::string read_text(const std::filesystem::path& p);
// Writes `data` as the file `p` of a build directory (mode 0600, never through a
// symbolic link). A write that fails (a full disk, a quota, a file size limit) is a
// user error naming the file and the cause: unchecked, the host compiler would get a
// truncated source and fail as if the generated code were wrong.
void write_build_file(const std::filesystem::path& p, std::string_view data);

// The block functions of a CPU artifact, one per launch (codegen_cpu's entry_names).
std::vector<std::string> cpu_entries(const KernelSignature& sig);
// The per-block entries of an emulated CUDA artifact (codegen_cuda's emulation entries).
std::vector<std::string> cuda_emulated_entries(const KernelSignature& sig);
// The emulated Metal kernel's per-threadgroup entry (codegen_metal's emu_entry).
std::string metal_emu_entry_name(const std::string& kernel_name);
// The Metal backend prints one [[kernel]] per function: a second T.Kernel block is
// refused at its line.
void check_one_metal_kernel(const KernelSignature& sig);

// Reads meta.txt of a CUDA artifact (emulated too), one group of lines per kernel in
// launch order: "entry <name>" opens it, then "shared_bytes <n>", "threads <x> [<y>
// <z>]" and one TmaMapSpec record per TMA map the kernel takes. An empty list when
// `dir` has none; a malformed file is a std::runtime_error, so that a cache entry
// holding it is a miss.
std::vector<CudaLaunchInfo> read_meta(const std::filesystem::path& dir);
// The signature with each launch's TMA maps and block as the artifact's meta.txt
// lists them (as given when it has none): the lowering decides both.
KernelSignature with_meta(KernelSignature sig, const std::vector<CudaLaunchInfo>& meta);
// The driver's view of a CUDA artifact's kernels (its meta.txt must list them).
std::vector<CudaEntry> cuda_entries(const std::vector<CudaLaunchInfo>& meta);

}  // namespace tl
