// CPU C++ generation: one `extern "C"` function that runs one thread block,
// called by the CPU runtime for every block of the grid (blocks run in parallel
// across cores).
#pragma once

#include "ir/ir.h"
#include "runtime/signature.h"

namespace tl {

struct CpuSource {
  std::string code;        // the whole translation unit
  std::string entry_name;  // the block function's symbol
};

CpuSource codegen_cpu(const PrimFunc& lowered, const KernelSignature& sig);

}  // namespace tl
