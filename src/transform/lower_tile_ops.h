// Replaces every tile-op statement (copy, gemm, fill ...) by its lowering for the
// target, as the op's file in src/ops/ defines it.
#pragma once

#include "ir/ir.h"
#include "target/target.h"

namespace tl {

PrimFunc lower_tile_ops(const PrimFunc& f, const Target& target);

}  // namespace tl
