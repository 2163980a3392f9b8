// Applies the arithmetic simplifier to a whole function body. Symbolic parameter
// shapes are known to be non-negative (the runtime accepts empty tensors, so a
// size may be 0: a pipelined loop over ceildiv(K, bK) may run no iteration), and
// the simplifier learns loop and block ranges as it walks, so tail predicates that
// the tile sizes prove away disappear here.
#include "transform/simplify_pass.h"

#include "arith/simplify.h"

namespace tl {

PrimFunc simplify_func(const PrimFunc& f) {
  BoundAnalyzer bounds;
  for (const Param& p : f->params) {
    if (!p.is_tensor()) continue;
    for (const Expr& e : p.buffer->shape)
      if (e.as<VarNode>()) bounds.bind(Var::from(e), 0, int64_t(1) << 40);
  }
  return f.with_body(simplify(f->body, &bounds));
}

}  // namespace tl
