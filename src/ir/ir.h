// Umbrella header for the IR: nodes, constructors and the tools every pass uses.
#pragma once

#include "ir/buffer.h"
#include "ir/expr.h"
#include "ir/op.h"
#include "ir/stmt.h"
