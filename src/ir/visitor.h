// IRVisitor walks a tree read-only; IRMutator rebuilds it bottom-up, sharing every
// subtree it did not change. Both dispatch on the one list of node kinds: override
// `visit` for the kinds a pass cares about and call the base to recurse.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace tl {

// Sets `slot` to `value` until the end of the enclosing scope, then puts the old
// value back: the context (enclosing kernel, T.ws region, thread count) a pass keeps
// while it visits a subtree.
template <class T>
class Scoped {
 public:
  Scoped(T& slot, T value) : slot_(slot), saved_(std::exchange(slot, std::move(value))) {}
  ~Scoped() { slot_ = std::move(saved_); }
  Scoped(const Scoped&) = delete;
  Scoped& operator=(const Scoped&) = delete;

 private:
  T& slot_;
  T saved_;
};

class IRVisitor {
 public:
  virtual ~IRVisitor() = default;
  virtual void visit(const Expr& e);
  virtual void visit(const Stmt& s);
  virtual void visit_buffer(const Buffer&) {}
  void visit_region(const BufferRegion& r);

#define TL_EXPR(Name) virtual void visit(const Name##Node* op);
#define TL_STMT(Name) virtual void visit(const Name##Node* op);
#include "ir/node_kinds.def"
};

class IRMutator {
 public:
  virtual ~IRMutator() = default;
  virtual Expr mutate(const Expr& e);
  virtual Stmt mutate(const Stmt& s);
  // Buffers are kept as they are unless a pass overrides this.
  virtual Buffer mutate_buffer(const Buffer& b) { return b; }
  BufferRegion mutate_region(const BufferRegion& r);

 protected:
  // `self` is the handle of `op`, returned when nothing changed.
#define TL_EXPR(Name) virtual Expr visit(const Name##Node* op, const Expr& self);
#define TL_STMT(Name) virtual Stmt visit(const Name##Node* op, const Stmt& self);
#include "ir/node_kinds.def"

  std::vector<Expr> mutate_all(const std::vector<Expr>& v, bool* changed);
  Attrs mutate_attrs(const Attrs& attrs, bool* changed);
};

// Calls fn on every expression node of `s` / `e` (parents before children).
void for_each_expr(const Stmt& s, const std::function<void(const Expr&)>& fn);
void for_each_expr(const Expr& e, const std::function<void(const Expr&)>& fn);
// Whether `e` reads the variable `v`.
bool reads_var(const Expr& e, const VarNode* v);
// The first statement of `s` (`s` itself included, parents before children) for which
// `pred` holds, or nullptr; any_stmt: whether there is one.
const StmtNode* find_stmt(const Stmt& s, const std::function<bool(const Stmt&)>& pred);
inline bool any_stmt(const Stmt& s, const std::function<bool(const Stmt&)>& pred) {
  return find_stmt(s, pred) != nullptr;
}
// The variables `s` binds: its LetStmts' and its loops' (nested ones included).
std::set<const VarNode*> bound_vars(const Stmt& s);
// The T.Parallel(M, N, ...) nest that starts at `op`: it and the parallel loops
// perfectly nested in it, outermost first.
std::vector<const ForNode*> parallel_nest(const ForNode* op);
// Whether `s` calls the device function `fn` (ir/device_calls.h), with or without
// template arguments (is_device_call).
bool calls_device(const Stmt& s, const char* fn);
// The function name of an extern call (`tl::atomic_add<0>`, a T.call_extern's), or
// nullptr when `e` is not one.
const std::string* extern_name(const Expr& e);
const std::string* extern_name(const CallNode* c);
// Whether an extern call's name is one of the device header's atomics
// (`tl::atomic_<kind><order>`, `tl::AtomicAddx2` / `x4` and their `Ret` forms:
// ir/device_calls.def).
bool is_atomic_call(const std::string& name);
// The kind of an element atomic's call, `tl::atomic_<kind><order>` ("add", "max", "min",
// "and", "or", "xor", "load", "store"); nullptr for any other call.
const char* atomic_kind(const std::string& name);
// The distinct preludes (T.Kernel prelude=, T.import_source) of the kernels in `s`, in
// order.
std::vector<std::string> kernel_preludes(const Stmt& s);
// Replaces vars by expressions (keyed by VarNode*).
Expr substitute(const Expr& e, const std::map<const VarNode*, Expr>& vmap);
Stmt substitute(const Stmt& s, const std::map<const VarNode*, Expr>& vmap);

}  // namespace tl
