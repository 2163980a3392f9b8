"""`tvm.tirx.expr`: the expression node classes and logical helpers of tvm.tirx."""

from . import (
    EQ,
    GE,
    GT,
    LE,
    LT,
    NE,
    Add,
    And,
    Broadcast,
    BufferLoad,
    Call,
    Cast,
    Div,
    FloatImm,
    FloorDiv,
    FloorMod,
    IntImm,
    Let,
    Max,
    Min,
    Mod,
    Mul,
    Not,
    Or,
    PrimExpr,
    Ramp,
    StringImm,
    Sub,
    Var,
)

__all__ = ["EQ", "GE", "GT", "LE", "LT", "NE", "Add", "And", "Broadcast", "BufferLoad", "Call",
           "Cast", "Div", "FloatImm", "FloorDiv", "FloorMod", "IntImm", "Let", "Max", "Min", "Mod",
           "Mul", "Not", "Or", "PrimExpr", "Ramp", "StringImm", "Sub", "Var"]  # fmt: skip


def __getattr__(name):
    from tilelang.tvm import tirx

    return getattr(tirx, name)
