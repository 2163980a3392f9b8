// Simplifies every expression of a function (arith/simplify does the algebra).
#pragma once

#include "ir/ir.h"

namespace tl {

PrimFunc simplify_func(const PrimFunc& f);

}  // namespace tl
