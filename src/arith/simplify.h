// The arithmetic simplifier. Lowering produces index expressions by composing
// layouts, tiles and loops; this folds them back into a canonical affine form so
// that equal indices print equally, bounds can be proven and predicates dropped.
#pragma once

#include <map>
#include <optional>

#include "arith/bounds.h"

namespace tl {

// Rewrites `e` into a simpler expression with the same value and dtype. Integer
// index arithmetic (int32/int64) is put into canonical affine form and divisions,
// min/max, comparisons and selects are folded where `bounds` (if given) proves it.
// Floats are left alone except for folding operations on two literals.
Expr simplify(const Expr& e, const BoundAnalyzer* bounds = nullptr);

// The simplification pass: simplifies every expression of `s`, using the ranges
// of enclosing loop, block, thread and let variables (on top of `bounds`, if
// given); drops `if` branches whose condition is proven, removes loops of extent
// 0 and inlines loops of extent 1.
Stmt simplify(const Stmt& s, const BoundAnalyzer* bounds = nullptr);

// The value of a let that later expressions may be rewritten in terms of: an
// index-typed value (signed, 32 bits or more) that reads no memory and calls
// nothing, with the enclosing such lets (`outer`) substituted; nullopt otherwise.
std::optional<Expr> pure_index_value(const Expr& value, const std::map<const VarNode*, Expr>& outer);

}  // namespace tl
