"""TileLang's `tilelang.language.eager`: its eager frontend's AST rewriter. tilelang's
frontend rewrites kernels with its own rewriter (tilelang.language.ast_rewrite), whose
generated code is not TileLang's; TileLang's builder classes raise an error saying so."""

from tilelang._compat import forwarding_getattr

from . import ast

__all__ = ["ast"]

__getattr__ = forwarding_getattr(
    "tilelang.language.eager",
    internal_all=True,
    instead="write kernels with @T.prim_func or @tilelang.jit",
)
