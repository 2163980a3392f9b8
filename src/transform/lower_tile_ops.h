// Replaces every tile-op statement (copy, gemm, fill ...) by its lowering for the
// target, as the op's file in src/ops/ defines it.
#pragma once

#include "ir/attrs.h"
#include "ir/ir.h"
#include "target/target.h"

namespace tl {

PrimFunc lower_tile_ops(const PrimFunc& f, const Target& target);

// Whether a tile op reads or writes a thread's own registers (T.alloc_local,
// T.alloc_var): a fill or copy of those runs on every thread, each on its own copy.
bool touches_registers(const TileOpNode* op);

// A T.Parallel nest that writes only a thread's own registers runs whole on every
// thread, as in TileLang (spread over the threads, each would fill only its share of
// its own copy): the nest `loop` with its parallel loops made serial, or an undefined
// Stmt when it writes anything else.
Stmt per_thread_nest(const Stmt& loop);
// Whether `body` stores into thread-private buffers only (and into at least one).
bool writes_only_registers(const Stmt& body);
// The serial loops around `s` (a reduction's loops over its destination elements,
// each iteration a fold of its own; an atomic's over its elements, each an update of
// its own) as parallel ones, down to the first statement that is not a serial loop.
Stmt parallel_loops(const Stmt& s);

}  // namespace tl
