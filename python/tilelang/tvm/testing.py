"""`tvm.testing.requires_package`: the same skip mark as tilelang.testing's."""

from tilelang.testing import requires_package

from ._scope import facade_getattr

__all__ = ["requires_package"]


# TVM's own test helpers (tvm.testing beyond requires_package).
_TVM_NAMES = {
    "assert_allclose", "assert_prim_expr_equal", "enabled_targets", "fixture", "main",
    "parameter", "parameters", "parametrize_targets", "requires_cuda", "requires_gpu",
    "requires_llvm", "utils",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.testing", "requires_package", _TVM_NAMES, "use tilelang.testing and pytest",
    hint="; use tilelang.testing",
)  # fmt: skip
