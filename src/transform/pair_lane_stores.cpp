// See pair_lane_stores.h.
#include "transform/pair_lane_stores.h"

#include "arith/simplify.h"
#include "ir/op.h"
#include "ir/structural.h"
#include "ir/visitor.h"
#include "ops/packed_pairs.h"

namespace tl {
namespace {

bool pair_dtype(DataType t) {
  return t == dtype::Float16 || t == dtype::BFloat16 || t == dtype::Float32;
}

bool pairable_memory(const Buffer& b) {
  if (b->scope != Scope::Global && b->scope != Scope::Local) return false;
  auto strides = b.effective_strides();
  return !strides.empty() && is_const_one(strides.back());
}

// Whether `second` indexes the element after `first` along the last dimension.
bool next_element(const std::vector<Expr>& first, const std::vector<Expr>& second) {
  if (first.empty() || first.size() != second.size()) return false;
  for (size_t d = 0; d + 1 < first.size(); ++d)
    if (!structural_equal(first[d], second[d])) return false;
  auto step = as_const_int(simplify(sub(second.back(), first.back())));
  return step && *step == 1;
}

bool same_element(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t d = 0; d < a.size(); ++d)
    if (!structural_equal(a[d], b[d])) return false;
  return true;
}

// The loads of one lane's value, in order, and the pair function; nullptr when the
// value is not one op of loads.
const char* lane_op(const Expr& v, std::vector<const BufferLoadNode*>& loads) {
  if (auto* b = v.as<BinaryNode>()) {
    loads = {b->a.as<BufferLoadNode>(), b->b.as<BufferLoadNode>()};
    return packed_op_name(b->op);
  }
  if (auto* c = v.as<CallNode>(); c && c->op == Intrinsic::Abs && c->args.size() == 1) {
    loads = {c->args[0].as<BufferLoadNode>()};
    return "abs2";
  }
  if (auto* c = v.as<CallNode>(); c && c->op == Intrinsic::Fma && c->args.size() == 3) {
    loads = {c->args[0].as<BufferLoadNode>(), c->args[1].as<BufferLoadNode>(), c->args[2].as<BufferLoadNode>()};
    return "fma2";
  }
  return nullptr;
}

class PairStores : public IRMutator {
 public:
  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const SeqNode* op, const Stmt& self) override {
    Stmt mutated = IRMutator::visit(op, self);
    auto* seq_node = mutated.as<SeqNode>();
    if (!seq_node) return mutated;
    std::vector<Stmt> out;
    bool changed = false;
    const std::vector<Stmt>& s = seq_node->seq;
    for (size_t i = 0; i < s.size(); ++i) {
      if (i + 1 < s.size()) {
        Stmt pair = paired(s[i], s[i + 1]);
        if (pair.defined()) {
          out.push_back(pair);
          ++i;
          changed = true;
          continue;
        }
      }
      out.push_back(s[i]);
    }
    return changed ? seq(std::move(out)) : mutated;
  }

 private:
  static Stmt paired(const Stmt& a, const Stmt& b) {
    auto* s0 = a.as<BufferStoreNode>();
    auto* s1 = b.as<BufferStoreNode>();
    if (!s0 || !s1 || !s0->buffer.same_as(s1->buffer)) return Stmt();
    const DataType t = s0->buffer->dtype;
    if (!pair_dtype(t) || s0->value.dtype() != t || s1->value.dtype() != t || !pairable_memory(s0->buffer) ||
        !next_element(s0->indices, s1->indices))
      return Stmt();
    std::vector<const BufferLoadNode*> l0, l1;
    const char* fn = lane_op(s0->value, l0);
    const char* fn1 = lane_op(s1->value, l1);
    if (!fn || !fn1 || std::string(fn) != fn1 || l0.size() != l1.size()) return Stmt();
    std::vector<Expr> args = {call(Intrinsic::AddressOf, {buffer_load(s0->buffer, s0->indices)})};
    for (size_t k = 0; k < l0.size(); ++k) {
      const BufferLoadNode *x0 = l0[k], *x1 = l1[k];
      if (!x0 || !x1 || !x0->buffer.same_as(x1->buffer) || x0->buffer->dtype != t || !pairable_memory(x0->buffer) ||
          !next_element(x0->indices, x1->indices))
        return Stmt();
      // The second store must not read what the first wrote.
      if (x0->buffer.same_as(s0->buffer) && !same_element(x0->indices, s0->indices)) return Stmt();
      args.push_back(call(Intrinsic::AddressOf, {buffer_load(x0->buffer, x0->indices)}));
    }
    return evaluate(call_extern(dtype::Void, packed_pair_call(fn, t), args));
  }
};

}  // namespace

PrimFunc pair_lane_stores(const PrimFunc& f) {
  return f.with_body(PairStores().mutate(f->body));
}

}  // namespace tl
