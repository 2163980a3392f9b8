// A loop whose whole body is one `if` without an `else` whose condition is the same in
// every iteration (`for k: if (C_local[0] >= 0) { B[k] = A[k]; }`, the T.Parallel body
// `if C_local[i] >= 0` once the loop over a thread's elements no longer varies i)
// becomes the `if` around the loop: the condition is evaluated once, and the loop left
// is a plain one (vectorize_loops may then widen it). Every target.
//
// The condition is invariant when it reads neither the loop variable nor a variable
// bound inside the loop, and any buffer it reads is not written in the loop (no store
// to it, no device-function call or barrier there, which could write it). One that
// reads memory is hoisted only out of a loop with a constant positive trip count: an
// empty loop never evaluated it, and its read could be out of bounds there. Parallel
// loops are left whole (a nest of them is spread over the threads as one block op);
// the serial, unrolled and vectorized loops of a thread's elements are the ones here.
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc hoist_invariant_ifs(const PrimFunc& f);

}  // namespace tl
