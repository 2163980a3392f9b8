// What a kernel costs, counted from its IR before lowering: the floating-point
// operations and the global-memory traffic of every block, for a roofline estimate
// (tilelang.tools.Analyzer). The count is a model of the program as written, not of
// the generated code: caches, coalescing and re-reads by other blocks are not seen.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "ir/ir.h"

namespace tl {

struct KernelCost {
  // T.gemm's multiply-adds (2 per product), by the dtype of its A operand.
  std::map<std::string, int64_t> gemm_flops;
  // Float arithmetic of the other statements (+ - * / min max), by result dtype.
  std::map<std::string, int64_t> scalar_flops;
  // Bytes read from and written to global buffers (tensor parameters and
  // T.alloc_global workspaces), by T.copy, T.atomic_* and element accesses.
  int64_t global_read_bytes = 0;
  int64_t global_write_bytes = 0;
};

// Counts `f` over all its blocks. Both branches of a condition count (an upper
// bound). Throws a UserError, naming the loop or kernel and its source line, when a
// trip count or grid size is not a compile-time constant, or on a while loop.
KernelCost kernel_cost(const PrimFunc& f);

}  // namespace tl
