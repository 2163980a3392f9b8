// The host-side T.assume conditions of a kernel, checked against each call's values
// (Kernel::call on both of its paths): a call that breaks one is refused with the
// condition as the user wrote it, since the kernel was compiled relying on it.
#pragma once

#include <set>
#include <string>

#include "ir/visitor.h"
#include "runtime/signature.h"
#include "support/error.h"

namespace tl {

// An integer condition as the user wrote it in Python (`N % 4 == 0`, `a // 2 < b and c`).
std::string python_syntax(const Expr& e, int outer = 0);

// Checks the signature's host-side T.assume conditions against a call's values
// (`lookup` gives a variable's value, or null); false when one cannot be evaluated
// from them (the caller takes the slow path). Throws AssumptionError for one that
// does not hold.
template <class Lookup>
bool check_assumes(const KernelSignature& sig, const Lookup& lookup) {
  for (const Expr& a : sig.assumes) {
    auto v = eval_int_with(a, lookup);
    if (!v) return false;
    if (*v) continue;
    std::string values;
    std::set<const VarNode*> seen;
    for_each_expr(a, [&](const Expr& e) {
      auto* var = e.as<VarNode>();
      if (!var || !seen.insert(var).second) return;
      if (const int64_t* x = lookup(var)) values += str_cat(values.empty() ? "" : ", ", var->name, " = ", *x);
    });
    throw AssumptionError(
        {}, str_cat("kernel '", sig.name, "': Assume: ", python_syntax(a), " does not hold for this call (", values,
                    "); the kernel was compiled relying on it (T.assume)"));
  }
  return true;
}

}  // namespace tl
