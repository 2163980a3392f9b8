"""TileLang's `tilelang.webgpu`: its WebGPU dialect (tilelang has no WebGPU target; the names are T's). `tilelang.webgpu.language` is the common
language (tilelang.language.common)."""

from tilelang._dialects import submodule_getattr

__all__ = ["language"]

__getattr__ = submodule_getattr(__name__, __all__)
