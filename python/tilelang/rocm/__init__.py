"""TileLang's `tilelang.rocm`: its ROCm (HIP) backend. tilelang has no ROCm backend, so
its names raise an error saying so (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang._compat import forwarding_getattr

__getattr__ = forwarding_getattr(
    "tilelang.rocm", internal_all=True,
    instead="tilelang has no ROCm (HIP) backend; compile for target='cuda', 'metal' or 'cpu'",
)  # fmt: skip
