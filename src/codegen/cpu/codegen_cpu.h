// CPU C++ generation: one `extern "C"` function per T.Kernel block that runs one
// thread block, called by the CPU runtime for every block of the grid (blocks run
// in parallel across cores; the kernels of a function one after another).
#pragma once

#include "ir/ir.h"
#include "runtime/signature.h"

namespace tl {

struct CpuSource {
  std::string code;                      // the whole translation unit
  std::vector<std::string> entry_names;  // the block functions' symbols, one per kernel
};

// `kernels`: the lowered parts of one function (split_kernels), in launch order.
CpuSource codegen_cpu(const std::vector<PrimFunc>& kernels, const KernelSignature& sig);

}  // namespace tl
