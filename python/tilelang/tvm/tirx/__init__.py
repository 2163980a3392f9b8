"""`tvm.tirx` (TileLang's name for TVM's `tvm.tir`, also importable as `tvm.tir`): the
expression helpers and node classes that TileLang kernels and tests use, mapped onto
tilelang.language.

Functions take TVM's argument order: `const(value, dtype)`, `Cast(dtype, value)`,
`reinterpret(dtype, value)`, `call_extern(dtype, name, *args)`. A name TVM's tir has
and T also has (`tirx.exp2`, `tirx.truncdiv`, `tirx.bitwise_and`, ...) is T's. The node
classes (`IntImm`, `Var`, `Call`, `BufferLoad`, ...) build expressions when called and
answer `isinstance` by the node's kind. TVM's statement classes, `stmt_functor` visitors
and passes work on TVM's IR, which tilelang does not have: they raise an error naming
what is out of scope (docs/design/tilelang_compat.md, "Out of scope")."""

from tilelang import _C
from tilelang import language as _T
from tilelang.language import math as _math
from tilelang.language.dtypes import dtype as _dtype
from tilelang.language.prim_func import PrimFunc
from tilelang.language.shapes import Tensor as Buffer

from .._scope import out_of_scope, refused_name

PrimExpr = _T.PrimExpr
Stmt = _C.Stmt

# Expressions: the same functions as T's.
Select = if_then_else = _math.if_then_else
call_extern = _math.call_extern
max = _math.max
min = _math.min
floordiv = _math.floordiv
floormod = _math.floormod
exp, log, sqrt, rsqrt = _math.exp, _math.log, _math.sqrt, _math.rsqrt


def const(value, dtype=None):
    """A constant of `dtype` (TVM's default: int32 for ints, float32 for floats, bool)."""
    if dtype is None:
        dtype = (
            "bool" if isinstance(value, bool) else "int32" if isinstance(value, int) else "float32"
        )
    return _dtype(dtype)(value)


def reinterpret(dtype, value):
    return _math.reinterpret(value, dtype)


def all(*conditions):
    """The conjunction of `conditions` (TVM's tir.all)."""
    if not conditions:
        return const(True)
    result = conditions[0]
    for cond in conditions[1:]:
        result = _C.logical_and(result, cond)
    return result


def any(*conditions):
    """The disjunction of `conditions` (TVM's tir.any)."""
    if not conditions:
        return const(False)
    result = conditions[0]
    for cond in conditions[1:]:
        result = _C.logical_or(result, cond)
    return result


def Not(value):
    return _C.logical_not(value)


def And(a, b):
    return _C.logical_and(a, b)


def Or(a, b):
    return _C.logical_or(a, b)


class _NodeKind(type):
    """Metaclass of the node classes: `isinstance(e, tirx.IntImm)` asks e's node kind."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Expr) and obj.kind in cls.kinds


class IntImm(metaclass=_NodeKind):
    """`IntImm(dtype, value)`: an integer constant."""

    kinds = ("IntImm",)

    def __new__(cls, dtype, value):
        return const(int(value), dtype)


class FloatImm(metaclass=_NodeKind):
    """`FloatImm(dtype, value)`: a floating-point constant."""

    kinds = ("FloatImm",)

    def __new__(cls, dtype, value):
        return const(float(value), dtype)


class Var(metaclass=_NodeKind):
    """`Var(name, dtype)`: a scalar variable; as a kernel size it is symbolic (T.dynamic)."""

    kinds = ("Var",)

    def __new__(cls, name, dtype="int32"):
        return _C.Var(name, _dtype(dtype))


SizeVar = Var


class Cast(metaclass=_NodeKind):
    """`Cast(dtype, value)`: `value` converted to `dtype`."""

    kinds = ("Cast",)

    def __new__(cls, dtype, value):
        return _math.cast(value, dtype)


class Call(metaclass=_NodeKind):
    """A call node; `Call(dtype, name, args)` builds an external call (call_extern)."""

    kinds = ("Call",)

    def __new__(cls, dtype, name, args):
        if not isinstance(name, str):
            out_of_scope(
                "tvm.tirx.Call with a TVM Op", "call the function through T (T.call_extern)"
            )
        return _math.call_extern(dtype, name, *args)


class BufferLoad(metaclass=_NodeKind):
    """`BufferLoad(buffer, indices)`: `buffer[indices]` inside a kernel."""

    kinds = ("BufferLoad",)

    def __new__(cls, buffer, indices):
        return buffer[tuple(indices)]


class StringImm(metaclass=_NodeKind):
    kinds = ("StringImm",)

    def __new__(cls, value):
        out_of_scope("tvm.tirx.StringImm", "pass the string to the T function that takes it")


def _kind_only(name, kinds):
    def build(cls, *args, **kwargs):
        out_of_scope(f"tvm.tirx.{name}(...)", f"write the expression with T (T.{name.lower()})")

    return _NodeKind(
        name,
        (),
        {"kinds": kinds, "__new__": build, "__doc__": f"isinstance check for {name} nodes"},
    )


class _BinaryKind(type):
    """Metaclass of the binary node classes: `isinstance(e, tirx.Min)` asks e's operator."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, _C.Expr) and _C.binary_op_name(obj) == cls.op


def _binary(name):
    def build(cls, a, b):
        return _C.binary(name, a, b)

    doc = f"`{name}(a, b)`: the {name} node of a and b; isinstance asks a node's operator."
    return _BinaryKind(name, (), {"op": name, "__new__": build, "__doc__": doc})


Add, Sub, Mul, Div, Mod = (_binary(n) for n in ("Add", "Sub", "Mul", "Div", "Mod"))
FloorDiv, FloorMod, Min, Max = (_binary(n) for n in ("FloorDiv", "FloorMod", "Min", "Max"))
EQ, NE, LT, LE, GT, GE = (_binary(n) for n in ("EQ", "NE", "LT", "LE", "GT", "GE"))

Ramp = _kind_only("Ramp", ("Ramp",))
Broadcast = _kind_only("Broadcast", ("Broadcast",))
Let = _kind_only("Let", ("Let",))


__all__ = [
    "EQ",
    "GE",
    "GT",
    "LE",
    "LT",
    "NE",
    "Add",
    "And",
    "Broadcast",
    "Buffer",
    "BufferLoad",
    "Call",
    "Cast",
    "Div",
    "FloatImm",
    "FloorDiv",
    "FloorMod",
    "IntImm",
    "Let",
    "Max",
    "Min",
    "Mod",
    "Mul",
    "Not",
    "Or",
    "PrimExpr",
    "PrimFunc",
    "Ramp",
    "Select",
    "SizeVar",
    "Stmt",
    "StringImm",
    "Sub",
    "Var",
    "all",
    "any",
    "call_extern",
    "const",
    "exp",
    "floordiv",
    "floormod",
    "if_then_else",
    "log",
    "max",
    "min",
    "reinterpret",
    "rsqrt",
    "sqrt",
]

# Names that exist in TVM's tir but work on TVM's own IR objects (statements, blocks,
# functions as data, passes): out of scope here.
_TVM_IR = {
    "Evaluate", "For", "ForKind", "SeqStmt", "BufferStore", "AttrStmt", "IfThenElse",
    "AllocBuffer", "DeclBuffer", "AssertStmt", "LetStmt", "Bind", "SBlock", "Block",
    "BlockRealize", "BufferRegion", "IndexMap", "decl_buffer",
    "call_packed", "call_intrin", "tvm_access_ptr", "vscale", "analysis", "schedule",
}  # fmt: skip


def __getattr__(name):
    # T's own name first: a TVM name T provides (T.Shuffle, T.call_intrin) is T's.
    value = getattr(_T, name, None) if not name.startswith("_") else None
    if value is not None:
        return value
    if name in _TVM_IR:
        return refused_name(f"tvm.tirx.{name}", "write the kernel with tilelang.language")
    raise AttributeError(
        f"tvm.tirx.{name} is not part of tilelang's TVM facade (tvm.tirx offers "
        f"{', '.join(__all__)} and the functions of tilelang.language); write it with "
        "tilelang.language (import tilelang.language as T)"
    )


from . import expr as expr
from . import op as op
from . import script as script
from . import stmt_functor as stmt_functor
from . import transform as transform
