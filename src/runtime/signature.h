// What a caller must pass to a kernel, read off its PrimFunc: the parameters,
// the symbolic dimensions bound from argument shapes, and the launch grid. The
// runtime checks and binds arguments against it; codegen lays out the argument
// array by it.
#pragma once

#include <map>
#include <set>

#include "ir/ir.h"

namespace tl {

struct KernelSignature {
  std::string name;
  std::vector<Param> params;
  // Symbolic dims (T.dynamic) that appear in parameter shapes or strides and are
  // not scalar parameters; passed after the parameters in the argument array.
  std::vector<Var> dynamic_vars;
  std::vector<Expr> grid;
  std::vector<int64_t> threads;

  static KernelSignature from(const PrimFunc& f);
  int num_args() const { return int(params.size() + dynamic_vars.size()); }

  // A line-oriented text form that `parse` turns back into an equivalent
  // signature (the same vars shared by shapes, scalars and grid). Exported
  // kernels store it, since they are loaded without their PrimFunc.
  std::string serialize() const;
  // Throws a UserError naming the offending line when `text` is malformed.
  static KernelSignature parse(const std::string& text);
};

using Bindings = std::map<const VarNode*, int64_t>;

// Evaluates an integer expression whose vars are all bound; nullopt otherwise.
std::optional<int64_t> eval_int(const Expr& e, const Bindings& b);

}  // namespace tl
