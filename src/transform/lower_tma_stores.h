// Epilogue stores through TMA on sm_90 (docs/design/hopper.md, "Epilogue stores
// through TMA"): `T.copy(C_shared, C[...])` as one bulk tensor copy per box.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

class LayoutFacts;  // transform/lower_fragments.h

// On CUDA targets with TMA, a T.copy from a whole shared tile to a region of a
// tensor parameter that TMA can do (the rules of the pipelines' TMA loads, through
// tma_tile_stores) becomes: every thread fences its generic writes for the async
// proxy (tl::fence_proxy_async), a block barrier, and the first thread of the block
// (of the T.ws region) issuing tl::tma_store per box, committing them and waiting
// until they have read the tile. Parts of a box outside the tensor are not written,
// as the element-wise copy's predicates drop them. Other copies are left for
// lower_fragments. Runs before lower_fragments, whose shared layouts (gemm operand
// swizzles) it reads from `facts`, so a swizzled tile is stored with the matching TMA
// swizzle.
PrimFunc lower_tma_stores(const PrimFunc& f, LayoutFacts& facts);

// On by default (pass config tl.stage_fragment_stores: False turns it off): on
// targets with TMA, a top-level T.copy of a whole 2-D fragment to a tensor parameter
// (`T.copy(C_local, C[by * bM, bx * bN])`) goes through a shared tile of the tensor's
// dtype, which lower_tma_stores then stores with TMA, when a shared buffer that is
// done with by then (a pipeline stage) is at least as big, so that
// plan_shared_memory gives the tile its bytes and the kernel asks for no more shared
// memory than before.
PrimFunc stage_fragment_stores(const PrimFunc& f, const Target& target);

}  // namespace tl
