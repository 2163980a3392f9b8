// T.annotate_layout on global buffers (kernel parameters), as TileLang applies it: the
// element at logical index I of an annotated buffer lives at the row-major position
// forward(I) of the layout's output shape (docs/design/cuda_layouts.md, "Annotated
// global layouts").
#pragma once

#include "ir/ir.h"

namespace tl {

// The marker the frontend leaves for a global buffer's annotated layout (python/
// tilelang/language/annotations.py): a serial loop nest over the buffer's shape whose
// body is `tl::global_layout(X[i0, ..., in], f0, ..., fm)`, f the layout's output
// indices as expressions of the loop variables.
inline constexpr const char* kGlobalLayoutMarker = "tl::global_layout";

// Takes the markers out and checks each layout (a bijection onto an output of the
// buffer's element count). Every access of the kernel to an annotated buffer then
// goes through its layout: the buffer becomes one of the layout's output shape, loads
// and stores (guarded by the logical bounds) and addresses handed to device functions
// index it at forward(I), and the tile ops that touch it (copy, fill, atomic,
// transpose, im2col) become element loops first, so no bulk or vector path assumes
// contiguity the layout does not keep.
PrimFunc apply_global_layouts(const PrimFunc& f);

}  // namespace tl
