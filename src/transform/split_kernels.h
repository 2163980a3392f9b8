// A prim_func may hold several `with T.Kernel(...)` blocks one after another: the
// call launches them in program order on one stream. Each block is lowered and
// printed as a kernel of its own; this splits the function into those kernels.
#pragma once

#include "ir/ir.h"
#include "runtime/signature.h"  // kernel_part_name

namespace tl {

// One PrimFunc per T.Kernel block of `f`, in program order, each with f's
// parameters and the root-level lets and attributes that enclose its block. Part
// i is named kernel_part_name(f->name, i). A statement outside every T.Kernel, or a
// function without one, is a UserError naming the statement's line.
std::vector<PrimFunc> split_kernels(const PrimFunc& f);

}  // namespace tl
