// The public C++ API of tilelang-cpp: write a tile kernel with FunctionBuilder,
// compile it with tl::compile, call the Kernel with tensors.
#pragma once

#include "builder/builder.h"
#include "ir/expr_ops.h"
#include "ir/ir.h"
#include "ir/printer.h"
#include "tl/compile.h"
