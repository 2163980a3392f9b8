"""TileLang's `tilelang._ffi_api`: the C++ functions TileLang registers with TVM's FFI.
tilelang's C++ core is reached through tilelang._C (nanobind); these TVM FFI entry
points raise an error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang._ffi_api", internal_all=True,
    instead="tilelang's core is tilelang._C; kernels use T and tilelang.compile",
)  # fmt: skip
