"""TileLang's `tilelang.cpu`: its CPU dialect. `tilelang.cpu.language` is the common
language (tilelang.language.common)."""

from tilelang._dialects import submodule_getattr

__all__ = ["language"]

__getattr__ = submodule_getattr(__name__, __all__)
