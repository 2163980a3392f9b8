// T.annotate_layout on global buffers (kernel parameters), as TileLang applies it: the
// element at logical index I of an annotated buffer lives at the row-major position
// forward(I) of the layout's output shape (docs/design/cuda_layouts.md, "Annotated
// global layouts").
#pragma once

#include "ir/attrs.h"
#include "ir/ir.h"

namespace tl {

// Takes the markers out and checks each layout (a bijection onto an output of the
// buffer's element count). Every access of the kernel to an annotated buffer then
// goes through its layout: the buffer becomes one of the layout's output shape, loads
// and stores (guarded by the logical bounds) and addresses handed to device functions
// index it at forward(I), and the tile ops that touch it (copy, fill, atomic,
// transpose, im2col) become element loops first, so no bulk or vector path assumes
// contiguity the layout does not keep.
PrimFunc apply_global_layouts(const PrimFunc& f);

}  // namespace tl
