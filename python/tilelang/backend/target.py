"""`tilelang.backend.target`: determine_target (tilelang.utils.target's)."""

from tilelang._compat import forwarding_getattr
from tilelang.utils.target import determine_target

__all__ = ["determine_target"]

__getattr__ = forwarding_getattr(
    __name__, internal_all=True, instead="use determine_target or tvm.target.Target"
)
