// A T.reduce_* from a whole shared tile into a register fragment (CUDA): the tile is
// first copied into a register fragment of its own, so that the reduction runs on the
// register path (each thread folds the elements it holds, the lanes holding a row
// combine them with shuffles) instead of one thread per row folding it out of shared
// memory, whose reads down a column of a tile with rows of 32 words or a multiple all
// fall in one bank.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

// On CUDA targets, `T.reduce_*(S, d, dim=1)` with S a whole 2-d shared (or global)
// tile of constant shape [M, N], d a whole 1-d fragment of M elements, a sum, abssum,
// max, min or absmax, becomes `T.copy(S, S_regs)` and the reduction of S_regs, a
// fragment of S's shape and dtype allocated around the two, when N is a power of two
// and S_regs needs at least one and at most 64 registers a thread. Runs before
// lower_fragments, which lays S_regs out as the reduction's source (the rows d is
// made of).
PrimFunc stage_reduction_sources(const PrimFunc& f, const Target& target);

}  // namespace tl
