// See vectorize_loops.h. The proof is a small abstract interpretation of the offset
// expression: each subexpression is summarized as G + c * e (G free of the lane e,
// known to be a multiple of m); division, remainder, shifts and bit operations keep
// that form only where the lane part provably stays below the granularity of G, so
// no carry or borrow can cross it.
#include "transform/vectorize_loops.h"

#include <map>
#include <optional>
#include <set>

#include "analysis/host_assumes.h"
#include "arith/bounds.h"
#include "arith/int_math.h"
#include "arith/simplify.h"
#include "ir/attrs.h"
#include "ir/device_calls.h"
#include "ir/visitor.h"
#include "layout/layout.h"
#include "ops/extent_util.h"
#include "support/error.h"

namespace tl {
namespace {

using arith_detail::gcd_abs;

// expr == G + coef * e, with G free of e and a multiple of `mod` (mod 0: G == 0).
struct LaneForm {
  int64_t coef = 0;
  int64_t mod = 1;
};

// 2^k for the trailing zero bits of m (m == 0: G is 0, which has all of them).
int trailing_zeros(int64_t m) {
  return m == 0 ? 62 : __builtin_ctzll(static_cast<uint64_t>(m));
}
int64_t pow2_or_zero(int k) {
  return k >= 62 ? 0 : int64_t(1) << k;
}

class LaneAnalysis {
 public:
  // `lets`: the values of the integer lets around the loop (free of the lane), whose
  // alignment a run's offset may rest on (`base = tx * 4` before the loop).
  // `multiples`: the host vars every launch checks to be multiples of a constant
  // (`T.assume(N % 4 == 0)`, analysis/host_assumes.h).
  LaneAnalysis(const VarNode* lane, int64_t width, const BoundAnalyzer& bounds,
               const std::map<const VarNode*, Expr>& lets, const std::map<const VarNode*, int64_t>& multiples)
      : lane_(lane), width_(width), bounds_(bounds), lets_(lets), multiples_(multiples) {}

  std::optional<LaneForm> of(const Expr& x) const {
    if (auto k = as_const_int(x)) {
      if (*k == INT64_MIN) return std::nullopt;
      return LaneForm{0, *k < 0 ? -*k : *k};
    }
    if (auto* v = x.as<VarNode>()) {
      if (v == lane_) return LaneForm{1, 0};
      auto it = lets_.find(v);
      if (it == lets_.end()) {
        auto m = multiples_.find(v);
        return LaneForm{0, m == multiples_.end() ? 1 : m->second};
      }
      auto f = of(it->second);
      return f && f->coef == 0 ? *f : LaneForm{0, 1};
    }
    if (auto* c = x.as<CastNode>()) {
      bool widening = c->dtype.is_integer() && c->value.dtype().is_integer() && !c->value.dtype().is_bool() &&
                      c->dtype.bits() >= c->value.dtype().bits();
      return widening ? of(c->value) : free(x);
    }
    if (auto* u = x.as<UnaryNode>()) {
      if (u->op != UnaryOp::Neg) return free(x);
      auto a = of(u->a);
      if (!a) return std::nullopt;
      return LaneForm{-a->coef, a->mod};
    }
    auto* b = x.as<BinaryNode>();
    if (!b || !x.dtype().is_integer()) return free(x);
    switch (b->op) {
      case BinaryOp::Add:
      case BinaryOp::Sub: {
        auto l = of(b->a), r = of(b->b);
        if (!l || !r) return std::nullopt;
        return LaneForm{b->op == BinaryOp::Add ? l->coef + r->coef : l->coef - r->coef, gcd_abs(l->mod, r->mod)};
      }
      case BinaryOp::Mul: {
        if (auto k = as_const_int(b->a)) return scaled(of(b->b), *k);
        if (auto k = as_const_int(b->b)) return scaled(of(b->a), *k);
        auto l = of(b->a), r = of(b->b);
        if (!l || !r || l->coef || r->coef) return std::nullopt;
        int64_t m;
        if (__builtin_mul_overflow(l->mod, r->mod, &m)) m = 1;
        return LaneForm{0, m < 0 ? 1 : m};
      }
      case BinaryOp::Shl: {
        auto k = as_const_int(b->b);
        if (!k || *k < 0 || *k > 30) return free(x);
        return scaled(of(b->a), int64_t(1) << *k);
      }
      case BinaryOp::FloorDiv:
      case BinaryOp::Div:
      case BinaryOp::Shr: {
        auto d = divisor(b);
        if (!d) return free(x);
        auto l = of(b->a);
        if (!l) return std::nullopt;
        if (l->coef && !(lane_stays_below(*l, *d) && (b->op != BinaryOp::Div || non_negative(b->a))))
          return std::nullopt;
        // floor(G / d) (G + c*e has the same quotient): exact when d divides m.
        return LaneForm{0, l->mod == 0 ? 0 : (l->mod % *d == 0 ? l->mod / *d : 1)};
      }
      case BinaryOp::FloorMod:
      case BinaryOp::Mod: {
        auto d = as_const_int(b->b);
        if (!d || *d <= 0) return free(x);
        auto l = of(b->a);
        if (!l) return std::nullopt;
        if (l->coef && !(lane_stays_below(*l, *d) && (b->op != BinaryOp::Mod || non_negative(b->a))))
          return std::nullopt;
        // (G mod d) + c*e; G mod d is a multiple of gcd(m, d).
        return LaneForm{l->coef, l->mod == 0 ? 0 : gcd_abs(l->mod, *d)};
      }
      case BinaryOp::BitXor:
      case BinaryOp::BitOr:
      case BinaryOp::BitAnd:
        return bitwise(b);
      default:
        return free(x);
    }
  }

 private:
  // An expression free of the lane, with nothing known of its value; nullopt when
  // it reads the lane in a way the analysis does not follow.
  std::optional<LaneForm> free(const Expr& x) const {
    if (reads_var(x, lane_)) return std::nullopt;
    return LaneForm{0, 1};
  }

  static std::optional<LaneForm> scaled(std::optional<LaneForm> f, int64_t k) {
    if (!f) return std::nullopt;
    int64_t c, m;
    if (__builtin_mul_overflow(f->coef, k, &c) || __builtin_mul_overflow(f->mod, k < 0 ? -k : k, &m))
      return std::nullopt;
    return LaneForm{c, m};
  }

  // The positive constant a division or right shift divides by.
  static std::optional<int64_t> divisor(const BinaryNode* b) {
    auto k = as_const_int(b->b);
    if (!k) return std::nullopt;
    if (b->op == BinaryOp::Shr) {
      if (*k < 0 || *k > 30) return std::nullopt;
      return int64_t(1) << *k;
    }
    if (*k <= 0) return std::nullopt;
    return *k;
  }

  // c * e (e < width) stays below the granularity gcd(m, d) of G modulo d, so adding
  // it never changes G's quotient by d and adds exactly c * e to its remainder.
  bool lane_stays_below(const LaneForm& f, int64_t d) const {
    if (f.coef < 0 || f.coef > (int64_t(1) << 20)) return false;
    int64_t g = f.mod == 0 ? d : gcd_abs(f.mod, d);
    return f.coef * (width_ - 1) < g;
  }

  // Truncating division and remainder agree with the floor ones on a non-negative
  // dividend only.
  bool non_negative(const Expr& x) const { return bounds_.bounds(x).is_non_negative(); }

  // Bit operations: G's low bits are zero up to its power-of-two granularity, so a
  // lane part below that granularity passes through untouched (xor and or) or where a
  // constant mask keeps those bits (and).
  std::optional<LaneForm> bitwise(const BinaryNode* b) const {
    auto l = of(b->a), r = of(b->b);
    if (!l || !r) return std::nullopt;
    int tl = trailing_zeros(l->mod), tr = trailing_zeros(r->mod);
    if (!l->coef && !r->coef) {
      int k = b->op == BinaryOp::BitAnd ? std::max(tl, tr) : std::min(tl, tr);
      return LaneForm{0, pow2_or_zero(k)};
    }
    if (l->coef && r->coef) return std::nullopt;
    const LaneForm& lane = l->coef ? *l : *r;
    const LaneForm& other = l->coef ? *r : *l;
    if (lane.coef < 0 || lane.coef > (int64_t(1) << 20)) return std::nullopt;
    int64_t span = lane.coef * (width_ - 1);  // the lane part's largest value
    int t = 0;
    while ((int64_t(1) << t) <= span) ++t;
    if (trailing_zeros(lane.mod) < t) return std::nullopt;
    if (b->op == BinaryOp::BitAnd) {
      auto mask = as_const_int(l->coef ? b->b : b->a);
      int64_t low = (int64_t(1) << t) - 1;
      if (!mask || (*mask & low) != low) return std::nullopt;
      return LaneForm{lane.coef, pow2_or_zero(t)};
    }
    if (trailing_zeros(other.mod) < t) return std::nullopt;
    return LaneForm{lane.coef, pow2_or_zero(std::min(trailing_zeros(lane.mod), trailing_zeros(other.mod)))};
  }

  const VarNode* lane_;
  int64_t width_;
  const BoundAnalyzer& bounds_;
  const std::map<const VarNode*, Expr>& lets_;
  const std::map<const VarNode*, int64_t>& multiples_;
};

// The element offset of `indices` in `b` as code generation computes it.
Expr flat_offset(const Buffer& b, const std::vector<Expr>& indices) {
  if (b->layout) return b->layout->offset(b, indices);
  std::vector<Expr> strides = b.effective_strides();
  Expr off = int_imm(0, indices.empty() ? dtype::Int32 : indices[0].dtype());
  for (size_t i = 0; i < indices.size(); ++i) off = add(off, mul(indices[i], strides[i]));
  return off;
}

bool vectorizable_dtype(DataType t) {
  return t.lanes() == 1 && !t.is_bool() && !t.is_sub_byte() && t.bits() % 8 == 0 && t.bits() <= 64;
}

bool pure_index(const Expr& e) {
  bool pure = true;
  for_each_expr(e, [&](const Expr& x) { pure = pure && !x.is<BufferLoadNode>() && !x.is<CallNode>(); });
  return pure;
}

// One copy of the loop body: dst[dst_idx] = src[src_idx], lets substituted; or a
// fill, dst[dst_idx] = value with a value the same in every iteration (src undefined).
struct Copy {
  Stmt stmt;
  const BufferStoreNode* store;
  Buffer dst, src;
  std::vector<Expr> dst_idx, src_idx;
  Expr fill;
  std::vector<const BufferNode*> fill_reads;  // the buffers the fill's value loads
};

// Whether `value` is the same in every iteration of the loop over `lane`: free of the
// lane and of calls (a call may have effects or differ per evaluation); the buffers it
// loads are collected, so that a store of the loop writing one refuses the fill.
bool lane_invariant(const Expr& value, const VarNode* lane, std::vector<const BufferNode*>* reads) {
  bool invariant = true;
  for_each_expr(value, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>(); v && v == lane) invariant = false;
    if (x.is<CallNode>()) invariant = false;
    if (auto* l = x.as<BufferLoadNode>()) reads->push_back(l->buffer.get());
  });
  return invariant;
}

class Vectorize : public IRMutator {
 public:
  Vectorize(const PrimFunc& f, const Target& target)
      : base_align_(target.tensor_base_alignment()), multiples_(host_multiples(f)) {
    // Tensor parameters start aligned (the runtime refuses others); pointers passed as
    // integers and workspaces are not checked, so they stay element-wise.
    for (const Param& p : f->params)
      if (p.is_tensor() && !p.address && !p.workspace) aligned_params_.insert(p.buffer.get());
  }

  using IRMutator::mutate;

 protected:
  using IRMutator::visit;

  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override {
    BindingScope scope(bounds_);
    scope.bind_launch(op);
    return IRMutator::visit(op, self);
  }

  Stmt visit(const LetStmtNode* op, const Stmt& self) override {
    BindingScope scope(bounds_);
    if (!op->var.dtype().is_integer()) return IRMutator::visit(op, self);
    scope.bind(op->var, bounds_.bounds(op->value));
    if (!pure_index(op->value)) return IRMutator::visit(op, self);
    lets_[op->var.node()] = op->value;
    Stmt out = IRMutator::visit(op, self);
    lets_.erase(op->var.node());
    return out;
  }

  // Block ops are spread over the threads by the code generator: left as they are.
  Stmt visit(const AttrNode* op, const Stmt& self) override {
    if (op->key == kBlockOpAttr) return self;
    return IRMutator::visit(op, self);
  }

  Stmt visit(const ForNode* op, const Stmt& self) override {
    if (op->for_kind == ForKind::Vectorized)
      if (auto s = vectorized(op)) return *s;
    BindingScope scope(bounds_);
    scope.bind_range(op->var, op->min, op->extent);
    return IRMutator::visit(op, self);
  }

 private:
  // How a buffer's side of a copy may be widened: Shared and Aligned need the run's
  // offset to be a multiple of w (their bases are aligned), Register only contiguity.
  enum class Side { None, Register, Shared, Aligned };

  Side side_of(const Buffer& b) const {
    if (is_shared(b)) return Side::Shared;
    if (b->scope == Scope::Local) return Side::Register;
    if (b->scope == Scope::Global && base_align_ > 0 && aligned_params_.count(b.get())) return Side::Aligned;
    return Side::None;
  }

  std::optional<Stmt> vectorized(const ForNode* op) {
    auto n = as_const_int(op->extent);
    if (!n || *n < 2) return std::nullopt;
    // The body: lets of pure index arithmetic, then stores of loads or of values the
    // same in every iteration (fills). Iterations of a T.vectorized loop are
    // independent, so copies and fills of distinct buffers, none writing what another
    // reads, may run as one loop each.
    std::vector<std::pair<Var, Expr>> let_chain;
    std::map<const VarNode*, Expr> lets;
    Stmt body = op->body;
    while (auto* l = body.as<LetStmtNode>()) {
      if (!pure_index(l->value)) return std::nullopt;
      let_chain.emplace_back(l->var, l->value);
      lets[l->var.node()] = substitute(l->value, lets);
      body = l->body;
    }
    std::vector<Stmt> stmts;
    if (auto* seq = body.as<SeqNode>())
      stmts = seq->seq;
    else
      stmts = {body};
    std::vector<Copy> copies;
    for (const Stmt& st : stmts) {
      // A T.assume in the body (`T.assume(base + i < N)`) is a hint the simplifier has
      // used already; the vector form drops it.
      if (auto* ev = st.as<EvaluateNode>())
        if (auto* c = ev->value.as<CallNode>(); c && c->op == Intrinsic::Assume) continue;
      auto* store = st.as<BufferStoreNode>();
      if (!store) return std::nullopt;
      auto* load = store->value.as<BufferLoadNode>();
      Copy c{st, store, store->buffer, Buffer(), {}, {}, Expr(), {}};
      for (const Expr& e : store->indices) c.dst_idx.push_back(substitute(e, lets));
      Expr value = substitute(store->value, lets);
      std::vector<const BufferNode*> reads;
      if (lane_invariant(value, op->var.node(), &reads)) {
        // A fill (`A[i] = 0`, `A[i] = B[0]`): every iteration stores the same value.
        c.fill = value;
        c.fill_reads = std::move(reads);
      } else if (load) {
        c.src = load->buffer;
        for (const Expr& e : load->indices) c.src_idx.push_back(substitute(e, lets));
      } else {
        return std::nullopt;
      }
      for (const auto* idx : {&c.dst_idx, &c.src_idx})
        for (const Expr& e : *idx)
          if (!pure_index(e)) return std::nullopt;
      copies.push_back(std::move(c));
    }
    for (size_t i = 0; i < copies.size(); ++i)
      for (size_t j = 0; j < copies.size(); ++j) {
        if (copies[i].dst.same_as(copies[j].src) || (i != j && copies[i].dst.same_as(copies[j].dst)))
          return std::nullopt;
        for (const BufferNode* r : copies[j].fill_reads)
          if (copies[i].dst.get() == r) return std::nullopt;
      }
    std::vector<Stmt> out;
    bool widened = false;
    for (const Copy& c : copies) {
      if (auto v = widen(op, c)) {
        out.push_back(*v);
        widened = true;
        continue;
      }
      Stmt one = c.stmt;
      for (auto it = let_chain.rbegin(); it != let_chain.rend(); ++it) one = let_stmt(it->first, it->second, one);
      out.push_back(for_loop(op->var, op->min, op->extent, ForKind::Vectorized, one, op->annotations, op->span));
    }
    if (!widened) return std::nullopt;
    return seq(out);
  }

  // One copy as vector accesses of the widest width the proof accepts, if any.
  std::optional<Stmt> widen(const ForNode* op, const Copy& c) {
    const int64_t n = *as_const_int(op->extent);
    const bool fill = c.fill.defined();
    if (!vectorizable_dtype(c.dst->dtype)) return std::nullopt;
    if (fill ? c.fill.dtype() != c.dst->dtype : c.dst->dtype != c.src->dtype) return std::nullopt;
    // A fill has no source: its value is held in registers (Register never widens alone).
    Side dst = side_of(c.dst), src = fill ? Side::Register : side_of(c.src);
    if (dst == Side::None || src == Side::None) return std::nullopt;
    if (dst == Side::Register && src == Side::Register) return std::nullopt;  // nothing to widen
    const int64_t elem_bytes = c.dst->dtype.bits() / 8;
    for (int64_t w = 16 / elem_bytes; w >= 2; w /= 2) {
      if (n % w != 0) continue;
      if ((dst == Side::Aligned || src == Side::Aligned) && w * elem_bytes > base_align_) continue;
      Var q("vq", op->var.dtype()), e("ve", op->var.dtype());
      BindingScope scope(bounds_);
      scope.bind(q, Interval::range(0, n / w - 1));
      scope.bind(e, Interval::range(0, w - 1));
      std::map<const VarNode*, Expr> at_lane{
          {op->var.node(), add(op->min, add(mul(q, make_const(q.dtype(), double(w))), e))}};
      LaneAnalysis lanes(e.node(), w, bounds_, lets_, multiples_);
      auto contiguous = [&](const Buffer& b, const std::vector<Expr>& idx, Side side) {
        std::vector<Expr> at;
        for (const Expr& i : idx) at.push_back(substitute(i, at_lane));
        auto f = lanes.of(flat_offset(b, at));
        return f && f->coef == 1 && (side == Side::Register || f->mod % w == 0);
      };
      if (!contiguous(c.dst, c.dst_idx, dst) || (!fill && !contiguous(c.src, c.src_idx, src))) continue;
      // Registers are read or written element by element, memory in one access; a
      // fill writes w copies of its value in one access.
      const char* helper = fill                    ? "tl::fill_vec"
                           : dst == Side::Register ? kLoadVecCall
                           : src == Side::Register ? kStoreVecCall
                                                   : kCopyVecCall;
      return runs(op, c, q, w, helper);
    }
    return std::nullopt;
  }

  // One vector access per run of w elements; the run starts at v = min + q * w.
  Stmt runs(const ForNode* op, const Copy& c, const Var& q, int64_t w, const char* helper) {
    int64_t count = *as_const_int(op->extent) / w;
    Expr start = count == 1 ? op->min : add(op->min, mul(q, make_const(q.dtype(), double(w))));
    std::map<const VarNode*, Expr> at_start{{op->var.node(), start}};
    auto at = [&](const Buffer& b, const std::vector<Expr>& idx, AddressAccess access) {
      std::vector<Expr> out;
      for (const Expr& i : idx) out.push_back(simplify(substitute(i, at_start), &bounds_));
      return address_of(buffer_load(b, out), access);
    };
    Expr from = c.fill.defined() ? c.fill : at(c.src, c.src_idx, AddressAccess::Read);
    Stmt copy = evaluate(
        call_extern(dtype::Void, device_call_name(helper, {w}), {at(c.dst, c.dst_idx, AddressAccess::Write), from}),
        c.store->span);
    if (count == 1) return copy;
    return for_loop(q, int_imm(0, q.dtype()), int_imm(count, q.dtype()), ForKind::Unrolled, copy, {}, op->span);
  }

  BoundAnalyzer bounds_;
  std::map<const VarNode*, Expr> lets_;  // integer lets of index arithmetic around the walk
  int64_t base_align_;
  std::map<const VarNode*, int64_t> multiples_;  // host-checked `v % m == 0`
  std::set<const BufferNode*> aligned_params_;
};

}  // namespace

PrimFunc vectorize_loops(const PrimFunc& f, const Target& target) {
  return f.with_body(Vectorize(f, target).mutate(f->body));
}

}  // namespace tl
