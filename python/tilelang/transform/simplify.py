"""TileLang's `tilelang.transform.simplify`: apply_simplify and simplify_prim_func."""

from . import apply_simplify, simplify_prim_func

__all__ = ["apply_simplify", "simplify_prim_func"]
