// Refuses accesses to on-chip buffers (shared memory, fragments, registers) that a
// loop provably takes outside the buffer: such a write lands in another buffer's
// memory on the GPU, and in the host's memory in the emulator.
#pragma once

#include "ir/ir.h"

namespace tl {

void check_onchip_bounds(const PrimFunc& f);

}  // namespace tl
