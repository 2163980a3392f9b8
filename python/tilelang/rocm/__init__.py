"""TileLang's `tilelang.rocm`: its ROCm (HIP) backend. tilelang has no ROCm backend, so
its names raise an error saying so (docs/design/tilelang_compat.md, "Out of scope");
`tilelang.rocm.language` is TileLang's ROCm dialect of T (the common language, its ROCm
names out of scope alike)."""

import importlib

from tilelang._compat import forwarding_getattr

_internal = forwarding_getattr(
    "tilelang.rocm", internal_all=True,
    instead="tilelang has no ROCm (HIP) backend; compile for target='cuda', 'metal' or 'cpu'",
)  # fmt: skip


def __getattr__(name):
    if name == "language":
        return importlib.import_module(f"{__name__}.language")
    return _internal(name)
