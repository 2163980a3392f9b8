// Multi-stage software pipelines for T.Pipelined loops (GPU targets).
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// The attribute on a producer copy of a pipelined loop: it may complete
// asynchronously (cp.async); the loop's own wait and barrier order it.
inline constexpr const char* kAsyncCopyAttr = "tl.async_copy";

// For each T.Pipelined(n, num_stages=S) loop with S >= 2 whose body starts with
// copies from global into shared tiles (the producers) followed by the work that
// reads those tiles (the consumers): gives each such tile S stages, issues the
// producers of iterations 0 .. S-2 before the loop, and in iteration k waits for
// stage k % S, issues the producers of iteration k + S - 1 and runs the consumers
// on stage k % S. Loops of another shape are left as they are (still correct,
// just not overlapped).
PrimFunc pipeline_loops(const PrimFunc& f, const Target& target);

}  // namespace tl
