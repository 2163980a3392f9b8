"""`tvm.script`: TVMScript. tilelang prints a kernel with `func.script()` (the printer of
its own IR, which reads like the DSL); TVMScript's parser and printer are out of scope."""

from .._scope import facade_getattr
from . import ir_builder

__all__ = ["ir_builder"]


# TVMScript's parser, printer and dialects.
_TVM_NAMES = {
    "from_source", "highlight", "ir", "ir_module", "parse", "parser", "printer", "relax",
    "tir", "tirx",
}  # fmt: skip

__getattr__ = facade_getattr(
    "tvm.script", "ir_builder", _TVM_NAMES,
    "print a kernel with func.script(); write it with tilelang.language",
)  # fmt: skip
