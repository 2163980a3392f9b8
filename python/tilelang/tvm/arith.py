"""`tvm.arith`: the arithmetic analyzer, on tilelang's simplifier. `Analyzer().simplify`
simplifies an expression (constant folding, index arithmetic); TVM's iterator-map and
integer-set analyses are out of scope."""

from tilelang import _C

from ._scope import facade_getattr, out_of_scope

__all__ = ["Analyzer"]


class Analyzer:
    """TVM's arith.Analyzer: `simplify(expr)` and `can_prove(cond)` (true only when the
    simplified condition is the constant true)."""

    def simplify(self, expr, steps=2):
        del steps
        if not isinstance(expr, _C.Expr):
            return expr
        return _C.simplify_expr(expr)

    def can_prove(self, cond, strength=None):
        del strength
        value = self.simplify(cond)
        if isinstance(value, _C.Expr):
            value = value.const_value()
        return value is True or (isinstance(value, int) and value != 0)

    rewrite_simplify = canonical_simplify = simplify

    def bind(self, var, value, allow_override=False):
        out_of_scope("tvm.arith.Analyzer.bind", "write the value into the expression")


# TVM's tvm.arith beyond Analyzer: its integer-set, iterator-map, bound and solver
# analyses (and the submodules that hold them).
_TVM_NAMES = {
    "ConstIntBound", "Extension", "IntConstraints", "IntConstraintsTransform", "IntSet",
    "IntervalSet", "IterMapExpr", "IterMark", "IterSplitExpr", "IterSumExpr", "ModularSet",
    "PresburgerSet", "ProofStrength", "analyzer", "bound", "deduce_bound",
    "detect_clip_bound", "detect_common_subexpr", "detect_iter_map",
    "detect_linear_equation", "estimate_region_lower_bound", "estimate_region_strict_bound",
    "estimate_region_upper_bound", "int_set", "int_solver", "inverse_affine_iter_map",
    "iter_affine_map", "iter_map_simplify", "normalize_iter_map_to_expr",
    "normalize_to_iter_sum", "pattern", "solve_linear_equations", "solve_linear_inequalities",
    "subspace_divide",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.arith", "Analyzer", _TVM_NAMES, "only Analyzer.simplify / can_prove are provided"
)
