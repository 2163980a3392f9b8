// A deterministic total order on expressions, used to sort the terms of the
// simplifier's canonical sums. It never looks at addresses, so the output (and
// the cache keys derived from its print) is the same from run to run.
#pragma once

#include <unordered_map>

#include "ir/ir.h"

namespace tl {

class ExprOrder {
 public:
  // <0, 0 or >0. Zero means structurally equal: same shape, same constants, the
  // same Var and Buffer objects. Distinct vars (buffers) of one name are ordered
  // by when this object first told them apart.
  int compare(const Expr& a, const Expr& b);
  bool equal(const Expr& a, const Expr& b) { return compare(a, b) == 0; }

 private:
  int compare_identity(const void* a, const void* b);
  int compare_all(const std::vector<Expr>& a, const std::vector<Expr>& b);

  std::unordered_map<const void*, int> ids_;
};

}  // namespace tl
