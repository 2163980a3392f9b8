"""`tvm.script`: TVMScript. tilelang prints a kernel with `func.script()` (the printer of
its own IR, which reads like the DSL); TVMScript's parser and printer are out of scope."""

from .._scope import out_of_scope
from . import ir_builder

__all__ = ["ir_builder"]


def __getattr__(name):
    if name.startswith("_"):
        raise AttributeError(name)
    out_of_scope(
        f"tvm.script.{name}", "print a kernel with func.script(); write it with tilelang.language"
    )
