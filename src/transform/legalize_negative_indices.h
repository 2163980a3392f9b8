// A buffer index that the loop, block and thread ranges prove negative counts from the
// end of its dimension, as a negative Python index does (TileLang's rule): `A[-i - 1]`
// in a loop over i reads A[n - 1 - i]. An index whose sign the ranges leave open is
// kept as written; lanes of `A[T.Ramp(...)]` choose at run time (the frontend writes
// that select).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc legalize_negative_indices(const PrimFunc& f);

}  // namespace tl
