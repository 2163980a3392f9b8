// T.vectorized copies between shared memory and registers as vector accesses: a
// loop `for v in T.vectorized(n): dst[f(v)] = src[g(v)]` whose shared-memory side
// is provably contiguous and aligned becomes tl::load_vec / tl::store_vec /
// tl::copy_vec of up to 16 bytes, as TileLang's vectorizer does (one LDS.128 /
// STS.128 where the loop copies 16 bytes).
#pragma once

#include "ir/ir.h"

namespace tl {

// On CUDA, after the simplifier. A loop of kind Vectorized with a constant extent
// whose body is one store of a load of the same dtype (lets of pure index
// arithmetic before it allowed), between a shared buffer and a local one or two
// shared buffers, is split into runs of w elements (w: the widest power of two with
// w * sizeof(elem) <= 16 that divides the extent and that the proof below accepts),
// one vector access each. The proof works on the flat offset of each side (through
// the buffer's layout, so swizzles are included): with v = q * w + e, e in [0, w),
// the offset must be G + e with G independent of e and, on a shared side, a multiple
// of w. Swizzles permute aligned 16-byte chunks (xor of bits above the chunk), so an
// aligned run inside one chunk stays contiguous and the proof goes through them.
// Loops it cannot prove stay element-wise loops.
PrimFunc vectorize_loops(const PrimFunc& f);

}  // namespace tl
