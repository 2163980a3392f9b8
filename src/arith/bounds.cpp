// Interval evaluation of integer expressions. Every rule returns a superset of the
// true range (under the no-overflow assumption), so a proof built on it is sound;
// precision is only sought for the shapes index expressions take.
#include "arith/bounds.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "arith/int_math.h"
#include "arith/simplify.h"

namespace tl {

using namespace arith_detail;

namespace {

using Bound = std::optional<int64_t>;

// One end of an interval extended with the infinities: kind -1 = -inf, +1 = +inf.
struct Ext {
  int kind = 0;
  int64_t v = 0;
  int sign() const { return kind != 0 ? kind : (v > 0) - (v < 0); }
};

Ext ext_low(const Bound& b) {
  return b ? Ext{0, *b} : Ext{-1, 0};
}
Ext ext_high(const Bound& b) {
  return b ? Ext{0, *b} : Ext{1, 0};
}

Ext ext_mul(Ext x, Ext y) {
  if ((x.kind == 0 && x.v == 0) || (y.kind == 0 && y.v == 0)) return {0, 0};
  int s = x.sign() * y.sign();
  if (x.kind != 0 || y.kind != 0) return {s, 0};
  if (auto r = checked_mul(x.v, y.v)) return {0, *r};
  return {s, 0};
}

bool ext_less(Ext x, Ext y) {
  if (x.kind != y.kind) return x.kind < y.kind;
  return x.kind == 0 && x.v < y.v;
}

// A lower (upper) end is only usable when it is finite; an infinite one on the
// wrong side cannot be represented and is conservatively dropped.
Bound finite(Ext x) {
  return x.kind == 0 ? Bound(x.v) : std::nullopt;
}

Bound min_bound(const Bound& a, const Bound& b) {
  if (!a || !b) return std::nullopt;
  return std::min(*a, *b);
}
Bound max_bound(const Bound& a, const Bound& b) {
  if (!a || !b) return std::nullopt;
  return std::max(*a, *b);
}

// The smaller of two upper ends (the larger of two lower ends); a missing end
// imposes nothing.
Bound tighter_max(const Bound& a, const Bound& b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}
Bound tighter_min(const Bound& a, const Bound& b) {
  if (!a) return b;
  if (!b) return a;
  return std::max(*a, *b);
}

int64_t trunc_div(int64_t a, int64_t b) {
  return a / b;
}

// The range a value of type t can hold where that is narrower than "anything":
// bools, unsigned types and integers narrower than 32 bits.
Interval natural_range(DataType t) {
  if (!t.is_scalar()) return Interval::everything();
  if (t.is_bool()) return Interval::range(0, 1);
  if (t.is_uint()) {
    if (t.bits() >= 64) return Interval::at_least(0);
    return Interval::range(0, (int64_t(1) << t.bits()) - 1);
  }
  if (t.is_int() && t.bits() < 32)
    return Interval::range(-(int64_t(1) << (t.bits() - 1)), (int64_t(1) << (t.bits() - 1)) - 1);
  return Interval::everything();
}

// The full range of an integer type (for casts that may wrap).
Interval type_range(DataType t) {
  if (t.is_int() && t.bits() >= 32 && t.bits() < 64)
    return Interval::range(-(int64_t(1) << (t.bits() - 1)), (int64_t(1) << (t.bits() - 1)) - 1);
  if (t.is_uint() && t.bits() == 32) return Interval::range(0, (int64_t(1) << 32) - 1);
  return natural_range(t);
}

bool is_subset(const Interval& a, const Interval& b) {
  if (b.min && (!a.min || *a.min < *b.min)) return false;
  if (b.max && (!a.max || *a.max > *b.max)) return false;
  return true;
}

// Arithmetic on unsigned and narrow integers wraps: a result that leaves the type's
// range may have wrapped to any value of it. (int32/int64 overflow is assumed away.)
Interval wrapped(const Interval& r, DataType t) {
  bool wraps = t.is_uint() || (t.is_int() && t.bits() < 32);
  if (!wraps) return r;
  Interval full = type_range(t);
  return is_subset(r, full) ? r : full;
}

// Division of [lo, hi] by the constant c, for a division `div` that is monotonic
// in its numerator (floor and truncating division both are).
template <typename Div>
Interval divide_by_const(const Interval& a, int64_t c, Div div) {
  if (c == 0) return Interval::everything();
  if (c == -1) return interval_scale(a, -1);
  Bound lo = a.min ? Bound(div(*a.min, c)) : std::nullopt;
  Bound hi = a.max ? Bound(div(*a.max, c)) : std::nullopt;
  if (c > 0) return {lo, hi};
  return {hi, lo};
}

// Division of [lo, hi] by a divisor known to be positive, in [dl, dh]. For a fixed
// numerator the quotient is monotonic in the divisor, so the corners bound it;
// `at_inf` is the quotient of a numerator by an unbounded divisor.
template <typename Div, typename AtInf>
Interval divide_by_positive(const Interval& a, const Interval& d, Div div, AtInf at_inf) {
  auto quot = [&](int64_t x, const Bound& dv) { return dv ? div(x, *dv) : at_inf(x); };
  Bound lo = a.min ? Bound(std::min(quot(*a.min, d.min), quot(*a.min, d.max))) : std::nullopt;
  Bound hi = a.max ? Bound(std::max(quot(*a.max, d.min), quot(*a.max, d.max))) : std::nullopt;
  return {lo, hi};
}

Interval floormod_by_const(const Interval& a, int64_t c) {
  if (c == 0) return Interval::everything();
  if (c < 0) return Interval::range(c + 1, 0);
  if (a.is_bounded() && floor_div(*a.min, c) == floor_div(*a.max, c)) {
    int64_t base = floor_div(*a.min, c) * c;
    return Interval::range(*a.min - base, *a.max - base);
  }
  return Interval::range(0, c - 1);
}

// Truncating remainder: its sign follows the numerator and |a % c| <= min(|a|, |c| - 1).
Interval truncmod_by_magnitude(const Interval& a, Bound m) {
  Interval limit{m ? Bound(-*m) : std::nullopt, m};
  if (a.min && *a.min >= 0) limit.min = 0;
  if (a.max && *a.max <= 0) limit.max = 0;
  Bound lo = a.min ? Bound(std::min<int64_t>(*a.min, 0)) : std::nullopt;
  Bound hi = a.max ? Bound(std::max<int64_t>(*a.max, 0)) : std::nullopt;
  return interval_intersect(limit, {lo, hi});
}

}  // namespace

// ---------------------------------------------------------------- intervals

Interval interval_add(const Interval& a, const Interval& b) {
  Interval r;
  if (a.min && b.min) r.min = checked_add(*a.min, *b.min);
  if (a.max && b.max) r.max = checked_add(*a.max, *b.max);
  return r;
}

Interval interval_scale(const Interval& a, int64_t c) {
  if (c == 0) return Interval::single(0);
  Bound lo = a.min ? checked_mul(*a.min, c) : std::nullopt;
  Bound hi = a.max ? checked_mul(*a.max, c) : std::nullopt;
  if (c > 0) return {lo, hi};
  return {hi, lo};
}

Interval interval_mul(const Interval& a, const Interval& b) {
  if (a.is_single()) return interval_scale(b, *a.min);
  if (b.is_single()) return interval_scale(a, *b.min);
  Ext corners[4] = {ext_mul(ext_low(a.min), ext_low(b.min)), ext_mul(ext_low(a.min), ext_high(b.max)),
                    ext_mul(ext_high(a.max), ext_low(b.min)), ext_mul(ext_high(a.max), ext_high(b.max))};
  Ext lo = corners[0], hi = corners[0];
  for (const Ext& c : corners) {
    if (ext_less(c, lo)) lo = c;
    if (ext_less(hi, c)) hi = c;
  }
  return {finite(lo), finite(hi)};
}

Interval interval_union(const Interval& a, const Interval& b) {
  return {min_bound(a.min, b.min), max_bound(a.max, b.max)};
}

Interval interval_intersect(const Interval& a, const Interval& b) {
  Interval r = a;
  if (b.min && (!r.min || *b.min > *r.min)) r.min = b.min;
  if (b.max && (!r.max || *b.max < *r.max)) r.max = b.max;
  return r;
}

// ---------------------------------------------------------------- analyzer

struct BoundAnalyzer::LetFrame {
  const VarNode* var;
  Interval range;
  const LetFrame* next;
};

void BoundAnalyzer::bind(const Var& v, int64_t min, int64_t max) {
  bind(v, Interval::range(min, max));
}

void BoundAnalyzer::bind(const Var& v, const Interval& range) {
  TL_ICHECK(v.defined(), "binding an undefined var");
  ranges_[v.node()] = Entry{v, range};
}

void BoundAnalyzer::bind_range(const Var& v, const Expr& min, const Expr& extent) {
  Interval lo = bounds(min), ext = bounds(extent);
  Interval r{lo.min, std::nullopt};
  if (lo.max && ext.max) {
    r.max = checked_add(*lo.max, *ext.max - 1);
    // An empty loop never runs its body; any range is sound, keep a non-empty one.
    if (r.max && r.min && *r.max < *r.min) r.max = r.min;
  }
  bind(v, r);
}

void BoundAnalyzer::unbind(const Var& v) {
  ranges_.erase(v.node());
}

std::optional<Interval> BoundAnalyzer::range_of(const VarNode* v) const {
  auto it = ranges_.find(v);
  if (it == ranges_.end()) return std::nullopt;
  return it->second.range;
}

Interval BoundAnalyzer::leaf_range(DataType t) const {
  return values_fit_types_ ? type_range(t) : natural_range(t);
}

Interval BoundAnalyzer::bounds(const Expr& e) const {
  return eval(e, nullptr);
}

bool BoundAnalyzer::can_prove(const Expr& cond) const {
  auto c = as_const_int(simplify(cond, this));
  return c && *c != 0;
}

Interval BoundAnalyzer::eval(const Expr& e, const LetFrame* lets) const {
  DataType t = e.dtype();
  if (auto* n = e.as<IntImmNode>()) return Interval::single(n->value);
  if (auto* n = e.as<VarNode>()) {
    for (const LetFrame* f = lets; f; f = f->next)
      if (f->var == n) return f->range;
    auto it = ranges_.find(n);
    if (it != ranges_.end()) return interval_intersect(it->second.range, leaf_range(t));
    return leaf_range(t);
  }
  if (auto* n = e.as<BinaryNode>()) return wrapped(eval_binary(n, lets), t);
  if (auto* n = e.as<UnaryNode>()) {
    if (n->op == UnaryOp::Not) return Interval::range(0, 1);
    Interval a = eval(n->a, lets);
    if (n->op == UnaryOp::Neg) return wrapped(interval_scale(a, -1), t);
    // ~x == -x - 1 for signed integers.
    if (t.is_int()) return wrapped(interval_add(interval_scale(a, -1), Interval::single(-1)), t);
    return natural_range(t);
  }
  if (auto* n = e.as<SelectNode>()) return interval_union(eval(n->true_value, lets), eval(n->false_value, lets));
  if (auto* n = e.as<CastNode>()) {
    DataType from = n->value.dtype();
    if (t.is_bool() || !(from.is_integer() || from.is_bool())) return natural_range(t);
    Interval a = eval(n->value, lets);
    Interval full = type_range(t);
    return is_subset(a, full) ? a : full;
  }
  if (auto* n = e.as<LetNode>()) {
    LetFrame frame{n->var.node(), eval(n->value, lets), lets};
    return eval(n->body, &frame);
  }
  if (auto* n = e.as<BroadcastNode>()) return eval(n->value, lets);
  if (auto* n = e.as<RampNode>()) {
    Interval steps = Interval::range(0, n->lanes - 1);
    return interval_add(eval(n->base, lets), interval_mul(eval(n->stride, lets), steps));
  }
  if (auto* n = e.as<CallNode>(); n && n->op == Intrinsic::Abs && t.is_int()) {
    Interval a = eval(n->args[0], lets);
    if (a.is_non_negative()) return a;
    Interval r = Interval::at_least(0);
    if (a.is_bounded() && *a.min > std::numeric_limits<int64_t>::min()) r.max = std::max(-*a.min, *a.max);
    return r;
  }
  // Loads, other calls, reinterprets, floats: nothing known beyond the type.
  return leaf_range(t);
}

Interval BoundAnalyzer::eval_binary(const BinaryNode* op, const LetFrame* lets) const {
  if (binary_op_is_comparison(op->op)) return Interval::range(0, 1);
  Interval a = eval(op->a, lets), b = eval(op->b, lets);
  switch (op->op) {
    case BinaryOp::Add:
      return interval_add(a, b);
    case BinaryOp::Sub:
      return interval_add(a, interval_scale(b, -1));
    case BinaryOp::Mul:
      return interval_mul(a, b);
    case BinaryOp::FloorDiv:
      if (b.is_single()) return divide_by_const(a, *b.min, floor_div);
      if (b.is_positive())
        return divide_by_positive(a, b, floor_div, [](int64_t x) { return x >= 0 ? int64_t(0) : int64_t(-1); });
      return Interval::everything();
    case BinaryOp::Div:
      if (b.is_single()) return divide_by_const(a, *b.min, trunc_div);
      if (b.is_positive()) return divide_by_positive(a, b, trunc_div, [](int64_t) { return int64_t(0); });
      return Interval::everything();
    case BinaryOp::FloorMod:
      if (b.is_single()) return floormod_by_const(a, *b.min);
      if (b.is_positive()) {
        Interval r{0, b.max ? Bound(*b.max - 1) : std::nullopt};
        return a.is_non_negative() ? interval_intersect(r, Interval{0, a.max}) : r;
      }
      return Interval::everything();
    case BinaryOp::Mod: {
      // |a % b| < |b|; only the magnitude of b matters. A b that may be 0 leaves a
      // itself (a % 0 == a), so then only |a % b| <= |a| is known.
      Bound m;
      bool may_be_zero = !(b.min && *b.min > 0) && !(b.max && *b.max < 0);
      if (b.is_bounded() && *b.min > std::numeric_limits<int64_t>::min() && !may_be_zero)
        m = std::max(std::abs(*b.min), std::abs(*b.max)) - 1;
      return truncmod_by_magnitude(a, m);
    }
    case BinaryOp::Min:
      return {min_bound(a.min, b.min), tighter_max(a.max, b.max)};
    case BinaryOp::Max:
      return {tighter_min(a.min, b.min), max_bound(a.max, b.max)};
    case BinaryOp::BitAnd: {
      // Masking with a non-negative value gives a value between 0 and the mask.
      Interval r = Interval::everything();
      if (b.is_non_negative()) r = interval_intersect(r, Interval{0, b.max});
      if (a.is_non_negative()) r = interval_intersect(r, Interval{0, a.max});
      return r;
    }
    case BinaryOp::BitOr:
    case BinaryOp::BitXor:
      if (a.is_non_negative() && b.is_non_negative()) return Interval::at_least(0);
      return natural_range(op->dtype);
    case BinaryOp::Shl:
      if (b.is_single() && *b.min >= 0 && *b.min <= 62) return interval_scale(a, int64_t(1) << *b.min);
      return natural_range(op->dtype);
    case BinaryOp::Shr:
      if (b.is_single() && *b.min >= 0 && *b.min <= 62) return divide_by_const(a, int64_t(1) << *b.min, floor_div);
      return natural_range(op->dtype);
    case BinaryOp::EQ:
    case BinaryOp::NE:
    case BinaryOp::LT:
    case BinaryOp::LE:
    case BinaryOp::GT:
    case BinaryOp::GE:
    case BinaryOp::And:
    case BinaryOp::Or:
      return Interval::range(0, 1);
  }
  TL_UNREACHABLE("bad BinaryOp");
}

// ---------------------------------------------------------------- scopes

BindingScope::~BindingScope() {
  for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
    if (it->second)
      analyzer_.bind(it->first, *it->second);
    else
      analyzer_.unbind(it->first);
  }
}

void BindingScope::bind(const Var& v, const Interval& r) {
  save(v);
  analyzer_.bind(v, r);
}

void BindingScope::bind_range(const Var& v, const Expr& min, const Expr& extent) {
  save(v);
  analyzer_.bind_range(v, min, extent);
}

void BindingScope::bind_launch(const KernelLaunchNode* op) {
  for (size_t i = 0; i < op->block_vars.size() && i < op->grid.size(); ++i)
    bind_range(op->block_vars[i], int_imm(0, op->grid[i].dtype()), op->grid[i]);
  for (size_t i = 0; i < op->thread_vars.size() && i < op->threads.size(); ++i)
    bind(op->thread_vars[i], Interval::range(0, std::max<int64_t>(op->threads[i], 1) - 1));
}

void BindingScope::save(const Var& v) {
  saved_.emplace_back(v, analyzer_.range_of(v.node()));
}

}  // namespace tl
