// Refuses accesses to on-chip buffers (shared memory, fragments, registers) that a
// loop provably takes outside the buffer: such a write lands in another buffer's
// memory on the GPU, and in the host's memory in the emulator.
#pragma once

#include "ir/ir.h"

namespace tl {

void check_onchip_bounds(const PrimFunc& f);

// A fragment that T.Parallel loops write past its shape, each write of every iteration
// at a proven index (`sinks = T.alloc_fragment([heads])` written as `sinks[i]` for i in
// T.Parallel(block_M) with heads < block_M, as TileLang's attention-sink backward
// examples do): TileLang lays a fragment out over the loops that write it, so those
// writes land in registers of its own and the later reads at the same indices get
// them. Here the fragment is grown to the extent the writes cover, with a warning
// naming the write; reads past what is written, and writes below 0, stay errors
// (check_onchip_bounds). Shared memory and registers are never grown.
PrimFunc grow_overindexed_fragments(const PrimFunc& f);

}  // namespace tl
