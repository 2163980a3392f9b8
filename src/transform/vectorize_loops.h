// T.vectorized copies as vector accesses: a loop `for v in T.vectorized(n):
// dst[f(v)] = src[g(v)]` whose memory sides are provably contiguous and aligned
// becomes tl::load_vec / tl::store_vec / tl::copy_vec of up to 16 bytes, as
// TileLang's vectorizer does (one LDS.128 / STS.128 / LDG.128 where the loop moves 16
// bytes).
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// On CUDA, after the simplifier. A loop of kind Vectorized with a constant extent
// whose body is stores of loads of the same dtype or of a value that is the same in
// every iteration (a fill: free of the loop variable and of calls; lets of pure index
// arithmetic before them allowed; no store writing a buffer another one reads) is split into
// one loop per store, and each store whose sides are shared tiles, local arrays or
// tensor parameters (at least one in memory) is moved in runs of w elements (w: the
// widest power of two with w * sizeof(elem) <= 16 that divides the extent and that the
// proof below accepts), one vector access each (tl::fill_vec for a fill, its value
// written w times); the other stores stay element-wise
// loops. The proof works on the flat offset of each side (through the buffer's
// layout, so swizzles are included): with v = q * w + e, e in [0, w), the offset must
// be G + e with G independent of e and, on a memory side, a multiple of w (shared
// buffers start 16-byte aligned, tensor parameters at target.tensor_base_alignment(),
// which the runtime checks). Swizzles permute aligned 16-byte chunks (xor of bits above
// the chunk), so an aligned run inside one chunk stays contiguous and the proof goes
// through them.
PrimFunc vectorize_loops(const PrimFunc& f, const Target& target);

}  // namespace tl
