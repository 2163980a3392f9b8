// See check_bounds.h. Only what the loops alone decide is checked: an index that is
// a sum of distinct loop variables times constants plus a constant (its range is then
// exactly what interval arithmetic gives), in an access that every iteration makes
// (no `if` or select between the loops and it). Anything else may be guarded in
// ways the check does not follow, and is left to run.
#include "transform/check_bounds.h"

#include <functional>
#include <map>
#include <set>

#include "arith/bounds.h"
#include "ir/printer.h"
#include "ir/visitor.h"
#include "support/logging.h"

namespace tl {
namespace {

std::string shape_text(const Buffer& b) {
  std::string out = "[";
  for (size_t i = 0; i < b->shape.size(); ++i) out += (i ? ", " : "") + to_string(b->shape[i]);
  return out + "]";
}

bool on_chip(const Buffer& b) {
  return b->scope == Scope::Shared || b->scope == Scope::SharedDyn || b->scope == Scope::Fragment ||
         b->scope == Scope::Local || b->scope == Scope::LocalVar;
}

// One access the loops alone decide: the buffer, the dimension, the range its index
// takes there, and whether it writes.
struct Access {
  const Buffer& buffer;
  size_t dim;
  const Expr& index;
  Interval range;
  bool write;
  const SourceSpan& span;
};

// Visits the accesses of on-chip buffers without an explicit layout whose index in a
// constant-extent dimension is exact (see the file comment) and unguarded.
class Scanner : public IRVisitor {
 public:
  explicit Scanner(std::function<void(const Access&)> fn) : fn_(std::move(fn)) {}
  using IRVisitor::visit;

  // The innermost statement with a source line: the place of an access without one.
  void visit(const Stmt& s) override {
    SourceSpan saved = statement_;
    if (s.defined() && s.span().defined()) statement_ = s.span();
    IRVisitor::visit(s);
    statement_ = saved;
  }

  void visit(const ForNode* op) override {
    auto mn = as_const_int(op->min), ex = as_const_int(op->extent);
    visit(op->min);
    visit(op->extent);
    if (!mn || !ex || *ex <= 0) {
      bounds_.unbind(op->var);
      return IRVisitor::visit(op->body);
    }
    bounds_.bind(op->var, *mn, *mn + *ex - 1);
    loop_vars_.insert(op->var.node());
    visit(op->body);
    loop_vars_.erase(op->var.node());
    bounds_.unbind(op->var);
  }
  // Guarded code is not checked.
  void visit(const IfThenElseNode* op) override {
    visit(op->cond);
    ++guarded_;
    IRVisitor::visit(op->then_case);
    if (op->else_case.defined()) IRVisitor::visit(op->else_case);
    --guarded_;
  }
  void visit(const WhileNode* op) override {
    ++guarded_;
    IRVisitor::visit(op);
    --guarded_;
  }
  void visit(const SelectNode* op) override {
    visit(op->cond);
    ++guarded_;
    visit(op->true_value);
    visit(op->false_value);
    --guarded_;
  }
  void visit(const BufferLoadNode* op) override {
    scan(op->buffer, op->indices, op->span, false);
    IRVisitor::visit(op);
  }
  void visit(const BufferStoreNode* op) override {
    scan(op->buffer, op->indices, op->span, true);
    IRVisitor::visit(op);
  }

 private:
  // Whether `e` is a sum of distinct loop variables times constants plus a constant.
  bool exact(const Expr& e, std::set<const VarNode*>& used) const {
    if (as_const_int(e)) return true;
    if (auto* v = e.as<VarNode>()) return loop_vars_.count(v) && used.insert(v).second;
    if (auto* c = e.as<CastNode>()) return c->dtype.is_integer() && exact(c->value, used);
    auto* b = e.as<BinaryNode>();
    if (!b) return false;
    if (b->op == BinaryOp::Add || b->op == BinaryOp::Sub) return exact(b->a, used) && exact(b->b, used);
    if (b->op == BinaryOp::Mul)
      return (as_const_int(b->b) && exact(b->a, used)) || (as_const_int(b->a) && exact(b->b, used));
    return false;
  }

  void scan(const Buffer& b, const std::vector<Expr>& indices, const SourceSpan& span, bool write) {
    if (guarded_ || !on_chip(b) || b->layout) return;
    for (size_t d = 0; d < indices.size() && d < b->shape.size(); ++d) {
      std::set<const VarNode*> used;
      if (!as_const_int(b->shape[d]) || !exact(indices[d], used) || used.empty()) continue;
      Interval r = bounds_.bounds(indices[d]);
      if (r.is_bounded()) fn_(Access{b, d, indices[d], r, write, span.defined() ? span : statement_});
    }
  }

  std::function<void(const Access&)> fn_;
  SourceSpan statement_;
  BoundAnalyzer bounds_;
  std::set<const VarNode*> loop_vars_;
  int guarded_ = 0;
};

class Regrow : public IRMutator {
 public:
  explicit Regrow(std::map<const BufferNode*, Buffer> grown) : grown_(std::move(grown)) {}
  using IRMutator::mutate;
  Buffer mutate_buffer(const Buffer& b) override {
    auto it = grown_.find(b.get());
    return it == grown_.end() ? b : it->second;
  }

 private:
  std::map<const BufferNode*, Buffer> grown_;
};

}  // namespace

void check_onchip_bounds(const PrimFunc& f) {
  Scanner scan([](const Access& a) {
    int64_t n = *as_const_int(a.buffer->shape[a.dim]);
    if (*a.range.min >= 0 && *a.range.max < n) return;
    throw_user_error(
        a.span,
        str_cat("this ", a.write ? "writes" : "reads", " ", a.buffer->name, "[...] with index ", to_string(a.index),
                " in dimension ", a.dim, ", which the loops around it take over [", *a.range.min, ", ", *a.range.max,
                "], but '", a.buffer->name, "' has ", n, " elements there (shape ", shape_text(a.buffer),
                "); allocate it with the loop's extent, or guard the access"));
  });
  scan.visit(f->body);
}

PrimFunc grow_overindexed_fragments(const PrimFunc& f) {
  // Per fragment and dimension, the extent its unguarded writes cover where that is
  // more than it has; a write below 0 leaves the fragment to the check.
  std::map<const BufferNode*, std::pair<Buffer, std::map<size_t, int64_t>>> need;
  std::set<const BufferNode*> negative;
  std::map<const BufferNode*, SourceSpan> first_write;
  Scanner scan([&](const Access& a) {
    if (!a.write || a.buffer->scope != Scope::Fragment) return;
    if (*a.range.min < 0) negative.insert(a.buffer.get());
    if (*a.range.max < *as_const_int(a.buffer->shape[a.dim])) return;
    auto& [buffer, dims] = need[a.buffer.get()];
    buffer = a.buffer;
    dims[a.dim] = std::max(dims[a.dim], *a.range.max + 1);
    first_write.emplace(a.buffer.get(), a.span);
  });
  scan.visit(f->body);
  std::map<const BufferNode*, Buffer> grown;
  for (const auto& [key, entry] : need) {
    if (negative.count(key)) continue;
    const auto& [b, dims] = entry;
    auto node = std::make_shared<BufferNode>(*b.get());
    std::string past;
    for (const auto& [d, extent] : dims) {
      node->shape[d] = int_imm(extent, b->shape[d].dtype());
      past += str_cat(past.empty() ? "" : ", ", "to index ", extent - 1, " in dimension ", d);
    }
    Buffer g(node);
    grown[key] = g;
    const SourceSpan& span = first_write[key];
    log(LogLevel::Warning,
        str_cat(span.defined() ? span.str() + ": " : std::string(), "loops write fragment '", b->name, "' (shape ",
                shape_text(b), ") ", past, ", past its shape; it holds ", shape_text(g),
                " in this kernel, as TileLang lays a fragment out over the loops that write it. Allocate it with "
                "the loops' extent"));
  }
  if (grown.empty()) return f;
  return f.with_body(Regrow(std::move(grown)).mutate(f->body));
}

}  // namespace tl
