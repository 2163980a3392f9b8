"""`tvm.testing.requires_package`: the same skip mark as tilelang.testing's."""

from tilelang.testing import requires_package

__all__ = ["requires_package"]


def __getattr__(name):
    raise AttributeError(
        f"tvm.testing.{name} is not part of tilelang's TVM facade (tvm.testing offers "
        f"requires_package); use tilelang.testing"
    )
