// What a caller must pass to a kernel, read off its PrimFunc: the parameters,
// which of them the kernel may write, the symbolic dimensions bound from argument
// shapes, and the launches (one per T.Kernel block, each with its grid). The
// runtime checks and binds arguments against it; codegen lays out the argument
// array by it.
#pragma once

#include <algorithm>
#include <map>
#include <set>

#include "ir/ir.h"

namespace tl {

// A TMA tensor map (device/cuda/tma.cuh) the kernel takes after its other
// arguments. Lowering decides the maps (pipeline_loops: T.Pipelined copies on
// sm_90); the runtime encodes each one at every launch from tensor parameter
// `param`: its data pointer, shape and strides, with this box and swizzle.
// Dimensions go innermost first, as cuTensorMapEncodeTiled takes them.
struct TmaMapSpec {
  int param = 0;              // index into KernelSignature::params (a tensor)
  DataType dtype;             // the parameter's
  std::vector<int64_t> box;   // elements one copy moves per dimension
  int swizzle_bytes = 0;      // 0 (none), 32, 64 or 128
  uint32_t dynamic_dims = 0;  // bit d: dimension d has a symbolic size or stride
  int rank() const { return int(box.size()); }

  // One line, "tma <param> <dtype> <rank> <box,...> <swizzle> <dynamic>": the
  // record of the signature's text form and of a CUDA cache entry's meta.txt.
  std::string str() const;
  // Reads str()'s form; a UserError names what is malformed.
  static TmaMapSpec parse(const std::string& line);
};

// One `with T.Kernel(...)` block of the function, launched as a kernel of its own.
struct LaunchSpec {
  std::vector<Expr> grid;
  std::vector<int64_t> threads;
  // Set after lowering (from the codegen's result or the artifact's meta.txt);
  // passed after the dynamic vars, one argument slot each.
  std::vector<TmaMapSpec> tma_maps;
  SourceSpan span;               // the T.Kernel's line (not serialized)
  std::vector<int64_t> cluster;  // blocks per cluster along x, y, z; empty: no cluster
  // The kernel calls T.sync_grid: every block must be resident at once, so the
  // runtime launches it cooperatively and refuses a grid that does not fit.
  bool cooperative = false;
};

struct KernelSignature {
  std::string name;
  std::vector<Param> params;
  // Per parameter: the kernel may write the tensor (it stores into it, a tile op
  // writes a region of it, or its address is taken for writing). A tensor missing
  // here counts as written; scalars are never written. The runtime refuses
  // read-only arrays for written parameters.
  std::vector<bool> written;
  bool writes(size_t param) const { return param >= written.size() || written[param]; }
  // Per parameter: the kernel body names the tensor at all (loads, stores, tile op
  // regions, addresses, views). A tensor missing here counts as accessed; scalars
  // count as accessed. Only a tensor never accessed may be passed as None (a null
  // pointer: ArgValue::Kind::Null); lowering rewrites accesses but adds none to a
  // buffer the body never names, so no kernel part touches it.
  std::vector<bool> accessed;
  bool accesses(size_t param) const { return param >= accessed.size() || accessed[param]; }
  // Parameters the caller passes: those before the workspaces (T.alloc_global),
  // which are last and which the caller of a kernel allocates on every call.
  size_t num_visible_params() const {
    size_t n = params.size();
    while (n > 0 && params[n - 1].workspace) --n;
    return n;
  }
  // Symbolic dims (T.dynamic) that appear in parameter shapes or strides and are
  // not scalar parameters; passed after the parameters in the argument array.
  std::vector<Var> dynamic_vars;
  // The T.Kernel blocks in program order (split_kernels): a call launches each in
  // turn on one stream, all with the same arguments. Never empty.
  std::vector<LaunchSpec> launches;
  // T.assume conditions over scalar parameters and symbolic dims alone, each on the
  // kernel's straight-line path (under no branch or loop): every call checks them
  // before its first launch, since the compiler dropped the checks they imply.
  std::vector<Expr> assumes;

  // A UserError names the statement that is outside every T.Kernel block.
  static KernelSignature from(const PrimFunc& f);
  int num_args() const { return int(params.size() + dynamic_vars.size()); }
  // Argument slots a launch needs at most: the arguments, then its TMA maps.
  int num_slots() const {
    size_t maps = 0;
    for (const LaunchSpec& l : launches) maps = std::max(maps, l.tma_maps.size());
    return num_args() + int(maps);
  }

  // A line-oriented text form that `parse` turns back into an equivalent
  // signature (the same vars shared by shapes, scalars and grid). Exported
  // kernels store it, since they are loaded without their PrimFunc.
  std::string serialize() const;
  // Throws a UserError naming the offending line when `text` is malformed.
  static KernelSignature parse(const std::string& text);
};

// Per parameter of `f` (as traced, before lowering or after): whether the body may
// write the tensor (KernelSignature::written); false for scalars.
std::vector<bool> written_params(const PrimFunc& f);

// Per parameter of `f`: whether the body names the tensor anywhere
// (KernelSignature::accessed); true for scalars.
std::vector<bool> accessed_params(const PrimFunc& f);

// The name of launch `i` of function `name` (split_kernels names its parts so):
// "<name>" for the first kernel (a one-kernel function keeps its entry names) and
// "<name>_k<i>" for the others.
std::string kernel_part_name(const std::string& name, size_t i);

// `p op q` on integers as the runtime evaluates shapes and grids; nullopt for a
// division or modulo by zero.
std::optional<int64_t> apply_int_op(BinaryOp op, int64_t p, int64_t q);

using Bindings = std::map<const VarNode*, int64_t>;

// Evaluates an integer expression whose vars are all bound; nullopt otherwise.
// `lookup(const VarNode*)` gives a pointer to the var's value, or nullptr when
// it is unbound (the call path binds into a small array instead of a map).
template <class Lookup>
std::optional<int64_t> eval_int_with(const Expr& e, const Lookup& lookup);

inline std::optional<int64_t> eval_int(const Expr& e, const Bindings& b) {
  return eval_int_with(e, [&b](const VarNode* v) -> const int64_t* {
    auto it = b.find(v);
    return it == b.end() ? nullptr : &it->second;
  });
}

template <class Lookup>
std::optional<int64_t> eval_int_with(const Expr& e, const Lookup& lookup) {
  if (auto* i = e.as<IntImmNode>()) return i->value;
  if (auto* v = e.as<VarNode>()) {
    const int64_t* value = lookup(v);
    if (!value) return std::nullopt;
    return *value;
  }
  if (auto* c = e.as<CastNode>()) {
    if (!c->dtype.is_integer()) return std::nullopt;
    return eval_int_with(c->value, lookup);
  }
  if (auto* s = e.as<SelectNode>()) {
    auto c = eval_int_with(s->cond, lookup);
    if (!c) return std::nullopt;
    return eval_int_with(*c ? s->true_value : s->false_value, lookup);
  }
  auto* n = e.as<BinaryNode>();
  if (!n) return std::nullopt;
  auto x = eval_int_with(n->a, lookup), y = eval_int_with(n->b, lookup);
  if (!x || !y) return std::nullopt;
  return apply_int_op(n->op, *x, *y);
}

}  // namespace tl
