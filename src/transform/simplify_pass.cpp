// Applies the arithmetic simplifier to a whole function body.
#include "transform/simplify_pass.h"

namespace tl {

// The arith library (src/arith) plugs in here once it lands.
PrimFunc simplify_func(const PrimFunc& f) { return f; }

}  // namespace tl
