// A T.Parallel nest that reads a register fragment only at a shifted position of its
// variables (`acc[i + s * 16, j]` in a loop over the fragment's whole shape, `s`
// defined outside the loop: DeepSeek v3.2's sparse_mla_bwd copies half of its
// accumulator at a time so) runs each iteration on the thread that holds the element
// it reads, as TileLang's loop layout does: the loop is renumbered by the element,
// `for i2, j in T.Parallel(M, N)` with `i = (i2 - s * 16) mod M`, and the read becomes
// `acc[i2, j]`, which layout inference takes as the loop's own fragment. Iteration
// order in T.Parallel is unspecified, so only which thread runs an iteration changes.
// A read whose position falls outside the fragment (`i + s * 16 >= M`, which the user
// guards) gets the element the shift wraps to instead of reading past the registers;
// an unguarded one that the loops alone take outside is refused earlier
// (check_bounds.h). Before, such a fragment went to shared memory.
//
// Taken only where every fragment access of the nest is such a read with the same
// shift (no store, no access by the plain variables, no tile op on a fragment), the
// fragment's shape is the loop's, and the shift is made of variables defined outside
// the loop and constants.
// CUDA and Metal targets (the cpu target keeps block-wide arrays).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc align_shifted_fragment_reads(const PrimFunc& f);

}  // namespace tl
