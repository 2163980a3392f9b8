"""Math on expressions (`T.exp`, `T.max`, `T.if_then_else`, `T.cast`, `T.ceildiv` ...).
Pure-Python ints stay Python ints where TileLang code relies on that (ceildiv of two
ints), so Python-level decisions on them keep working."""

from . import builder_ctx
from .buffer import to_value
from .dtypes import dtype as make_dtype
from .dtypes import is_dtype_like

_C = builder_ctx._C


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _unary(name):
    def fn(x):
        return _C.call(name, [to_value(x)])

    fn.__name__ = name
    fn.__doc__ = f"T.{name}(x): elementwise {name} of an expression."
    return fn


# Elementwise functions of one expression, each a call of the core intrinsic of that name.
exp = _unary("exp")
exp2 = _unary("exp2")
exp10 = _unary("exp10")
log = _unary("log")
log2 = _unary("log2")
log10 = _unary("log10")
log1p = _unary("log1p")
sqrt = _unary("sqrt")
rsqrt = _unary("rsqrt")
abs = _unary("abs")
floor = _unary("floor")
ceil = _unary("ceil")
round = _unary("round")
trunc = _unary("trunc")
nearbyint = _unary("nearbyint")
sigmoid = _unary("sigmoid")
tanh = _unary("tanh")
sin = _unary("sin")
cos = _unary("cos")
tan = _unary("tan")
sinh = _unary("sinh")
cosh = _unary("cosh")
erf = _unary("erf")
isnan = _unary("isnan")
isinf = _unary("isinf")
isfinite = _unary("isfinite")


def pow(x, y):
    return _C.call("pow", [to_value(x), to_value(y)])


def fmod(x, y):
    return _C.call("fmod", [to_value(x), to_value(y)])


def _fold(op, values):
    values = [to_value(v) for v in values]
    if len(values) < 2:
        raise TypeError(f"T.{op.lower()} needs at least two values, got {len(values)}")
    acc = values[0]
    for v in values[1:]:
        acc = _C.binary(op, acc, v)
    return acc


def max(*values):
    return _fold("Max", values)


def min(*values):
    return _fold("Min", values)


def clamp(x, lo, hi):
    return max(min(x, hi), lo)


def if_then_else(cond, then_value, else_value):
    cond = to_value(cond)
    if isinstance(cond, bool):
        return then_value if cond else else_value
    return _C.select(cond, to_value(then_value), to_value(else_value))


def cast(value, dtype):
    """Converts `value` to `dtype` (also accepted in the order cast(dtype, value))."""
    if is_dtype_like(value) and not is_dtype_like(dtype):
        value, dtype = dtype, value
    return _C.cast(to_value(value), make_dtype(dtype))


def reinterpret(value, dtype):
    """Reads the bits of `value` as `dtype` (also accepted as reinterpret(dtype, value))."""
    if is_dtype_like(value) and not is_dtype_like(dtype):
        value, dtype = dtype, value
    return _C.reinterpret(to_value(value), make_dtype(dtype))


def ceildiv(a, b):
    a, b = to_value(a), to_value(b)
    if _is_int(a) and _is_int(b):
        return -(-a // b)
    return _C.ceildiv(a, b)


def floordiv(a, b):
    a, b = to_value(a), to_value(b)
    if _is_int(a) and _is_int(b):
        return a // b
    return _C.binary("FloorDiv", a, b)


def floormod(a, b):
    a, b = to_value(a), to_value(b)
    if _is_int(a) and _is_int(b):
        return a % b
    return _C.binary("FloorMod", a, b)


def truncdiv(a, b):
    return _C.binary("Div", to_value(a), to_value(b))


def truncmod(a, b):
    return _C.binary("Mod", to_value(a), to_value(b))


def infinity(dtype):
    return _C.infinity(make_dtype(dtype))


def max_value(dtype):
    return _C.max_value(make_dtype(dtype))


def min_value(dtype):
    return _C.min_value(make_dtype(dtype))


def _logical(op, values):
    values = [to_value(v) for v in values]
    acc = values[0]
    for v in values[1:]:
        acc = op(acc, v)
    return acc


def all_of(*conds):
    return _logical(_C.logical_and, conds)


def any_of(*conds):
    return _logical(_C.logical_or, conds)


def call_extern(dtype, name, *args):
    return _C.call_extern(make_dtype(dtype), name, [to_value(a) for a in args])


__all__ = [  # noqa: RUF022 - grouped: unary functions first
    "exp",
    "exp2",
    "exp10",
    "log",
    "log2",
    "log10",
    "log1p",
    "sqrt",
    "rsqrt",
    "abs",
    "floor",
    "ceil",
    "round",
    "trunc",
    "nearbyint",
    "sigmoid",
    "tanh",
    "sin",
    "cos",
    "tan",
    "sinh",
    "cosh",
    "erf",
    "isnan",
    "isinf",
    "isfinite",
    "pow",
    "fmod",
    "max",
    "min",
    "clamp",
    "if_then_else",
    "cast",
    "reinterpret",
    "ceildiv",
    "floordiv",
    "floormod",
    "truncdiv",
    "truncmod",
    "infinity",
    "max_value",
    "min_value",
    "all_of",
    "any_of",
    "call_extern",
]
