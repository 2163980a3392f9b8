// T.annotate_layout on shared tiles (docs/design/cuda_layouts.md, "Annotated shared
// layouts").
#pragma once

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// Takes the markers out. On CUDA targets each marked tile that is not a T.gemm
// operand (the gemm lowering chooses its operands' layouts) gets the layout
// (Layout::xor_chunks), so that every access to it goes through it: copies (TMA
// writes it with the matching hardware swizzle where one exists), loads, stores and
// addresses handed to device functions. The cpu and Metal targets keep logical
// layouts, as they keep every annotated on-chip layout (global ones: global_layouts.h).
PrimFunc apply_shared_layouts(const PrimFunc& f, const Target& target);

}  // namespace tl
