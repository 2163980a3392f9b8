// Barrier placement, for every target (pipeline.cpp): the GPU targets, and the cpu
// target's kernels that run one fiber per thread and need the barriers a GPU would.
#pragma once

#include "ir/ir.h"

namespace tl {

// Inserts the block barriers (__syncthreads) that the block's shared memory needs:
// one before a statement that reads what another statement wrote since the last
// barrier, or writes what another read or wrote since then; loops are analysed
// with their previous iteration in view. Shared memory here is every buffer in
// shared scope and every fragment that stayed block-wide. A statement is a block
// op, a per-thread op, or plain code without barriers inside; compound statements
// (sequences, loops, branches) are planned through. Existing barriers are kept.
PrimFunc plan_barriers(const PrimFunc& f);

}  // namespace tl
