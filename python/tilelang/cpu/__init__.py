"""TileLang's `tilelang.cpu`: its CPU dialect. `tilelang.cpu.language` is the common
language (tilelang.language.common)."""

import importlib

__all__ = ["language"]


def __getattr__(name):
    if name in __all__:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
