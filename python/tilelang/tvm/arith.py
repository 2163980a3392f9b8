"""`tvm.arith`: the arithmetic analyzer, on tilelang's simplifier. `Analyzer().simplify`
simplifies an expression (constant folding, index arithmetic); TVM's iterator-map and
integer-set analyses are out of scope."""

from tilelang import _C

from ._scope import out_of_scope

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


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    out_of_scope(f"tvm.arith.{name}", "only Analyzer.simplify / can_prove are provided")
