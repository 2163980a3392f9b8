"""`tilelang.language.eager.ast`: TileLang's AST mutator (mutate, BaseBuilder,
DSLMutator) is out of scope; tilelang.language.ast_rewrite is tilelang's own."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    __name__, internal_all=True, instead="write kernels with @T.prim_func or @tilelang.jit"
)
