// The simplifier. Integer index arithmetic is flattened into a sum of
// coefficient x term plus a constant (terms sorted by ExprOrder), rewritten by
// rules that are exact for floor division, and rebuilt through the typed
// constructors of ir/op.h so dtypes never change. Rules that only hold on part
// of the integers (truncating division, dropping a floordiv) first ask the bounds.
#include "arith/simplify.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "arith/expr_order.h"
#include "arith/int_math.h"
#include "ir/visitor.h"

namespace tl {

using namespace arith_detail;

namespace {

// The types whose arithmetic is put into affine form: signed integers whose
// overflow we may assume away. Narrow and unsigned integers wrap, so the
// ring-free rules (division, comparison) would not hold for them.
bool is_index_type(DataType t) {
  return t.is_scalar() && t.is_int() && t.bits() >= 32;
}

struct Term {
  Expr e;
  int64_t coeff;
};

// sum(coeff * term) + constant, in dtype `dtype`. `ok` turns false when a
// coefficient overflowed; the caller then keeps the expression it started from.
struct Sum {
  explicit Sum(DataType t) : dtype(t) {}
  DataType dtype;
  std::vector<Term> terms;
  int64_t constant = 0;
  bool ok = true;

  void add_const(int64_t c) {
    auto r = checked_add(constant, c);
    ok = ok && r.has_value();
    constant = r.value_or(0);
  }
  void add_term(const Expr& e, int64_t c) { terms.push_back({e, c}); }
  bool is_const() const { return terms.empty(); }
  // True when the sum is exactly one term with coefficient 1.
  const Expr* single_term() const {
    return terms.size() == 1 && constant == 0 && terms[0].coeff == 1 ? &terms[0].e : nullptr;
  }
};

// Returns the result of x*y or marks `s` as overflowed.
int64_t mul_or_fail(Sum* s, int64_t x, int64_t y) {
  auto r = checked_mul(x, y);
  s->ok = s->ok && r.has_value();
  return r.value_or(0);
}

const BinaryNode* as_binary(const Expr& e, BinaryOp op) {
  auto* b = e.as<BinaryNode>();
  return b && b->op == op ? b : nullptr;
}

// Folds an operation on two float32/float64 literals in the precision of the type.
std::optional<Expr> fold_float(BinaryOp op, const Expr& a, const Expr& b) {
  auto *x = a.as<FloatImmNode>(), *y = b.as<FloatImmNode>();
  DataType t = a.dtype();
  if (!x || !y || !(t == dtype::Float32 || t == dtype::Float64)) return std::nullopt;
  auto fold = [&](auto u, auto v) -> std::optional<Expr> {
    switch (op) {
      case BinaryOp::Add:
        return float_imm(double(u + v), t);
      case BinaryOp::Sub:
        return float_imm(double(u - v), t);
      case BinaryOp::Mul:
        return float_imm(double(u * v), t);
      case BinaryOp::Div:
        return float_imm(double(u / v), t);
      case BinaryOp::Min:  // the GPU's min: a NaN operand gives the other, -0 below +0
      case BinaryOp::Max: {
        bool is_min = op == BinaryOp::Min;
        if (std::isnan(u) || std::isnan(v))
          return std::isnan(u) && std::isnan(v) ? std::nullopt : std::optional<Expr>(std::isnan(u) ? b : a);
        if (u == v) return std::signbit(u) == is_min ? a : b;
        return (u < v) == is_min ? a : b;
      }
      case BinaryOp::EQ:
        return bool_imm(u == v);
      case BinaryOp::NE:
        return bool_imm(u != v);
      case BinaryOp::LT:
        return bool_imm(u < v);
      case BinaryOp::LE:
        return bool_imm(u <= v);
      case BinaryOp::GT:
        return bool_imm(u > v);
      case BinaryOp::GE:
        return bool_imm(u >= v);
      case BinaryOp::Mod:
      case BinaryOp::FloorDiv:
      case BinaryOp::FloorMod:
      case BinaryOp::And:
      case BinaryOp::Or:
      case BinaryOp::BitAnd:
      case BinaryOp::BitOr:
      case BinaryOp::BitXor:
      case BinaryOp::Shl:
      case BinaryOp::Shr:
        return std::nullopt;
    }
    return std::nullopt;
  };
  if (t == dtype::Float32) return fold(float(x->value), float(y->value));
  return fold(x->value, y->value);
}

// <, <=, >, >=, ==, != (the bool-valued ops other than && and ||).
bool is_compare_op(BinaryOp op) {
  return binary_op_is_comparison(op) && op != BinaryOp::And && op != BinaryOp::Or;
}
bool is_division_op(BinaryOp op) {
  return op == BinaryOp::Div || op == BinaryOp::Mod || op == BinaryOp::FloorDiv || op == BinaryOp::FloorMod;
}
bool is_linear_op(BinaryOp op) {
  return op == BinaryOp::Add || op == BinaryOp::Sub || op == BinaryOp::Mul;
}

// The comparison that holds exactly when `op` (a compare op) does not; integers
// have no NaN, so this is exact.
BinaryOp negate_comparison(BinaryOp op) {
  if (op == BinaryOp::LT) return BinaryOp::GE;
  if (op == BinaryOp::LE) return BinaryOp::GT;
  if (op == BinaryOp::GT) return BinaryOp::LE;
  if (op == BinaryOp::GE) return BinaryOp::LT;
  if (op == BinaryOp::EQ) return BinaryOp::NE;
  TL_ICHECK(op == BinaryOp::NE, "negating ", binary_op_symbol(op));
  return BinaryOp::EQ;
}

bool is_int_comparison(const BinaryNode* b) {
  return is_compare_op(b->op) && is_index_type(b->a.dtype());
}

// ---------------------------------------------------------------- expressions

class ExprSimplifier : public IRMutator {
 public:
  explicit ExprSimplifier(const BoundAnalyzer& bounds) : bounds_(&bounds) {}

  Expr run(const Expr& e) {
    Expr r = mutate(e);
    // Hand back the input when nothing changed, so callers keep sharing it.
    return order_.equal(r, e) ? e : r;
  }

  // The linear fact that the integer comparison `a op b` (simplified) promises, if it
  // is linear and not `!=`.
  std::optional<BoundAnalyzer::LinearFact> fact_of(BinaryOp op, const Expr& a, const Expr& b);

 protected:
  using IRMutator::visit;
  Expr visit(const BinaryNode* op, const Expr& self) override;
  Expr visit(const UnaryNode* op, const Expr& self) override;
  Expr visit(const SelectNode* op, const Expr& self) override;
  Expr visit(const LetNode* op, const Expr& self) override;

 private:
  // Affine form. `linearize` simplifies the non-linear parts it meets; `parse`
  // reads an already simplified expression as it is.
  void linearize(const Expr& e, int64_t scale, Sum* out, bool simplify_atoms);
  void linearize_mul(const Expr& e, const BinaryNode* op, int64_t scale, Sum* out, bool simplify_atoms);
  Sum parse(const Expr& e) {
    Sum s(e.dtype());
    linearize(e, 1, &s, false);
    normalize(&s);
    return s;
  }
  void normalize(Sum* s);
  void fuse_div_mod(Sum* s);
  Expr to_expr(const Sum& s);
  Expr make_product(const Expr& a, const Expr& b);
  Interval sum_bounds(const Sum& s) const;

  Expr simplify_division(BinaryOp op, const Expr& a, const Expr& b);
  Expr floordiv_rule(const Expr& a, int64_t c, bool trunc);
  Expr floormod_rule(const Expr& a, int64_t c, bool trunc);
  Expr floormod_reduced(const Sum& rest, int64_t c, bool trunc);
  Expr simplify_min_max(BinaryOp op, const Expr& a, const Expr& b);
  std::optional<bool> prove_compare(BinaryOp op, const Expr& a, const Expr& b);
  // a - b as a normalized sum (ok false when it overflowed).
  Sum difference(const Expr& a, const Expr& b);
  // The range of a sum's terms (without its constant) that the promises give.
  Interval fact_bounds(const Sum& s);

  const BoundAnalyzer* bounds_;
  ExprOrder order_;
};

void ExprSimplifier::linearize(const Expr& e, int64_t scale, Sum* out, bool simplify_atoms) {
  if (!out->ok) return;
  if (auto* c = e.as<IntImmNode>()) {
    out->add_const(mul_or_fail(out, c->value, scale));
    return;
  }
  if (auto* b = e.as<BinaryNode>(); b && is_index_type(b->dtype) && is_linear_op(b->op)) {
    if (b->op == BinaryOp::Mul) return linearize_mul(e, b, scale, out, simplify_atoms);
    linearize(b->a, scale, out, simplify_atoms);
    int64_t rhs_scale = b->op == BinaryOp::Sub ? mul_or_fail(out, scale, -1) : scale;
    linearize(b->b, rhs_scale, out, simplify_atoms);
    return;
  }
  if (auto* u = e.as<UnaryNode>(); u && u->op == UnaryOp::Neg && is_index_type(u->dtype)) {
    linearize(u->a, mul_or_fail(out, scale, -1), out, simplify_atoms);
    return;
  }
  if (!simplify_atoms) {
    out->add_term(e, scale);
    return;
  }
  // The simplified atom may itself be linear (a floordiv that split, say).
  linearize(mutate(e), scale, out, false);
}

void ExprSimplifier::linearize_mul(const Expr& e, const BinaryNode* op, int64_t scale, Sum* out, bool simplify_atoms) {
  if (!simplify_atoms) {
    // Simplified products keep their constant factor on one side.
    if (auto c = as_const_int(op->b)) return linearize(op->a, mul_or_fail(out, scale, *c), out, false);
    if (auto c = as_const_int(op->a)) return linearize(op->b, mul_or_fail(out, scale, *c), out, false);
    out->add_term(e, scale);
    return;
  }
  Sum sa(op->dtype), sb(op->dtype);
  linearize(op->a, 1, &sa, true);
  linearize(op->b, 1, &sb, true);
  normalize(&sa);
  normalize(&sb);
  out->ok = out->ok && sa.ok && sb.ok;
  if (!out->ok) return;
  auto add_scaled = [&](const Sum& s, int64_t k) {
    for (const Term& t : s.terms) out->add_term(t.e, mul_or_fail(out, t.coeff, k));
    out->add_const(mul_or_fail(out, s.constant, k));
  };
  if (sa.is_const()) return add_scaled(sb, mul_or_fail(out, sa.constant, scale));
  if (sb.is_const()) return add_scaled(sa, mul_or_fail(out, sb.constant, scale));
  // A product of two non-constant sums stays one term (no distribution, which
  // could grow the expression); a monomial's coefficient moves out.
  int64_t coeff = scale;
  auto factor = [&](const Sum& s) {
    if (s.terms.size() == 1 && s.constant == 0) {
      coeff = mul_or_fail(out, coeff, s.terms[0].coeff);
      return s.terms[0].e;
    }
    return to_expr(s);
  };
  Expr fa = factor(sa), fb = factor(sb);
  out->add_term(make_product(fa, fb), coeff);
}

// Flattens and sorts the factors of a product so that x*y and y*x are one term.
Expr ExprSimplifier::make_product(const Expr& a, const Expr& b) {
  std::vector<Expr> factors;
  std::vector<Expr> stack{b, a};
  while (!stack.empty()) {
    Expr e = stack.back();
    stack.pop_back();
    if (auto* m = as_binary(e, BinaryOp::Mul); m && !m->a.is<IntImmNode>() && !m->b.is<IntImmNode>()) {
      stack.push_back(m->b);
      stack.push_back(m->a);
      continue;
    }
    factors.push_back(e);
  }
  std::stable_sort(factors.begin(), factors.end(),
                   [&](const Expr& x, const Expr& y) { return order_.compare(x, y) < 0; });
  Expr r = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) r = mul(r, factors[i]);
  return r;
}

void ExprSimplifier::normalize(Sum* s) {
  if (!s->ok) return;
  std::stable_sort(s->terms.begin(), s->terms.end(),
                   [&](const Term& x, const Term& y) { return order_.compare(x.e, y.e) < 0; });
  std::vector<Term> merged;
  merged.reserve(s->terms.size());
  for (Term& t : s->terms) {
    if (!merged.empty() && order_.equal(merged.back().e, t.e)) {
      auto c = checked_add(merged.back().coeff, t.coeff);
      if (!c) {
        s->ok = false;
        return;
      }
      merged.back().coeff = *c;
      continue;
    }
    merged.push_back(std::move(t));
  }
  std::erase_if(merged, [](const Term& t) { return t.coeff == 0; });
  s->terms = std::move(merged);
  fuse_div_mod(s);
}

// k*c*(x div c) + k*(x mod c) == k*x, for the floor pair and the truncating pair.
void ExprSimplifier::fuse_div_mod(Sum* s) {
  for (size_t i = 0; i < s->terms.size(); ++i) {
    auto* m = s->terms[i].e.as<BinaryNode>();
    if (!m || (m->op != BinaryOp::FloorMod && m->op != BinaryOp::Mod)) continue;
    BinaryOp div_op = m->op == BinaryOp::FloorMod ? BinaryOp::FloorDiv : BinaryOp::Div;
    auto c = as_const_int(m->b);
    if (!c) continue;
    int64_t k = s->terms[i].coeff;
    auto kc = checked_mul(k, *c);
    if (!kc) continue;
    for (size_t j = 0; j < s->terms.size(); ++j) {
      auto* d = as_binary(s->terms[j].e, div_op);
      if (!d || s->terms[j].coeff != *kc || !order_.equal(d->a, m->a) || !order_.equal(d->b, m->b)) continue;
      Expr x = m->a;
      s->terms.erase(s->terms.begin() + std::max(i, j));
      s->terms.erase(s->terms.begin() + std::min(i, j));
      linearize(x, k, s, false);
      normalize(s);  // x's terms may merge with the rest, or fuse again
      return;
    }
  }
}

Expr ExprSimplifier::to_expr(const Sum& s) {
  DataType t = s.dtype;
  if (s.terms.empty()) return int_imm(s.constant, t);
  if (const Expr* e = s.single_term()) return *e;
  auto scaled = [&](const Term& term, int64_t c) { return c == 1 ? term.e : mul(term.e, int_imm(c, t)); };
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  // Positive terms first so that the result reads a + b - c rather than -c + a + b.
  Expr acc;
  for (const Term& term : s.terms)
    if (term.coeff > 0) acc = acc.defined() ? add(acc, scaled(term, term.coeff)) : scaled(term, term.coeff);
  int64_t constant = s.constant;
  if (!acc.defined() && constant > 0) {
    acc = int_imm(constant, t);
    constant = 0;
  }
  for (const Term& term : s.terms) {
    if (term.coeff > 0) continue;
    if (!acc.defined())
      acc = term.coeff == -1 ? neg(term.e) : scaled(term, term.coeff);
    else if (term.coeff == kMin)
      acc = add(acc, scaled(term, term.coeff));
    else
      acc = sub(acc, scaled(term, -term.coeff));
  }
  if (constant > 0) return add(acc, int_imm(constant, t));
  if (constant < 0 && constant != kMin) return sub(acc, int_imm(-constant, t));
  if (constant == kMin) return add(acc, int_imm(constant, t));
  return acc;
}

Interval ExprSimplifier::sum_bounds(const Sum& s) const {
  Interval r = Interval::single(s.constant);
  for (const Term& t : s.terms) {
    r = interval_add(r, interval_scale(bounds_->bounds(t.e), t.coeff));
    if (r.is_everything()) break;
  }
  return r;
}

// ---------------------------------------------------------------- rules

Sum ExprSimplifier::difference(const Expr& a, const Expr& b) {
  Sum d = parse(a);
  Sum sb = parse(b);
  for (const Term& t : sb.terms) d.add_term(t.e, mul_or_fail(&d, t.coeff, -1));
  if (sb.constant == std::numeric_limits<int64_t>::min()) d.ok = false;
  d.add_const(-sb.constant);
  normalize(&d);
  return d;
}

// Facts are kept with their first coefficient positive; a sum whose terms are the
// negation of a fact's reads its range negated.
Interval ExprSimplifier::fact_bounds(const Sum& s) {
  if (s.terms.empty() || bounds_->facts().empty()) return Interval::everything();
  Interval r;
  for (const BoundAnalyzer::LinearFact& f : bounds_->facts()) {
    if (f.terms.size() != s.terms.size()) continue;
    for (int64_t sign : {1, -1}) {
      bool same = true;
      for (size_t i = 0; i < s.terms.size() && same; ++i)
        same = f.terms[i].second * sign == s.terms[i].coeff && order_.equal(f.terms[i].first, s.terms[i].e);
      if (same) r = interval_intersect(r, interval_scale(f.range, sign));
    }
  }
  return r;
}

std::optional<BoundAnalyzer::LinearFact> ExprSimplifier::fact_of(BinaryOp op, const Expr& a, const Expr& b) {
  Sum d = difference(a, b);
  if (!d.ok || d.terms.empty()) return std::nullopt;
  // terms + constant  op  0
  Interval of_d;
  if (op == BinaryOp::LT) of_d.max = -1;
  if (op == BinaryOp::LE) of_d.max = 0;
  if (op == BinaryOp::GT) of_d.min = 1;
  if (op == BinaryOp::GE) of_d.min = 0;
  if (op == BinaryOp::EQ) of_d = Interval::single(0);
  if (of_d.is_everything()) return std::nullopt;
  Interval range = interval_add(of_d, Interval::single(-d.constant));
  int64_t sign = d.terms[0].coeff < 0 ? -1 : 1;
  BoundAnalyzer::LinearFact f;
  f.range = interval_scale(range, sign);
  for (const Term& t : d.terms) {
    auto c = checked_mul(t.coeff, sign);
    if (!c) return std::nullopt;
    f.terms.emplace_back(t.e, *c);
  }
  return f;
}

std::optional<bool> ExprSimplifier::prove_compare(BinaryOp op, const Expr& a, const Expr& b) {
  Sum d = difference(a, b);
  if (!d.ok) return std::nullopt;
  Interval r = sum_bounds(d);
  if (Interval f = fact_bounds(d); !f.is_everything())
    r = interval_intersect(r, interval_add(f, Interval::single(d.constant)));
  // a - b == g*(...) + constant can only be zero when g divides the constant.
  int64_t g = 0;
  for (const Term& t : d.terms) g = t.coeff == std::numeric_limits<int64_t>::min() ? 1 : gcd_abs(g, t.coeff);
  bool never_zero = !r.contains(0) || (g > 1 && d.constant % g != 0);
  bool always_zero = r.is_single() && *r.min == 0;
  bool neg = r.max && *r.max < 0, non_pos = r.max && *r.max <= 0;
  bool pos = r.min && *r.min > 0, non_neg = r.min && *r.min >= 0;
  auto decide = [](bool yes, bool no) -> std::optional<bool> {
    if (yes) return true;
    if (no) return false;
    return std::nullopt;
  };
  if (op == BinaryOp::LT) return decide(neg, non_neg);
  if (op == BinaryOp::LE) return decide(non_pos, pos);
  if (op == BinaryOp::GT) return decide(pos, non_pos);
  if (op == BinaryOp::GE) return decide(non_neg, neg);
  if (op == BinaryOp::EQ) return decide(always_zero, never_zero);
  TL_ICHECK(op == BinaryOp::NE, "proving ", binary_op_symbol(op));
  return decide(never_zero, always_zero);
}

Expr ExprSimplifier::simplify_division(BinaryOp op, const Expr& a, const Expr& b) {
  bool is_div = op == BinaryOp::Div || op == BinaryOp::FloorDiv;
  bool trunc = op == BinaryOp::Div || op == BinaryOp::Mod;
  auto c = as_const_int(b);
  if (!c) {
    // 0 <= a < b: the quotient is 0 and the remainder a, in both semantics.
    Expr zero = int_imm(0, a.dtype());
    if (prove_compare(BinaryOp::GE, a, zero) == true && prove_compare(BinaryOp::LT, a, b) == true)
      return is_div ? zero : a;
    return rebuild_binary(op, a, b);
  }
  // Truncating division equals floor division only for a >= 0, c > 0.
  if (*c <= 0 || (trunc && !sum_bounds(parse(a)).is_non_negative())) return rebuild_binary(op, a, b);
  return is_div ? floordiv_rule(a, *c, trunc) : floormod_rule(a, *c, trunc);
}

// floordiv(a, c) for c > 0. With a = c*q + rest: floordiv(a, c) == q +
// floordiv(rest, c) exactly; the remaining division goes when rest's bounds fix
// it, or merges with a division inside. `trunc`: the input was a truncating
// division of a non-negative value; keep that form where it stays valid.
Expr ExprSimplifier::floordiv_rule(const Expr& a, int64_t c, bool trunc) {
  DataType t = a.dtype();
  Sum s = parse(a);
  if (!s.ok) return trunc ? div(a, int_imm(c, t)) : floordiv(a, int_imm(c, t));
  Sum q(t), rest(t);
  for (const Term& term : s.terms) {
    if (term.coeff % c == 0)
      q.add_term(term.e, term.coeff / c);
    else
      rest.add_term(term.e, term.coeff);
  }
  q.constant = floor_div(s.constant, c);
  rest.constant = floor_mod(s.constant, c);
  // floordiv(g*x, g*c') == floordiv(x, c').
  int64_t g = gcd_abs(c, rest.constant);
  for (const Term& term : rest.terms) g = gcd_abs(g, term.coeff);
  if (g > 1) {
    for (Term& term : rest.terms) term.coeff /= g;
    rest.constant /= g;
    c /= g;
  }
  Interval r = sum_bounds(rest);
  if (r.is_bounded() && floor_div(*r.min, c) == floor_div(*r.max, c)) {
    q.add_const(floor_div(*r.min, c));
    normalize(&q);
    return q.ok ? to_expr(q) : floordiv(a, int_imm(c * g, t));
  }
  Expr quotient;
  if (const Expr* inner = rest.single_term()) {
    // floordiv(floordiv(x, k), c) == floordiv(x, k*c) for k, c > 0.
    const BinaryNode* d = as_binary(*inner, BinaryOp::FloorDiv);
    if (!d) {
      d = as_binary(*inner, BinaryOp::Div);
      if (d && !bounds_->bounds(d->a).is_non_negative()) d = nullptr;
    }
    auto k = d ? as_const_int(d->b) : std::nullopt;
    auto kc = k && *k > 0 ? checked_mul(*k, c) : std::nullopt;
    if (kc) quotient = floordiv_rule(d->a, *kc, trunc);
  }
  if (!quotient.defined()) {
    Expr num = to_expr(rest);
    // A non-negative numerator divides the same either way; C's division is cheaper.
    quotient = r.is_non_negative() ? div(num, int_imm(c, t)) : floordiv(num, int_imm(c, t));
  }
  linearize(quotient, 1, &q, false);
  normalize(&q);
  return q.ok ? to_expr(q) : floordiv(a, int_imm(c * g, t));
}

// floormod(a, c) for c > 0: multiples of c drop out, a common factor g of c and
// the rest moves out (floormod(g*x, g*c') == g*floormod(x, c')).
Expr ExprSimplifier::floormod_rule(const Expr& a, int64_t c, bool trunc) {
  DataType t = a.dtype();
  Sum s = parse(a);
  if (!s.ok) return binary(trunc ? BinaryOp::Mod : BinaryOp::FloorMod, a, int_imm(c, t));
  Sum rest(t);
  for (const Term& term : s.terms)
    if (term.coeff % c != 0) rest.add_term(term.e, term.coeff);
  rest.constant = floor_mod(s.constant, c);
  int64_t g = gcd_abs(c, rest.constant);
  for (const Term& term : rest.terms) g = gcd_abs(g, term.coeff);
  if (g == 1) return floormod_reduced(rest, c, trunc);
  for (Term& term : rest.terms) term.coeff /= g;
  rest.constant /= g;
  Sum out(t);
  linearize(floormod_reduced(rest, c / g, trunc), g, &out, false);
  normalize(&out);
  return to_expr(out);  // |g * floormod(..)| < c: cannot overflow
}

Expr ExprSimplifier::floormod_reduced(const Sum& rest, int64_t c, bool trunc) {
  DataType t = rest.dtype;
  Interval r = sum_bounds(rest);
  if (r.is_bounded() && floor_div(*r.min, c) == floor_div(*r.max, c)) {
    // All of rest lies in one period: subtract its base.
    Sum out = rest;
    auto base = checked_mul(floor_div(*r.min, c), c);
    if (base && *base != std::numeric_limits<int64_t>::min()) {
      out.add_const(-*base);
      if (out.ok) return to_expr(out);
    }
  }
  if (const Expr* inner = rest.single_term()) {
    // floormod(floormod(x, k*c), c) == floormod(x, c).
    const BinaryNode* m = as_binary(*inner, BinaryOp::FloorMod);
    if (!m) {
      m = as_binary(*inner, BinaryOp::Mod);
      if (m && !bounds_->bounds(m->a).is_non_negative()) m = nullptr;
    }
    auto k = m ? as_const_int(m->b) : std::nullopt;
    if (k && *k > 0 && *k % c == 0) return floormod_rule(m->a, c, trunc);
  }
  Expr num = to_expr(rest);
  if (r.is_non_negative()) return binary(BinaryOp::Mod, num, int_imm(c, t));
  return floormod(num, int_imm(c, t));
}

Expr ExprSimplifier::simplify_min_max(BinaryOp op, const Expr& a, const Expr& b) {
  bool is_min = op == BinaryOp::Min;
  if (prove_compare(BinaryOp::LE, a, b) == true) return is_min ? a : b;
  if (prove_compare(BinaryOp::GE, a, b) == true) return is_min ? b : a;
  return binary(op, a, b);
}

Expr ExprSimplifier::visit(const BinaryNode* op, const Expr& self) {
  BinaryOp o = op->op;
  if (is_index_type(op->dtype) && is_linear_op(o)) {
    Sum s(op->dtype);
    linearize(self, 1, &s, true);
    normalize(&s);
    if (s.ok) return to_expr(s);
    return IRMutator::visit(op, self);  // a coefficient overflowed: keep the shape
  }
  Expr a = mutate(op->a), b = mutate(op->b);
  bool unchanged = a.same_as(op->a) && b.same_as(op->b);
  if (is_index_type(a.dtype())) {
    if (is_division_op(o)) return simplify_division(o, a, b);
    if (o == BinaryOp::Min || o == BinaryOp::Max) return simplify_min_max(o, a, b);
    if (is_compare_op(o)) {
      if (auto p = prove_compare(o, a, b)) return bool_imm(*p);
      return unchanged ? self : binary(o, a, b, op->span);
    }
  }
  if (o == BinaryOp::And || o == BinaryOp::Or) {
    if (order_.equal(a, b)) return a;
    return o == BinaryOp::And ? logical_and(a, b) : logical_or(a, b);
  }
  if (auto folded = fold_float(o, a, b)) return *folded;
  if (unchanged) return self;
  return rebuild_binary(o, a, b, op->span);
}

Expr ExprSimplifier::visit(const UnaryNode* op, const Expr& self) {
  if (op->op == UnaryOp::Neg && is_index_type(op->dtype)) {
    Sum s(op->dtype);
    linearize(self, 1, &s, true);
    normalize(&s);
    if (s.ok) return to_expr(s);
    return IRMutator::visit(op, self);
  }
  if (op->op != UnaryOp::Not) return IRMutator::visit(op, self);
  Expr a = mutate(op->a);
  if (auto* u = a.as<UnaryNode>(); u && u->op == UnaryOp::Not) return u->a;
  if (auto* b = a.as<BinaryNode>(); b && is_int_comparison(b)) return binary(negate_comparison(b->op), b->a, b->b);
  if (a.same_as(op->a)) return self;
  return logical_not(a);
}

Expr ExprSimplifier::visit(const SelectNode* op, const Expr& self) {
  Expr c = mutate(op->cond);
  if (auto v = as_const_int(c)) return mutate(*v ? op->true_value : op->false_value);
  Expr t = mutate(op->true_value), f = mutate(op->false_value);
  if (order_.equal(t, f)) return t;
  if (c.same_as(op->cond) && t.same_as(op->true_value) && f.same_as(op->false_value)) return self;
  return select(c, t, f, op->span);
}

Expr ExprSimplifier::visit(const LetNode* op, const Expr& self) {
  Expr value = mutate(op->value);
  // Constants and plain vars are cheaper inlined than bound.
  if (value.is<IntImmNode>() || value.is<VarNode>()) return mutate(substitute(op->body, {{op->var.node(), value}}));
  Expr body;
  if (is_index_type(value.dtype())) {
    BoundAnalyzer inner = *bounds_;
    inner.bind(op->var, bounds_->bounds(value));
    const BoundAnalyzer* outer = bounds_;
    bounds_ = &inner;
    body = mutate(op->body);
    bounds_ = outer;
  } else {
    body = mutate(op->body);
  }
  if (value.same_as(op->value) && body.same_as(op->body)) return self;
  return let(op->var, value, body);
}

// ---------------------------------------------------------------- statements

class StmtSimplifier : public IRMutator {
 public:
  explicit StmtSimplifier(const BoundAnalyzer* outer) {
    if (outer) analyzer_ = *outer;
  }

  using IRMutator::mutate;
  Expr mutate(const Expr& e) override {
    if (!e.defined()) return e;
    return ExprSimplifier(analyzer_).run(e);
  }

 protected:
  using IRMutator::visit;
  Stmt visit(const ForNode* op, const Stmt& self) override;
  Stmt visit(const IfThenElseNode* op, const Stmt& self) override;
  Stmt visit(const LetStmtNode* op, const Stmt& self) override;
  Stmt visit(const KernelLaunchNode* op, const Stmt& self) override;
  Stmt visit(const SeqNode* op, const Stmt& self) override;

 private:
  void assume(const Expr& cond, BindingScope* scope);
  // Records what T.assume(cond) promises: var ranges in `scope`, linear facts in the
  // analyzer; returns the buffers the facts read (a store to one ends them).
  void promise(const Expr& cond, BindingScope* scope, std::set<const void*>* reads);
  // For a var in [min, min + extent) with a symbolic extent: the linear fact
  // var < min + extent, which intervals cannot hold.
  void add_range_fact(const Var& v, const Expr& min, const Expr& extent);

  BoundAnalyzer analyzer_;
  // The values of the enclosing lets of index type that read no memory and call
  // nothing: a T.assume over such a let (`i_src = T.min(j + 233, tid + 2)`,
  // `T.assume(i_src < M)`) also promises the fact over its value (`tid + 2 < M`).
  std::map<const VarNode*, Expr> let_values_;
};

Stmt empty_stmt() {
  return seq({});
}

bool reads_any_var(const Expr& e, const std::map<const VarNode*, Expr>& vars) {
  bool found = false;
  for_each_expr(e, [&](const Expr& x) {
    if (auto* v = x.as<VarNode>()) found = found || vars.count(v);
  });
  return found;
}

void StmtSimplifier::add_range_fact(const Var& v, const Expr& min, const Expr& extent) {
  if (!is_index_type(v.dtype())) return;
  Expr end = add(min, extent);
  bool reads_memory = false;  // a bound read from memory may change in the body
  for_each_expr(end, [&](const Expr& e) { reads_memory = reads_memory || e.as<BufferLoadNode>() || e.as<CallNode>(); });
  if (reads_memory) return;
  if (auto f = ExprSimplifier(analyzer_).fact_of(BinaryOp::LT, v, end)) analyzer_.add_fact(*f);
}

Stmt StmtSimplifier::visit(const ForNode* op, const Stmt& self) {
  Expr mn = mutate(op->min), ext = mutate(op->extent);
  auto n = as_const_int(ext);
  if (n && *n <= 0) return empty_stmt();
  if (n && *n == 1) return mutate(substitute(op->body, {{op->var.node(), mn}}));
  BindingScope scope(analyzer_);
  scope.bind_range(op->var, mn, ext);
  const size_t outer = analyzer_.facts().size();
  if (!n) add_range_fact(op->var, mn, ext);
  Stmt body = mutate(op->body);
  analyzer_.facts().resize(outer);
  if (mn.same_as(op->min) && ext.same_as(op->extent) && body.same_as(op->body)) return self;
  return for_loop(op->var, mn, ext, op->for_kind, body, op->annotations, op->span);
}

// Narrows the ranges of vars that `cond` compares with a bounded expression, for
// the scope in which cond is known to hold.
void StmtSimplifier::assume(const Expr& cond, BindingScope* scope) {
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if (b->op == BinaryOp::And) {
    assume(b->a, scope);
    assume(b->b, scope);
    return;
  }
  if (!is_int_comparison(b)) return;
  auto narrow = [&](const Expr& var, BinaryOp op, const Expr& other) {
    auto* v = var.as<VarNode>();
    if (!v) return;
    Interval o = analyzer_.bounds(other);
    Interval limit;
    if (op == BinaryOp::LT && o.max) limit.max = checked_sub(*o.max, 1);
    if (op == BinaryOp::LE) limit.max = o.max;
    if (op == BinaryOp::GT && o.min) limit.min = checked_add(*o.min, 1);
    if (op == BinaryOp::GE) limit.min = o.min;
    if (op == BinaryOp::EQ) limit = o;
    if (limit.is_everything()) return;
    scope->bind(Var::from(var), interval_intersect(analyzer_.bounds(var), limit));
  };
  // a < b  <=>  b > a: flip the operator to narrow a var on the right.
  auto flip = [](BinaryOp op) {
    if (op == BinaryOp::LT) return BinaryOp::GT;
    if (op == BinaryOp::LE) return BinaryOp::GE;
    if (op == BinaryOp::GT) return BinaryOp::LT;
    if (op == BinaryOp::GE) return BinaryOp::LE;
    return op;
  };
  narrow(b->a, b->op, b->b);
  narrow(b->b, flip(b->op), b->a);
}

void StmtSimplifier::promise(const Expr& cond, BindingScope* scope, std::set<const void*>* reads) {
  auto* b = cond.as<BinaryNode>();
  if (!b) return;
  if (b->op == BinaryOp::And) {
    promise(b->a, scope, reads);
    promise(b->b, scope, reads);
    return;
  }
  if (!is_int_comparison(b)) return;
  assume(cond, scope);
  if (auto f = ExprSimplifier(analyzer_).fact_of(b->op, b->a, b->b)) {
    analyzer_.add_fact(std::move(*f));
    for_each_expr(cond, [&](const Expr& e) {
      if (auto* load = e.as<BufferLoadNode>()) reads->insert(load->buffer.get());
    });
  }
  if (let_values_.empty() || !reads_any_var(cond, let_values_)) return;
  Expr a = ExprSimplifier(analyzer_).run(substitute(b->a, let_values_));
  Expr c = ExprSimplifier(analyzer_).run(substitute(b->b, let_values_));
  if (auto f = ExprSimplifier(analyzer_).fact_of(b->op, a, c)) analyzer_.add_fact(std::move(*f));
}

// A T.assume holds from its statement to the end of the sequence, or until a store
// to a buffer it reads (then its linear facts end; its var ranges cannot change).
Stmt StmtSimplifier::visit(const SeqNode* op, const Stmt& self) {
  const size_t outer = analyzer_.facts().size();
  BindingScope scope(analyzer_);
  std::set<const void*> reads;
  bool changed = false;
  std::vector<Stmt> out;
  for (const Stmt& s : op->seq) {
    if (!reads.empty()) {
      struct FindStore : IRVisitor {
        const std::set<const void*>& reads;
        bool found = false;
        explicit FindStore(const std::set<const void*>& r) : reads(r) {}
        using IRVisitor::visit;
        void visit(const BufferStoreNode* st) override {
          found = found || reads.count(st->buffer.get());
          IRVisitor::visit(st);
        }
      } find(reads);
      find.visit(s);
      if (find.found) {
        analyzer_.facts().resize(outer);
        reads.clear();
      }
    }
    out.push_back(mutate(s));
    changed = changed || !out.back().same_as(s);
    if (auto* ev = out.back().as<EvaluateNode>())
      if (auto* c = ev->value.as<CallNode>(); c && c->op == Intrinsic::Assume) promise(c->args[0], &scope, &reads);
  }
  analyzer_.facts().resize(outer);
  if (!changed) return self;
  return seq(std::move(out));
}

Stmt StmtSimplifier::visit(const IfThenElseNode* op, const Stmt& self) {
  Expr c = mutate(op->cond);
  if (auto v = as_const_int(c)) {
    if (*v) return mutate(op->then_case);
    return op->else_case.defined() ? mutate(op->else_case) : empty_stmt();
  }
  Stmt t;
  {
    BindingScope scope(analyzer_);
    assume(c, &scope);
    t = mutate(op->then_case);
  }
  Stmt e = mutate(op->else_case);
  if (c.same_as(op->cond) && t.same_as(op->then_case) && e.same_as(op->else_case)) return self;
  return if_then_else(c, t, e, op->span);
}

Stmt StmtSimplifier::visit(const LetStmtNode* op, const Stmt& self) {
  Expr v = mutate(op->value);
  BindingScope scope(analyzer_);
  if (is_index_type(v.dtype())) scope.bind(op->var, analyzer_.bounds(v));
  std::optional<Expr> pure = pure_index_value(v, let_values_);
  if (pure) let_values_[op->var.node()] = *pure;
  Stmt body = mutate(op->body);
  if (pure) let_values_.erase(op->var.node());
  if (v.same_as(op->value) && body.same_as(op->body)) return self;
  return let_stmt(op->var, v, body, op->span);
}

Stmt StmtSimplifier::visit(const KernelLaunchNode* op, const Stmt& self) {
  bool changed = false;
  std::vector<Expr> grid = mutate_all(op->grid, &changed);
  BindingScope scope(analyzer_);
  const size_t outer = analyzer_.facts().size();
  for (size_t i = 0; i < op->block_vars.size() && i < grid.size(); ++i) {
    scope.bind_range(op->block_vars[i], int_imm(0, grid[i].dtype()), grid[i]);
    if (!as_const_int(grid[i])) add_range_fact(op->block_vars[i], int_imm(0, grid[i].dtype()), grid[i]);
  }
  for (size_t i = 0; i < op->thread_vars.size() && i < op->threads.size(); ++i)
    scope.bind(op->thread_vars[i], Interval::range(0, std::max<int64_t>(op->threads[i], 1) - 1));
  Stmt body = mutate(op->body);
  analyzer_.facts().resize(outer);
  if (!changed && body.same_as(op->body)) return self;
  auto n = std::make_shared<KernelLaunchNode>(op->block_vars, std::move(grid), op->thread_vars, op->threads, body,
                                              op->prelude, op->cluster);
  n->span = op->span;
  return Stmt(std::move(n));
}

}  // namespace

std::optional<Expr> pure_index_value(const Expr& value, const std::map<const VarNode*, Expr>& outer) {
  bool pure = value.defined() && is_index_type(value.dtype());
  if (pure) for_each_expr(value, [&](const Expr& e) { pure = pure && !e.as<BufferLoadNode>() && !e.as<CallNode>(); });
  if (!pure) return std::nullopt;
  return substitute(value, outer);
}

Expr simplify(const Expr& e, const BoundAnalyzer* bounds) {
  if (!e.defined()) return e;
  static const BoundAnalyzer kNoBounds;
  return ExprSimplifier(bounds ? *bounds : kNoBounds).run(e);
}

Stmt simplify(const Stmt& s, const BoundAnalyzer* bounds) {
  if (!s.defined()) return s;
  return StmtSimplifier(bounds).mutate(s);
}

}  // namespace tl
