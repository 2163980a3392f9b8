// The IR well-formedness check run after each pass: it catches a pass that
// produced malformed IR at the pass that did it, instead of at codegen or at run
// time. Failures are compiler bugs, reported as InternalError.
#pragma once

#include "ir/ir.h"

namespace tl {

// Throws InternalError naming the offending node (printed, with its kind) when
// `f` breaks one of these rules:
//  - a Var is used outside the For / Let / LetStmt / KernelLaunch that binds it
//    (parameters and the symbolic shape/stride vars of parameter buffers are in
//    scope everywhere);
//  - a Buffer is used outside the Allocate that declares it (parameter buffers
//    are in scope everywhere);
//  - a load, store or tile-op region has as many indices as the buffer has
//    dimensions, and every index (region bound) is an integer;
//  - If and While conditions are scalar bool;
//  - a load's dtype and a stored value's dtype match the buffer's (lanes aside);
//  - Break and Continue appear only inside a loop of the same kernel;
//  - a KernelLaunch has as many block vars as grid dims and thread vars as
//    thread dims, and is not nested in another KernelLaunch.
void verify(const PrimFunc& f);

}  // namespace tl
