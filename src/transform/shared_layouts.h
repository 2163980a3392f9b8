// T.annotate_layout on shared tiles (docs/design/cuda_layouts.md, "Annotated shared
// layouts").
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// The marker the frontend leaves for a shared tile whose annotated layout it
// recognized as one of the 16-byte-chunk XOR swizzles (python/tilelang/language/
// annotations.py): `tl::shared_layout(&tile[0, ..., 0], row_shift, row_mask)`.
inline constexpr const char* kSharedLayoutMarker = "tl::shared_layout";

// Takes the markers out. On CUDA targets each marked tile that is not a T.gemm
// operand (the gemm lowering chooses its operands' layouts) gets the layout
// (Layout::xor_chunks), so that every access to it goes through it: copies (TMA
// writes it with the matching hardware swizzle where one exists), loads, stores and
// addresses handed to device functions. The cpu and Metal targets keep logical
// layouts, as they keep every annotated on-chip layout (global ones: global_layouts.h).
PrimFunc apply_shared_layouts(const PrimFunc& f, const Target& target);

}  // namespace tl
