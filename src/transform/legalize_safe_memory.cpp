// See legalize_safe_memory.h. Guards already written by tile-op lowering (a
// select or an if on the same condition) are recognised and not doubled.
#include "transform/legalize_safe_memory.h"

#include "ir/printer.h"
#include "ir/visitor.h"
#include "ops/tile_op.h"

namespace tl {
namespace {

bool is_true(const Expr& e) {
  auto v = as_const_int(e);
  return v && *v;
}

class SafeMemory : public IRMutator {
 public:
  explicit SafeMemory(const Attrs& func_attrs) : func_attrs_(func_attrs) {}
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Expr visit(const SelectNode* op, const Expr& self) override {
    // select(in_bounds(A, idx), A[idx], v): already guarded; only its indices may need work.
    if (auto* load = op->true_value.as<BufferLoadNode>(); load && load->buffer->scope == Scope::Global) {
      Expr cond = in_bounds(load->buffer, load->indices);
      if (to_string(cond) == to_string(op->cond)) return self;
    }
    return IRMutator::visit(op, self);
  }

  // address_of(A[i]) names an element's address (a tile op's operand); it reads
  // nothing, so it needs no guard.
  Expr visit(const CallNode* op, const Expr& self) override {
    if (op->op == Intrinsic::AddressOf) return self;
    return IRMutator::visit(op, self);
  }

  Expr visit(const BufferLoadNode* op, const Expr& self) override {
    Expr e = IRMutator::visit(op, self);
    auto* load = e.as<BufferLoadNode>();
    if (load->buffer->scope != Scope::Global) return e;
    Expr cond = in_bounds(load->buffer, load->indices);
    if (is_true(cond)) return e;
    return select(cond, e, read_outside(load->buffer, load->dtype), op->span);
  }

  // What a load outside `b` gives: its T.annotate_safe_value, else 0.
  Expr read_outside(const Buffer& b, DataType t) const {
    auto it = func_attrs_.find(kSafeValuePrefix + b->name);
    if (it == func_attrs_.end()) return make_const(t, 0);
    return safe_value(Attrs{{"safe_value", it->second}}, t);
  }

  Stmt visit(const IfThenElseNode* op, const Stmt& self) override {
    // if in_bounds(A, idx): A[idx] = v  — the guard copy lowering writes.
    if (auto* store = op->then_case.as<BufferStoreNode>(); store && !op->else_case.defined()) {
      if (to_string(in_bounds(store->buffer, store->indices)) == to_string(op->cond)) {
        Expr v = mutate(store->value);
        if (v.same_as(store->value)) return self;
        return if_then_else(op->cond, buffer_store(store->buffer, v, store->indices, store->span), Stmt(), op->span);
      }
    }
    return IRMutator::visit(op, self);
  }

  Stmt visit(const BufferStoreNode* op, const Stmt& self) override {
    Stmt s = IRMutator::visit(op, self);
    auto* store = s.as<BufferStoreNode>();
    if (store->buffer->scope != Scope::Global) return s;
    Expr cond = in_bounds(store->buffer, store->indices);
    if (is_true(cond)) return s;
    return if_then_else(cond, s, Stmt(), op->span);
  }

 private:
  static constexpr const char* kSafeValuePrefix = "safe_value.";
  const Attrs& func_attrs_;
};

}  // namespace

PrimFunc legalize_safe_memory(const PrimFunc& f) {
  return f.with_body(SafeMemory(f->attrs).mutate(f->body));
}

}  // namespace tl
