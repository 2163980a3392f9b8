// See split_kernels.h.
#include "transform/split_kernels.h"

#include <functional>

namespace tl {
namespace {

using Wrap = std::function<Stmt(const Stmt&)>;

// The statement's own line, or the first line written inside it.
SourceSpan span_in(const Stmt& s) {
  if (s.span().defined()) return s.span();
  if (auto* q = s.as<SeqNode>())
    for (const Stmt& x : q->seq)
      if (SourceSpan sp = span_in(x); sp.defined()) return sp;
  return {};
}

class Splitter {
 public:
  explicit Splitter(const PrimFunc& f) : f_(f) {}

  std::vector<Stmt> run() {
    split(f_->body, [](const Stmt& s) { return s; });
    if (parts_.empty())
      throw_user_error(f_->span, str_cat("kernel '", f_->name,
                                         "' has no `with T.Kernel(...)` block; its body must be one or more "
                                         "T.Kernel blocks"));
    return parts_;
  }

 private:
  void split(const Stmt& s, const Wrap& wrap) {
    if (!s.defined()) return;
    if (s.is<KernelLaunchNode>()) {
      parts_.push_back(wrap(s));
      return;
    }
    if (auto* l = s.as<LetStmtNode>()) {
      Var var = l->var;
      Expr value = l->value;
      return split(l->body, [wrap, var, value](const Stmt& body) {
        return wrap(make_node<Stmt, LetStmtNode>(var, value, body));
      });
    }
    if (auto* a = s.as<AttrNode>()) {
      std::string key = a->key;
      AttrValue value = a->value;
      return split(a->body,
                   [wrap, key, value](const Stmt& body) { return wrap(make_node<Stmt, AttrNode>(key, value, body)); });
    }
    if (auto* q = s.as<SeqNode>()) {
      for (const Stmt& x : q->seq) split(x, wrap);
      return;
    }
    SourceSpan at = span_in(s);
    throw_user_error(at.defined() ? at : f_->span,
                     str_cat("kernel '", f_->name, "': this statement (", node_kind_name(s.kind()),
                             ") is outside every `with T.Kernel(...)` block; a prim_func's body may only hold "
                             "T.Kernel blocks, launched one after another. Move it into a T.Kernel block"));
  }

  const PrimFunc& f_;
  std::vector<Stmt> parts_;
};

}  // namespace

std::vector<PrimFunc> split_kernels(const PrimFunc& f) {
  std::vector<Stmt> bodies = Splitter(f).run();
  if (bodies.size() == 1) return {f};  // as written: the lowering sees the same function
  std::vector<PrimFunc> parts;
  for (size_t i = 0; i < bodies.size(); ++i)
    parts.push_back(PrimFunc::make(kernel_part_name(f->name, i), f->params, bodies[i], f->attrs, f->span));
  return parts;
}

}  // namespace tl
