// See align_shifted_fragment_reads.h.
#include "transform/align_shifted_fragment_reads.h"

#include <set>

#include "arith/simplify.h"
#include "ir/op.h"
#include "ir/visitor.h"

namespace tl {
namespace {

// The fragment accesses of a nest body.
struct Accesses : IRVisitor {
  std::vector<const BufferLoadNode*> loads;
  bool other = false;  // a fragment store, or a tile op on a fragment
  using IRVisitor::visit;
  void visit(const BufferLoadNode* op) override {
    if (op->buffer->scope == Scope::Fragment) loads.push_back(op);
    IRVisitor::visit(op);
  }
  void visit(const BufferStoreNode* op) override {
    other = other || op->buffer->scope == Scope::Fragment;
    IRVisitor::visit(op);
  }
  void visit(const TileOpNode* op) override {
    for (const BufferRegion& r : op->regions) other = other || r.buffer->scope == Scope::Fragment;
    IRVisitor::visit(op);
  }
};

// Whether a shift may differ between the loop's iterations: it reads one of `vars`, or
// memory or a call (which the body may change).
bool varies(const Expr& e, const std::set<const VarNode*>& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) found = found || vars.count(v);
    found = found || x.as<BufferLoadNode>() || x.as<CallNode>();
  });
  return found;
}

class Align : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind != ForKind::Parallel) return IRMutator::visit(op, self);
    std::vector<const ForNode*> nest = parallel_nest(op);
    std::vector<int64_t> extents;
    std::set<const VarNode*> nest_vars;
    for (const ForNode* f : nest) {
      auto mn = as_const_int(f->min), ex = as_const_int(f->extent);
      if (!mn || *mn != 0 || !ex) return self;
      extents.push_back(*ex);
      nest_vars.insert(f->var.node());
    }
    const Stmt& body = nest.back()->body;
    Accesses acc;
    acc.visit(body);
    if (acc.other || acc.loads.empty()) return self;
    std::set<const VarNode*> local = bound_vars(body);
    local.insert(nest_vars.begin(), nest_vars.end());
    // The shift of each dimension, the same for every read.
    std::vector<Expr> shift;
    for (const BufferLoadNode* l : acc.loads) {
      if (l->indices.size() != nest.size()) return self;
      for (size_t d = 0; d < nest.size(); ++d) {
        auto n = as_const_int(l->buffer->shape[d]);
        if (!n || *n != extents[d]) return self;
      }
      std::vector<Expr> s;
      for (size_t d = 0; d < nest.size(); ++d) {
        Expr off = simplify(sub(l->indices[d], nest[d]->var));
        if (varies(off, local)) return self;
        s.push_back(off);
      }
      if (shift.empty()) {
        shift = s;
        continue;
      }
      for (size_t d = 0; d < nest.size(); ++d) {
        auto same = as_const_int(simplify(sub(s[d], shift[d])));
        if (!same || *same != 0) return self;
      }
    }
    bool shifted = false;
    for (const Expr& s : shift) {
      auto c = as_const_int(s);
      shifted = shifted || !c || *c != 0;
    }
    if (!shifted) return self;
    // The loop runs over the element read: new variables where a dimension is shifted.
    std::vector<Var> vars;
    for (size_t d = 0; d < nest.size(); ++d) {
      auto c = as_const_int(shift[d]);
      const Var& v = nest[d]->var;
      vars.push_back(c && *c == 0 ? v : Var(v.name() + "_held", v.dtype(), v.span()));
    }
    struct Rewrite : IRMutator {
      std::vector<Var> vars;
      using IRMutator::mutate;
      using IRMutator::visit;
      Expr visit(const BufferLoadNode* op, const Expr& self) override {
        if (op->buffer->scope != Scope::Fragment) return IRMutator::visit(op, self);
        return buffer_load(op->buffer, std::vector<Expr>(vars.begin(), vars.end()), op->span);
      }
    } rewrite;
    rewrite.vars = vars;
    Stmt out = rewrite.mutate(body);
    for (size_t d = nest.size(); d-- > 0;) {
      if (vars[d].same_as(nest[d]->var)) continue;
      DataType t = nest[d]->var.dtype();
      out = let_stmt(nest[d]->var, floormod(sub(vars[d], cast(t, shift[d])), make_const(t, extents[d])), out,
                     nest[d]->span);
    }
    for (size_t d = nest.size(); d-- > 0;)
      out =
          for_loop(vars[d], nest[d]->min, nest[d]->extent, nest[d]->for_kind, out, nest[d]->annotations, nest[d]->span);
    return out;
  }
};

}  // namespace

PrimFunc align_shifted_fragment_reads(const PrimFunc& f) {
  return f.with_body(Align().mutate(f->body));
}

}  // namespace tl
