"""`tvm.tirx.script`: TVMScript's TIR dialect. Its `parser` is the namespace TVMScript
kernels are written in, which in tilelang is T (tilelang.language)."""

from . import parser as parser

__all__ = ["parser"]
