// Integer interval analysis: what range can an index expression take, given the
// ranges of the loop and block variables around it? Lowering uses it to prove
// accesses in bounds (and drop predicates) or to keep the predicate when it cannot.
#pragma once

#include <cstdint>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/ir.h"

namespace tl {

// A closed integer interval [min, max]; a missing end is unbounded on that side.
struct Interval {
  std::optional<int64_t> min, max;

  static Interval everything() { return {}; }
  static Interval single(int64_t v) { return {v, v}; }
  static Interval range(int64_t lo, int64_t hi) { return {lo, hi}; }
  static Interval at_least(int64_t lo) { return {lo, std::nullopt}; }

  bool is_bounded() const { return min && max; }
  bool is_single() const { return is_bounded() && *min == *max; }
  bool is_everything() const { return !min && !max; }
  bool is_non_negative() const { return min && *min >= 0; }
  bool is_positive() const { return min && *min > 0; }
  bool contains(int64_t v) const { return (!min || *min <= v) && (!max || v <= *max); }
  bool operator==(const Interval& o) const { return min == o.min && max == o.max; }
};

// Interval arithmetic over mathematical integers; a bound that would overflow
// int64 becomes unbounded, so every result contains the true range.
Interval interval_add(const Interval& a, const Interval& b);
Interval interval_scale(const Interval& a, int64_t c);
Interval interval_mul(const Interval& a, const Interval& b);
Interval interval_union(const Interval& a, const Interval& b);
Interval interval_intersect(const Interval& a, const Interval& b);

// Known ranges of variables, and the bounds of expressions over them. Reasoning
// assumes index arithmetic does not overflow (as C does for signed types).
class BoundAnalyzer {
 public:
  // v lies in [min, max] (inclusive).
  void bind(const Var& v, int64_t min, int64_t max);
  void bind(const Var& v, const Interval& range);
  // v lies in [min, min + extent), using the constant bounds of min and extent.
  void bind_range(const Var& v, const Expr& min, const Expr& extent);
  void unbind(const Var& v);
  // The bound range of v, if any was bound.
  std::optional<Interval> range_of(const VarNode* v) const;

  // Bounds of an integer (or bool) expression; unknown parts are unbounded.
  Interval bounds(const Expr& e) const;
  // With `on`, an integer value the analyzer knows nothing about (an unbound var, a
  // load, a call) lies in its type's range, so that int32 arithmetic over such values
  // can be checked against int32 (widen_indices); by default they are unbounded.
  void assume_values_fit_types(bool on = true) { values_fit_types_ = on; }
  // True only when the ranges prove `cond` (comparisons, And/Or/Not of them).
  bool can_prove(const Expr& cond) const;

  // A promise of the program (T.assume): the integer linear form sum(coeff * e) over
  // `terms` (in the simplifier's canonical order, first coefficient positive) lies in
  // `range`. The simplifier records them and reads them when it compares.
  struct LinearFact {
    std::vector<std::pair<Expr, int64_t>> terms;
    Interval range;
  };
  void add_fact(LinearFact f) { facts_.push_back(std::move(f)); }
  std::vector<LinearFact>& facts() { return facts_; }
  const std::vector<LinearFact>& facts() const { return facts_; }

 private:
  struct LetFrame;
  struct Entry {
    Var var;  // held so the key cannot be reused by a new node at the same address
    Interval range;
  };
  Interval eval(const Expr& e, const LetFrame* lets) const;
  Interval eval_binary(const BinaryNode* op, const LetFrame* lets) const;

  Interval leaf_range(DataType t) const;

  std::unordered_map<const VarNode*, Entry> ranges_;
  std::vector<LinearFact> facts_;
  bool values_fit_types_ = false;
};

// Binds variables for the extent of a scope and restores what was there before.
class BindingScope {
 public:
  explicit BindingScope(BoundAnalyzer& a) : analyzer_(a) {}
  BindingScope(const BindingScope&) = delete;
  BindingScope& operator=(const BindingScope&) = delete;
  ~BindingScope();

  void bind(const Var& v, const Interval& r);
  void bind_range(const Var& v, const Expr& min, const Expr& extent);
  // A kernel's block indices to [0, grid) and thread indices to [0, threads).
  void bind_launch(const KernelLaunchNode* op);

 private:
  void save(const Var& v);

  BoundAnalyzer& analyzer_;
  std::vector<std::pair<Var, std::optional<Interval>>> saved_;
};

}  // namespace tl
