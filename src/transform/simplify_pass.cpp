// Applies the arithmetic simplifier to a whole function body. Parameter shapes
// are known to be positive, and the simplifier learns loop and block ranges as it
// walks, so tail predicates that the tile sizes prove away disappear here.
#include "transform/simplify_pass.h"

#include "arith/simplify.h"

namespace tl {

PrimFunc simplify_func(const PrimFunc& f) {
  BoundAnalyzer bounds;
  for (const Param& p : f->params) {
    if (!p.is_tensor()) continue;
    for (const Expr& e : p.buffer->shape)
      if (e.as<VarNode>()) bounds.bind(Var::from(e), 1, int64_t(1) << 40);
  }
  return f.with_body(simplify(f->body, &bounds));
}

}  // namespace tl
