// Refuses a T.Parallel store that every iteration makes to one fragment element
// (`frag[1] = A[i]` in a loop over i): the iterations run on different threads of the
// block, which race for the element, so it ends up with any one of their values (the
// cpu target, which runs them in order, would keep the last). TileLang refuses it too. A store at index 0 of every dim
// (`tmp[0] = A[i] * 2`) is a per-iteration scalar: each thread keeps its own copy
// (lower_fragments), as in TileLang. Reducers (T.finalize_reducer's fragments), nests
// that write only per-thread registers (each thread runs them whole), and stores
// under a condition on every loop variable of the nest (`if i == 0: frag[1] = A[i]`)
// are left alone.
#pragma once

#include "ir/ir.h"

namespace tl {

void check_parallel_stores(const PrimFunc& f);

}  // namespace tl
