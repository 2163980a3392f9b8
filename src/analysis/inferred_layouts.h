// The layouts a kernel's lowering chose for its on-chip tiles, as tables a plot can
// draw (JITKernel.plot_layouts): which thread and register hold each element of a
// register fragment, and where each element of a swizzled shared tile lives.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tl {

struct InferredLayout {
  std::string buffer;
  DataType dtype;
  std::vector<int64_t> shape;
  bool fragment = false;
  // Per element, in row-major order. A fragment: the (thread, register) pairs that
  // hold it (several when replicated). A shared tile: its physical element offset.
  std::vector<std::vector<std::pair<int64_t, int64_t>>> holders;
  std::vector<int64_t> offsets;
};

// Lowers `f` for `target` and reads the layouts lower_fragments gave the fragments
// that keep their registers and the shared gemm tiles it swizzled; empty on targets
// without that pass (cpu).
std::vector<InferredLayout> inferred_layouts(const PrimFunc& f, const Target& target, const Attrs& pass_configs);

}  // namespace tl
