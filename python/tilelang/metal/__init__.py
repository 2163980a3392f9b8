"""TileLang's `tilelang.metal`: the Metal dialect's modules. `tilelang.metal.language`
is tilelang.language; `tilelang.metal.target.check_metal4_availability()` says whether
a Metal 4 GPU answers. The Metal backend's internals (its MPS emitter, passes) raise an
error saying they are out of scope."""

from tilelang._compat import forwarding_getattr

from . import language, target

__all__ = ["language", "target"]

__getattr__ = forwarding_getattr(
    "tilelang.metal", internal=("intrinsics", "backend", "pipeline", "codegen", "op"),
    instead="write the kernel with T; tilelang.compile(target='metal') lowers it",
)  # fmt: skip
