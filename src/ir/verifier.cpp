// The IR verifier: one read-only walk that tracks which vars and buffers are in
// scope, how deep in loops and kernels it is, and the innermost statement, so a
// failure can show the offending node together with its context.
#include "ir/verifier.h"

#include <unordered_map>

#include "ir/printer.h"
#include "ir/visitor.h"

namespace tl {
namespace {

// Keeps messages readable when the offending node is a whole loop nest.
std::string clip(std::string text) {
  constexpr size_t kMax = 400;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (text.size() <= kMax) return text;
  return text.substr(0, kMax) + " ...";
}

// A multiset of live binders: a var may be rebound (shadowed) by a nested binder.
template <typename T>
class LiveSet {
 public:
  void add(const T* x) { ++count_[x]; }
  void remove(const T* x) {
    auto it = count_.find(x);
    if (--it->second == 0) count_.erase(it);
  }
  bool contains(const T* x) const { return count_.count(x) != 0; }

 private:
  std::unordered_map<const T*, int> count_;
};

bool is_integer_index(const Expr& e) {
  return e.defined() && e.dtype().is_integer();
}
bool is_scalar_bool(const Expr& e) {
  return e.defined() && e.dtype() == dtype::Bool;
}
bool same_element_type(DataType a, DataType b) {
  return a.element_of() == b.element_of();
}

class Verifier : public IRVisitor {
 public:
  explicit Verifier(const PrimFunc& f) : func_(f) {}

  void run() {
    for (const Param& p : func_->params) {
      if (!p.is_tensor()) {
        vars_.add(p.var.node());
        continue;
      }
      buffers_.add(p.buffer.get());
      // Symbolic dims of parameters are bound by the call: in scope everywhere.
      for (const Expr& e : p.buffer->shape) add_free_vars(e);
      for (const Expr& e : p.buffer->strides) add_free_vars(e);
    }
    visit(func_->body);
  }

  using IRVisitor::visit;

  void visit(const Expr& e) override {
    if (!e.defined()) return;
    const Expr* outer = expr_;
    expr_ = &e;
    IRVisitor::visit(e);
    expr_ = outer;
  }

  void visit(const Stmt& s) override {
    if (!s.defined()) return;
    const Stmt* outer = stmt_;
    const Expr* outer_expr = expr_;
    stmt_ = &s;
    expr_ = nullptr;
    IRVisitor::visit(s);
    stmt_ = outer;
    expr_ = outer_expr;
  }

  void visit_buffer(const Buffer& b) override {
    TL_ICHECK(buffers_.contains(b.get()),
              malformed(str_cat("buffer '", b->name, "' is used outside the Allocate that declares it")));
  }

  void visit(const VarNode* op) override {
    TL_ICHECK(vars_.contains(op), malformed(str_cat("var '", op->name, "' is used outside the scope that binds it")));
  }

  void visit(const BufferLoadNode* op) override {
    check_indices(op->buffer, op->indices);
    TL_ICHECK(same_element_type(op->dtype, op->buffer->dtype),
              malformed(str_cat("load of type ", op->dtype.name(), " from buffer '", op->buffer->name, "' of type ",
                                op->buffer->dtype.name())));
    IRVisitor::visit(op);
  }

  void visit(const LetNode* op) override {
    visit(op->value);
    vars_.add(op->var.node());
    visit(op->body);
    vars_.remove(op->var.node());
  }

  void visit(const ForNode* op) override {
    visit(op->min);
    visit(op->extent);
    for (const auto& [key, value] : op->annotations)
      if (auto* e = std::get_if<Expr>(&value)) visit(*e);
    vars_.add(op->var.node());
    ++loop_depth_;
    visit(op->body);
    --loop_depth_;
    vars_.remove(op->var.node());
  }

  void visit(const WhileNode* op) override {
    TL_ICHECK(is_scalar_bool(op->cond),
              malformed(str_cat("While condition has type ", type_of(op->cond), ", expected bool")));
    visit(op->cond);
    ++loop_depth_;
    visit(op->body);
    --loop_depth_;
  }

  void visit(const IfThenElseNode* op) override {
    TL_ICHECK(is_scalar_bool(op->cond),
              malformed(str_cat("If condition has type ", type_of(op->cond), ", expected bool")));
    IRVisitor::visit(op);
  }

  void visit(const BufferStoreNode* op) override {
    check_indices(op->buffer, op->indices);
    TL_ICHECK(op->value.defined() && same_element_type(op->value.dtype(), op->buffer->dtype),
              malformed(str_cat("store of a ", type_of(op->value), " value into buffer '", op->buffer->name,
                                "' of type ", op->buffer->dtype.name())));
    IRVisitor::visit(op);
  }

  void visit(const LetStmtNode* op) override {
    visit(op->value);
    vars_.add(op->var.node());
    visit(op->body);
    vars_.remove(op->var.node());
  }

  void visit(const AllocateNode* op) override {
    for (const Expr& e : op->buffer->shape) visit(e);
    for (const Expr& e : op->buffer->strides) visit(e);
    buffers_.add(op->buffer.get());
    visit(op->body);
    buffers_.remove(op->buffer.get());
  }

  void visit(const KernelLaunchNode* op) override {
    TL_ICHECK(!in_kernel_, malformed("KernelLaunch nested inside another KernelLaunch"));
    TL_ICHECK(op->block_vars.size() == op->grid.size(),
              malformed(str_cat("KernelLaunch has ", op->block_vars.size(), " block var(s) for ", op->grid.size(),
                                " grid dimension(s)")));
    TL_ICHECK(op->thread_vars.size() == op->threads.size(),
              malformed(str_cat("KernelLaunch has ", op->thread_vars.size(), " thread var(s) for ", op->threads.size(),
                                " thread dimension(s)")));
    for (const Expr& g : op->grid) visit(g);
    for (const Var& v : op->block_vars) vars_.add(v.node());
    for (const Var& v : op->thread_vars) vars_.add(v.node());
    // A break in the kernel cannot leave a host loop around the launch.
    int outer_loop_depth = loop_depth_;
    loop_depth_ = 0;
    in_kernel_ = true;
    visit(op->body);
    in_kernel_ = false;
    loop_depth_ = outer_loop_depth;
    for (const Var& v : op->thread_vars) vars_.remove(v.node());
    for (const Var& v : op->block_vars) vars_.remove(v.node());
  }

  void visit(const TileOpNode* op) override {
    for (const BufferRegion& r : op->regions) {
      TL_ICHECK(int(r.ranges.size()) == r.buffer.ndim(),
                malformed(str_cat("region of buffer '", r.buffer->name, "' has ", r.ranges.size(),
                                  " range(s) but the buffer has ", r.buffer.ndim(), " dimension(s)")));
      for (const Range& rg : r.ranges)
        TL_ICHECK(is_integer_index(rg.min) && is_integer_index(rg.extent),
                  malformed(str_cat("region of buffer '", r.buffer->name, "' has a bound of type ",
                                    type_of(is_integer_index(rg.min) ? rg.extent : rg.min), ", expected an integer")));
    }
    for (const auto& [key, value] : op->attrs)
      if (auto* e = std::get_if<Expr>(&value)) visit(*e);
    IRVisitor::visit(op);
  }

  void visit(const BreakNode*) override { TL_ICHECK(loop_depth_ > 0, malformed("Break outside a loop")); }
  void visit(const ContinueNode*) override { TL_ICHECK(loop_depth_ > 0, malformed("Continue outside a loop")); }

 private:
  void add_free_vars(const Expr& e) {
    if (!e.defined()) return;
    if (auto* v = e.as<VarNode>()) {
      vars_.add(v);
      return;
    }
    struct Collector : IRVisitor {
      using IRVisitor::visit;
      LiveSet<VarNode>* vars;
      void visit(const VarNode* op) override { vars->add(op); }
    } collector;
    collector.vars = &vars_;
    collector.visit(e);
  }

  void check_indices(const Buffer& b, const std::vector<Expr>& indices) {
    TL_ICHECK(int(indices.size()) == b.ndim(),
              malformed(str_cat("buffer '", b->name, "' has ", b.ndim(), " dimension(s) but is indexed with ",
                                indices.size(), " index(es)")));
    for (const Expr& i : indices)
      TL_ICHECK(is_integer_index(i),
                malformed(str_cat("index ", i.defined() ? to_string(i) : "<undefined>", " into buffer '", b->name,
                                  "' has type ", type_of(i), ", expected an integer")));
  }

  static std::string type_of(const Expr& e) { return e.defined() ? e.dtype().name() : "<undefined>"; }

  // The message of a failed check: what is wrong, the offending node (the
  // innermost expression if any, else the statement) and the statement around it.
  std::string malformed(const std::string& what) const {
    std::string msg = str_cat("malformed IR in function '", func_->name, "': ", what);
    if (expr_) msg += str_cat("\n  offending node (", node_kind_name(expr_->kind()), "): ", clip(to_string(*expr_)));
    if (stmt_) {
      msg += str_cat(expr_ ? "\n  in statement (" : "\n  offending node (", node_kind_name(stmt_->kind()),
                     "): ", clip(to_string(*stmt_)));
    }
    return msg;
  }

  const PrimFunc& func_;
  LiveSet<VarNode> vars_;
  LiveSet<BufferNode> buffers_;
  int loop_depth_ = 0;
  bool in_kernel_ = false;
  const Expr* expr_ = nullptr;  // innermost expression being visited
  const Stmt* stmt_ = nullptr;  // innermost statement being visited
};

}  // namespace

void verify(const PrimFunc& f) {
  TL_ICHECK(f.defined(), "verify of an undefined PrimFunc");
  Verifier(f).run();
}

}  // namespace tl
