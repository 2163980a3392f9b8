// Simplifies every expression of a function (arith/simplify does the algebra).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc simplify_func(const PrimFunc& f);

// `f` without the tensor parameters its body never touches (TileLang's
// Simplify(simplify_arguments=True), which apply_simplify runs): a kernel built with an
// optional operand it does not use is called without it. A tensor whose size variable
// the body reads and no kept parameter defines stays, and so do scalars and workspaces.
PrimFunc drop_unused_tensor_params(const PrimFunc& f);

}  // namespace tl
