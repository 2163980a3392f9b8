"""Math on expressions (`T.exp`, `T.max`, `T.if_then_else`, `T.cast`, `T.ceildiv` ...),
TileLang's fast-math and IEEE rounding-mode names, and bitwise functions.
Pure-Python ints stay Python ints where TileLang code relies on that (ceildiv of two
ints), so Python-level decisions on them keep working."""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, DTypeLike, Expr, ExprLike, ShapeLike

from . import builder_ctx
from .buffer import Buffer, Region, to_value
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype
from .dtypes import is_dtype_like

_C = builder_ctx._C


def _is_int(x):
    return isinstance(x, int) and not isinstance(x, bool)


def _unary(name):
    def fn(x: ExprLike) -> Expr:
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
_ROUND_TIES = {"ties-away-from-zero": "round", "ties-to-even": "nearbyint"}


def round(x: ExprLike, rounding_mode: str | None = None, span: Any = None) -> Expr:
    """T.round(x): x rounded to an integer value, halves to even (T.nearbyint, numpy's
    np.rint), TileLang's default. TileLang's rounding_mode picks the rule: "ties-to-even"
    (the same) or "ties-away-from-zero" (CUDA's roundf). Integers are returned as they
    are. A span in the mode's place (TileLang's old signature) is ignored."""
    del span
    if rounding_mode is not None and not isinstance(rounding_mode, str):
        rounding_mode = None  # TileLang's T.round(x, span)
    name = _ROUND_TIES.get(rounding_mode or "ties-to-even")
    if name is None:
        raise frontend_error(
            f"T.round rounding_mode must be one of {', '.join(map(repr, _ROUND_TIES))}, "
            f"got {rounding_mode!r}"
        )
    x = to_value(x)
    if isinstance(x, _C.Expr) and not make_dtype(x.dtype).is_float():
        return x
    return _C.call(name, [x])


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
asin = _unary("asin")
acos = _unary("acos")
atan = _unary("atan")
asinh = _unary("asinh")
acosh = _unary("acosh")
atanh = _unary("atanh")


def pow(x: ExprLike, y: ExprLike) -> Expr:
    return _C.call("pow", [to_value(x), to_value(y)])


def fmod(x: ExprLike, y: ExprLike) -> Expr:
    return _C.call("fmod", [to_value(x), to_value(y)])


def atan2(y: ExprLike, x: ExprLike) -> Expr:
    """The angle of the point (x, y) in radians, in [-pi, pi] (C's atan2(y, x))."""
    return _C.call("atan2", [to_value(y), to_value(x)])


def _is_float(x):
    if isinstance(x, _C.Expr):
        return x.dtype.name.startswith(("float", "bfloat", "tfloat"))
    return isinstance(x, float)


def _as_float(x):
    """x as a float expression: integer expressions compute in float32 (as T.exp does)."""
    x = to_value(x)
    if isinstance(x, bool):
        x = int(x)
    if isinstance(x, int):
        return float(x)
    if isinstance(x, _C.Expr) and not _is_float(x):
        return _C.cast(x, "float32")
    return x


# ---- fast math: TileLang's names for the GPU's approximate functions. On the cuda
# target they are what TileLang's CUDA code calls (CUDA's __expf ... for float32, the
# half-style hexp ... for float16 / bfloat16, the precise functions for float64), on
# Metal MSL's fast:: functions; the cpu target has no cheaper variants worth their error
# and computes the precise ones.
_FAST_MATH_DTYPES = ("float16", "bfloat16", "float32", "float64")


def _fast(name, what, approximates):
    def fn(x: ExprLike) -> Expr:
        x = to_value(x)
        if isinstance(x, _C.Expr) and x.dtype.name not in _FAST_MATH_DTYPES:
            raise TypeError(
                f"T.{name} only supports floating-point inputs, but got {x.dtype.name} "
                f"(cast first: T.{name}(T.cast(x, 'float32')))"
            )
        return _C.call(name, [_as_float(x)])

    fn.__name__ = name
    fn.__doc__ = (
        f"T.{name}(x): {what}, approximately (CUDA's {approximates} on the GPU; the precise "
        "function on the cpu target)."
    )
    return fn


__exp = _fast("__exp", "e**x", "__expf")
__exp10 = _fast("__exp10", "10**x", "__exp10f")
__log = _fast("__log", "natural logarithm", "__logf")
__log2 = _fast("__log2", "base-2 logarithm", "__log2f")
__log10 = _fast("__log10", "base-10 logarithm", "__log10f")
__tan = _fast("__tan", "tangent", "__tanf")
__cos = _fast("__cos", "cosine", "__cosf")
__sin = _fast("__sin", "sine", "__sinf")


def fast_rcp(x: ExprLike) -> Expr:
    """T.fast_rcp(x): 1 / x, approximately (rcp.approx.ftz.f32 for float32 on the GPU,
    TileLang's tl::fast_rcp; exact division on the cpu target and for float64)."""
    return _C.call("fast_rcp", [_as_float(x)])


# ---- IEEE operations with an explicit rounding mode (TileLang's ieee_* names): "rn"
# (to nearest even) is the plain operation; "rz", "ru", "rd" (toward zero, up, down)
# are calls of tl::ieee_<op>_<mode> (CUDA's __fadd_rz ... on the GPU, exact software
# rounding on the cpu target and in the emulator, device/common/ieee_rounding.h).
_ROUNDING_MODES = ("rn", "rz", "ru", "rd")


def _ieee(fn, args, rounding_mode, nearest):
    if rounding_mode not in _ROUNDING_MODES:
        raise ValueError(
            f"Invalid rounding mode {rounding_mode!r} for T.{fn}; expected one of "
            f"{', '.join(repr(m) for m in _ROUNDING_MODES)}"
        )
    args = [_as_float(a) for a in args]
    if rounding_mode == "rn":
        return nearest(*args)
    dtypes = {a.dtype.name for a in args if isinstance(a, _C.Expr)}
    dt = dtypes.pop() if len(dtypes) == 1 else ("float64" if "float64" in dtypes else "float32")
    if dt in ("float16", "bfloat16"):
        raise ValueError(
            f"T.{fn}: Only rounding mode 'rn' is available for half precision ({dt}), got "
            f"rounding_mode={rounding_mode!r}"
        )
    if dt not in ("float32", "float64"):
        raise ValueError(
            f"T.{fn}: rounding_mode={rounding_mode!r} is supported for float32 and float64, "
            f"got {dt}"
        )
    args = [_C.cast(a, dt) if isinstance(a, _C.Expr) else _C.const(a, dt) for a in args]
    op = fn.removeprefix("ieee_")
    return _C.call_extern(make_dtype(dt), f"tl::ieee_{op}_{rounding_mode}", args)


def ieee_add(x: ExprLike, y: ExprLike, rounding_mode: str = "rn") -> Expr:
    """x + y rounded with `rounding_mode`: "rn" (nearest even), "rz", "ru" or "rd"."""
    return _ieee("ieee_add", [x, y], rounding_mode, lambda a, b: _C.binary("Add", a, b))


def ieee_sub(x: ExprLike, y: ExprLike, rounding_mode: str = "rn") -> Expr:
    """x - y rounded with `rounding_mode`."""
    return _ieee("ieee_sub", [x, y], rounding_mode, lambda a, b: _C.binary("Sub", a, b))


def ieee_mul(x: ExprLike, y: ExprLike, rounding_mode: str = "rn") -> Expr:
    """x * y rounded with `rounding_mode`."""
    return _ieee("ieee_mul", [x, y], rounding_mode, lambda a, b: _C.binary("Mul", a, b))


def ieee_fmaf(x: ExprLike, y: ExprLike, z: ExprLike, rounding_mode: str = "rn") -> Expr:
    """x * y + z with a single rounding (a fused multiply-add), with `rounding_mode`."""
    return _ieee("ieee_fmaf", [x, y, z], rounding_mode, lambda a, b, c: _C.call("fma", [a, b, c]))


def ieee_frcp(x: ExprLike, rounding_mode: str = "rn") -> Expr:
    """1 / x rounded with `rounding_mode`."""
    return _ieee("ieee_frcp", [x], rounding_mode, lambda a: _C.binary("Div", 1.0, a))


def ieee_fsqrt(x: ExprLike, rounding_mode: str = "rn") -> Expr:
    """sqrt(x) rounded with `rounding_mode`."""
    return _ieee("ieee_fsqrt", [x], rounding_mode, lambda a: _C.call("sqrt", [a]))


def ieee_frsqrt(x: ExprLike, rounding_mode: str = "rn") -> Expr:
    """1 / sqrt(x) correctly rounded to nearest (CUDA's __frsqrt_rn; round to nearest
    only, as in TileLang). float32, and float16 / bfloat16 through float32; float64 has
    no such intrinsic and is refused (1 / T.sqrt(x) rounds twice, T.rsqrt is approximate)."""
    if rounding_mode != "rn":
        raise ValueError(
            f"T.ieee_frsqrt rounds to nearest only; got rounding_mode={rounding_mode!r}"
        )
    x = _as_float(x)
    dt = x.dtype.name if isinstance(x, _C.Expr) else "float32"
    if dt == "float64":
        raise ValueError(
            "T.ieee_frsqrt: frsqrt is not supported for float64 (there is no correctly "
            "rounded double reciprocal square root; use 1 / T.sqrt(x) or T.rsqrt(x)), got float64"
        )
    arg = _C.cast(x, "float32") if isinstance(x, _C.Expr) else _C.const(x, "float32")
    r = _C.call_extern(make_dtype("float32"), "tl::ieee_frsqrt_rn", [arg])
    return r if dt == "float32" else _C.cast(r, dt)


def ieee_fdiv(x: ExprLike, y: ExprLike, rounding_mode: str = "rn") -> Expr:
    """x / y rounded with `rounding_mode`."""
    return _ieee("ieee_fdiv", [x, y], rounding_mode, lambda a, b: _C.binary("Div", a, b))


# ---- bitwise functions (the operators &, |, ^, ~, <<, >> on expressions do the same)
def _bitwise(op, a, b, py):
    a, b = to_value(a), to_value(b)
    if _is_int(a) and _is_int(b):
        return py(a, b)
    return _C.binary(op, a, b)


def bitwise_and(a: ExprLike, b: ExprLike) -> Expr:
    return _bitwise("BitAnd", a, b, lambda x, y: x & y)


def bitwise_or(a: ExprLike, b: ExprLike) -> Expr:
    return _bitwise("BitOr", a, b, lambda x, y: x | y)


def bitwise_xor(a: ExprLike, b: ExprLike) -> Expr:
    return _bitwise("BitXor", a, b, lambda x, y: x ^ y)


def shift_left(a: ExprLike, b: ExprLike) -> Expr:
    return _bitwise("Shl", a, b, lambda x, y: x << y)


def shift_right(a: ExprLike, b: ExprLike) -> Expr:
    """Arithmetic shift for signed types, logical for unsigned (as C does)."""
    return _bitwise("Shr", a, b, lambda x, y: x >> y)


def bitwise_not(a: ExprLike) -> Expr:
    a = to_value(a)
    if isinstance(a, _C.Expr) and a.dtype.name == "bool":
        raise frontend_error(
            f"T.bitwise_not needs an integer, got bool `{a}`; use `not` for booleans"
        )
    return ~a


def max3(a: ExprLike, b: ExprLike, c: ExprLike) -> Expr:
    """The largest of three values (TileLang's three-input max)."""
    return max(a, b, c)


def _fold(op, values):
    values = [to_value(v) for v in values]
    if len(values) < 2:
        raise TypeError(f"T.{op.lower()} needs at least two values, got {len(values)}")
    acc = values[0]
    for v in values[1:]:
        acc = _C.binary(op, acc, v)
    return acc


def max(*values: ExprLike) -> Expr:
    return _fold("Max", values)


def min(*values: ExprLike) -> Expr:
    return _fold("Min", values)


def clamp(
    dst: BufferLike | None = None,
    lo: ExprLike | None = None,
    hi: ExprLike | None = None,
    *,
    min_val: ExprLike | None = None,
    max_val: ExprLike | None = None,
    x: ExprLike | None = None,
) -> Expr:
    """`T.clamp(x, lo, hi)` (also `T.clamp(x, min_val=lo, max_val=hi)`): x limited to
    [lo, hi], as max(min(x, hi), lo)."""
    value = dst if dst is not None else x
    lo = lo if min_val is None else min_val
    hi = hi if max_val is None else max_val
    missing = [n for n, v in (("x", value), ("min_val", lo), ("max_val", hi)) if v is None]
    if missing:
        raise frontend_error(f"T.clamp(x, min_val, max_val): {', '.join(missing)} not given")
    return max(min(value, hi), lo)


def dp4a(A: BufferLike, B: BufferLike, C: BufferLike) -> Expr:
    """`T.dp4a(A, B, C)`: C += A[0] * B[0] + ... + A[3] * B[3], four 8-bit integer
    products summed into the 32-bit integer C. A, B and C are buffers (from their first
    element) or elements (`A_local[k * 4]`); the four run along the last dimension."""
    from .buffer import Buffer, VarBuffer

    ctx = builder_ctx.current("T.dp4a")

    def start(x, name, dtypes):
        if isinstance(x, VarBuffer):
            found = (x, (0,))
        elif isinstance(x, Buffer):
            found = (x, (0,) * x.ndim)
        else:
            element = ctx.element_of(to_value(x)) if isinstance(x, _C.Expr) else None
            found = None if element is None else (element[0], tuple(element[1]))
        if found is None:
            raise frontend_error(
                f"T.dp4a: {name} must be a buffer or one element of it, got {type(x).__name__} {x!r}"
            )
        if str(found[0].dtype) not in dtypes:
            raise frontend_error(
                "T.dp4a requires int8 A and B and an int32 C (the signed dot product of "
                f"CUDA's __dp4a, as in TileLang): {name} ('{found[0].name}') is {found[0].dtype}"
            )
        return found

    (a, ai), (b, bi) = start(A, "A", ("int8",)), start(B, "B", ("int8",))
    c, ci = start(C, "C", ("int32",))
    total = c[ci]
    for k in range(4):
        lane_a, lane_b = (*ai[:-1], ai[-1] + k), (*bi[:-1], bi[-1] + k)
        total = total + _C.cast(a[lane_a], c.dtype) * _C.cast(b[lane_b], c.dtype)
    c[ci] = total


def if_then_else(cond: ExprLike, then_value: ExprLike, else_value: ExprLike) -> Expr:
    cond = to_value(cond)
    if isinstance(cond, bool):
        return then_value if cond else else_value
    return _C.select(cond, to_value(then_value), to_value(else_value))


def Select(condition: ExprLike, true_value: ExprLike, false_value: ExprLike) -> Expr:
    """TVM's `T.Select(cond, a, b)`: a where cond holds, else b. Both values are
    computed (no branch), so neither may read out of bounds; T.if_then_else reads
    only the chosen one."""
    return if_then_else(condition, true_value, false_value)


# TileLang's PTX rounding modifiers of T.cast ("" is the conversion's own rounding).
CAST_ROUNDING_MODES = frozenset({"", "rn", "rz", "rp", "rm", "rs"})
_ROUNDING_NAMES = {
    "rn": "to nearest even",
    "rz": "toward zero",
    "rp": "toward +inf",
    "rm": "toward -inf",
    "rs": "stochastically",
}
# Targets of `sat`: the float8 / float6 / float4 conversions saturate to the largest
# finite value (PTX .satfinite) unless sat=False.
_SATURATING_TARGETS = ("float8", "float6", "float4")


def _check_cast_options(round, sat, rbits):
    if round not in CAST_ROUNDING_MODES:
        raise frontend_error(
            f"Invalid round {round!r}. Must be one of: {sorted(CAST_ROUNDING_MODES)}"
        )
    if not isinstance(sat, bool):
        raise frontend_error(
            f"Invalid sat {sat!r}. Must be a bool (True for satfinite, False for no saturation)"
        )
    if round == "rs" and rbits is None:
        raise frontend_error("rbits is required when round='rs' (stochastic rounding)")
    if round != "rs" and rbits is not None:
        raise frontend_error("rbits is only valid with round='rs' (stochastic rounding)")


def _own_rounding(src, dst):
    """The rounding every target's conversion from `src` to `dst` does: to nearest
    even into a float, toward zero (C's truncation) from a float into an integer;
    None when nothing is rounded (integer to integer)."""
    if dst.is_float():
        return "rn"
    return "rz" if src.is_float() else None


def _exact_constant(value, dst):
    """Whether `value` is a constant that `dst` holds exactly (and finitely): every
    rounding mode and saturation setting converts it to the same value."""
    if isinstance(value, (bool, int, float)):
        v = float(value)
    elif getattr(value, "kind", None) in ("IntImm", "FloatImm"):
        v = float(value.const_value())
    else:
        return False
    import math as pymath

    import numpy as np

    if not pymath.isfinite(v) or dst.lanes != 1:
        return False
    with np.errstate(all="ignore"):
        try:
            held = np.asarray(v, np.float64).astype(dst.as_numpy()).astype(np.float64)
        except (TypeError, ValueError, OverflowError):
            return False
    return bool(held == v)


def cast(
    value: ExprLike,
    dtype: DTypeLike,
    round: str = "",
    sat: bool = True,
    rbits: ExprLike | None = None,
    span: Any = None,
) -> Expr:
    """Converts `value` to `dtype` (also accepted in the order cast(dtype, value)).

    TileLang's options: `round` a PTX rounding modifier ("" the conversion's own,
    "rn", "rz", "rp", "rm", "rs"), `sat` saturation of float8/float4 results to the
    largest finite value (the default) and `rbits` the random bits of stochastic
    rounding. Each target converts with one rounding (to nearest even into floats,
    toward zero into integers): a mode naming
    that rounding is accepted, and any mode for a constant the result holds exactly
    (all modes agree); another mode, `round="rs"` (sm_100a's stochastic rounding) and
    `sat=False` into float8/float4 (whose overflow follows the target's rule) are
    refused by name rather than ignored."""
    del span
    if is_dtype_like(value) and not is_dtype_like(dtype):
        value, dtype = dtype, value
    _check_cast_options(round, sat, rbits)
    operand = to_value(value)
    dst = make_dtype(dtype)
    out = _C.cast(operand, dst)
    if round == "" and sat:
        return out
    if hasattr(operand, "dtype"):
        src = make_dtype(str(operand.dtype))
    else:  # a Python number: T's literal types
        src = make_dtype("float32" if isinstance(operand, float) else "int32")
    own = _own_rounding(src, dst)
    rounding_ok = round in ("", own) or own is None
    saturation_ok = sat or not str(dst).startswith(_SATURATING_TARGETS)
    if (rounding_ok and saturation_ok) or _exact_constant(operand, dst):
        return out
    if not rounding_ok:
        why = (
            "stochastic rounding (round='rs') is sm_100a's cvt.rs, and no target of tilelang has it"
            if round == "rs"
            else f"every target rounds this conversion {_ROUNDING_NAMES[own]} (round={own!r})"
        )
        raise frontend_error(
            f"T.cast of {src} to {dst} with round={round!r} (rounding "
            f"{_ROUNDING_NAMES[round]}) is not supported: {why}"
        )
    raise frontend_error(
        f"T.cast of {src} to {dst} with sat=False is not supported: a conversion into {dst} "
        "follows its target's one rule (the cuda target saturates to the largest finite "
        "value, the cpu target follows ml_dtypes), which a cast cannot choose"
    )


# TVM's spelling, as TileLang kernels write it: T.Cast(dtype, value).
Cast = cast


def address_of(element: ExprLike) -> Expr:
    """The address of one buffer element, `T.address_of(A[i, j])`, for T.call_extern."""
    value = to_value(element)
    if getattr(value, "kind", None) != "BufferLoad":
        raise frontend_error(
            f"T.address_of takes one buffer element such as A[i, j], got {value!r}"
        )
    return _C.call("address_of", [value])


_ACCESS = {"r": 1, "w": 2, "rw": 3, "wr": 3}


def access_ptr(
    target: BufferLike, access_type: str = "r", extent: ExprLike | None = None, offset: ExprLike = 0
) -> Expr:
    """The address of a buffer's data for T.call_extern, as TileLang writes it:
    `T.access_ptr(B_local, "r")` (the buffer's first element),
    `T.access_ptr(A_shared[i, 0], "w", extent=16)` (one element), or a slice (its first
    element). `offset` moves the address by that many elements of the buffer's
    row-major order. `access_type` ("r", "w", "rw" or TVM's masks 1, 2, 3) says how
    the callee uses the memory: the barrier planner orders a shared buffer handed over
    through an "r" address as a read (two readers need no barrier between them); an
    address without a mask (`T.address_of`) counts as a write. `extent` is checked,
    not needed."""
    mask = _ACCESS.get(access_type, access_type)
    if mask not in (1, 2, 3):
        raise frontend_error(
            f"T.access_ptr: access_type must be 'r', 'w', 'rw' or a mask 1, 2, 3; got "
            f"{access_type!r}"
        )
    if extent is not None and isinstance(extent, int) and extent < 1:
        raise frontend_error(f"T.access_ptr: extent must be at least 1 element, got {extent}")
    if isinstance(target, Buffer):
        buffer, indices = target, [0] * target.ndim
    elif isinstance(target, Region):
        buffer, indices = target.buffer, list(target.mins)
    else:
        value = to_value(target)
        if getattr(value, "kind", None) != "BufferLoad":
            raise frontend_error(
                "T.access_ptr takes a buffer, a buffer element such as A[i, j] or a slice, "
                f"got {target!r}"
            )
        if isinstance(offset, int) and offset == 0:
            return _C.call("address_of", [value, mask])
        buffer, indices = _traced_element(value)
    if not (isinstance(offset, int) and offset == 0):
        flat = buffer.elem_offset_of(indices) + offset
        indices = list(index_to_coordinates(flat, buffer.shape))
    return _C.call("address_of", [buffer[tuple(indices)] if indices else buffer[0], mask])


def _traced_element(load):
    """(Buffer, indices) of a buffer element read in the kernel being traced."""
    entry = builder_ctx.current("T.access_ptr").element_of(load)
    if entry is None:
        raise frontend_error(
            "T.access_ptr: offset= needs a buffer, a slice or an element read in this "
            "kernel; pass the element at the offset instead (A[i, j + offset])"
        )
    return entry[0], list(entry[1])


def reinterpret(value: ExprLike, dtype: DTypeLike) -> Expr:
    """Reads the bits of `value` as `dtype` (also accepted as reinterpret(dtype, value))."""
    if is_dtype_like(value) and not is_dtype_like(dtype):
        value, dtype = dtype, value
    if dtype == "handle":  # TVM's null handle for T.attr(..., "reduce_scope", ...)
        from .allreduce import NULL_HANDLE

        return NULL_HANDLE
    from .vector import LaneVector, reinterpret_lanes  # vector imports this module

    if isinstance(value, LaneVector):
        return reinterpret_lanes(value, dtype)
    return _C.reinterpret(to_value(value), make_dtype(dtype))


def _python_int_divisor(name, a, b):
    """Whether T.<name>(a, b) is Python integer arithmetic; a zero divisor is a user
    error (as the constant 0 is for an expression; see binary() in src/ir/op.cpp)."""
    if not (_is_int(a) and _is_int(b)):
        return False
    if b == 0:
        raise frontend_error(f"integer division by zero: the divisor of `T.{name}({a}, {b})` is 0")
    return True


def ceildiv(a: ExprLike, b: ExprLike) -> Expr:
    a, b = to_value(a), to_value(b)
    if _python_int_divisor("ceildiv", a, b):
        return -(-a // b)
    return _C.ceildiv(a, b)


def assume(condition: ExprLike) -> None:
    """TVM's `T.assume(cond)`: a promise that `cond` holds from where it is written to
    the end of the enclosing block (or until a variable it reads is assigned). The
    compiler relies on it to drop the bounds checks it implies; a promise over the
    kernel's scalar arguments and symbolic sizes alone is checked at every call."""
    cond = to_value(condition)
    if isinstance(cond, _C.Expr) and cond.dtype.name != "bool":
        raise frontend_error(
            f"T.assume takes a condition such as `i < N`, got {cond.dtype} `{cond}`"
        )
    if not isinstance(cond, (bool, _C.Expr)):
        raise frontend_error(f"T.assume takes a condition such as `i < N`, got {cond!r}")
    ctx = builder_ctx.current("T.assume")
    if isinstance(cond, bool):
        if not cond:
            raise frontend_error("T.assume(False): the promise never holds")
        return
    if builder_ctx.KERNEL not in ctx.frames:
        # A promise of the whole function: it holds in every T.Kernel block after it.
        ctx.function_assumes.append(cond)
        return
    ctx.builder.evaluate(_C.call("assume", [cond]))


class _VarType(type):
    """`T.Var` is both a constructor and a type: `isinstance(n, T.Var)` holds for every
    symbolic scalar (T.dynamic sizes, loop variables, scalar parameters)."""

    def __instancecheck__(cls, value):
        return isinstance(value, _C.Var)

    def __call__(cls, name, dtype="int32"):
        return _C.Var(name, make_dtype(dtype))


class Var(metaclass=_VarType):
    """TVM's `T.Var(name, dtype)`: a symbolic scalar, as T.dynamic(name, dtype) makes."""


def let(var: ExprLike, value: ExprLike, body: ExprLike | None = None) -> Expr:
    """`T.let(v, value)`: binds `value` to the variable `v` (made by `T.int32()` or
    `T.Var(name, dtype)`) for the rest of the enclosing block."""
    ctx = builder_ctx.current("T.let")
    if body is not None:
        raise frontend_error("T.let(var, value, body) is not supported; use T.let(var, value)")
    if not isinstance(var, _C.Var):
        raise frontend_error(
            f"T.let binds a variable made by T.int32() or T.Var(name, dtype), got {var!r}"
        )
    return ctx.builder.let_var(var, to_value(value))


def align_up(x: ExprLike, y: ExprLike) -> Expr:
    """x rounded up to a multiple of y: T.ceildiv(x, y) * y (ints stay ints)."""
    return ceildiv(x, y) * y


def floordiv(a: ExprLike, b: ExprLike) -> Expr:
    a, b = to_value(a), to_value(b)
    if _python_int_divisor("floordiv", a, b):
        return a // b
    return _C.binary("FloorDiv", a, b)


def floormod(a: ExprLike, b: ExprLike) -> Expr:
    a, b = to_value(a), to_value(b)
    if _python_int_divisor("floormod", a, b):
        return a % b
    return _C.binary("FloorMod", a, b)


def index_to_coordinates(index: ExprLike, shape: ShapeLike) -> Expr:
    """The row-major coordinates of flat `index` in `shape` (the last dimension varies
    fastest), as a tuple: `i, j = T.index_to_coordinates(k, (M, N))` is (k // N, k % N)."""
    shape = list(shape) if isinstance(shape, (list, tuple)) else [shape]
    if not shape:
        raise frontend_error("T.index_to_coordinates: shape must have at least one dimension")
    coords = []
    rest = index
    for extent in reversed(shape[1:]):
        coords.append(floormod(rest, extent))
        rest = floordiv(rest, extent)
    coords.append(rest)
    return tuple(reversed(coords))


def truncdiv(a: ExprLike, b: ExprLike) -> Expr:
    return _C.binary("Div", to_value(a), to_value(b))


def truncmod(a: ExprLike, b: ExprLike) -> Expr:
    return _C.binary("Mod", to_value(a), to_value(b))


def infinity(dtype: DTypeLike) -> Expr:
    return _C.infinity(make_dtype(dtype))


def max_value(dtype: DTypeLike) -> Expr:
    return _C.max_value(make_dtype(dtype))


def min_value(dtype: DTypeLike) -> Expr:
    return _C.min_value(make_dtype(dtype))


# Elements a buffer or slice given to T.any_of / T.all_of may hold: each is one load in
# the unrolled expression.
_LOGICAL_REDUCE_MAX_ELEMS = 1024


def _region_elements(name, value):
    """The loads of every element of a buffer or slice, each as a truth value (bool
    elements as they are, others compared with zero), for T.any_of / T.all_of."""
    region = value.full_region() if isinstance(value, Buffer) else value
    extents = []
    for e in region.extents:
        c = e if _is_int(e) else (e.const_value() if isinstance(e, _C.Expr) else None)
        if not _is_int(c):
            raise frontend_error(
                f"T.{name}({region!r}): the extents must be constants, got {list(region.extents)}; "
                "reduce a slice of constant size"
            )
        extents.append(c)
    count = 1
    for e in extents:
        count *= e
    if count < 1 or count > _LOGICAL_REDUCE_MAX_ELEMS:
        raise frontend_error(
            f"T.{name}({region!r}): expected 1 to {_LOGICAL_REDUCE_MAX_ELEMS} elements, got {count}"
        )
    loads = []
    for flat in range(count):
        index, rest = [], flat
        for e in reversed(extents):
            index.append(rest % e)
            rest //= e
        index.reverse()
        load = region.buffer[tuple(m + i for m, i in zip(region.mins, index))]
        loads.append(load if region.dtype == "bool" else load != 0)
    return loads


def _logical_reduce(name, op, conds):
    """T.any_of / T.all_of: several conditions, or the elements of a buffer or slice
    (TileLang's form, `T.any_of(mask[i, j, :])`), folded as a balanced tree."""
    values = []
    for c in conds:
        if isinstance(c, (Buffer, Region)) and not hasattr(c, "__tl_expr__"):
            values += _region_elements(name, c)
        else:
            values.append(to_value(c))
    if not values:
        raise frontend_error(f"T.{name}() expected a buffer, a slice or conditions, got nothing")
    while len(values) > 1:
        pairs = [op(values[i], values[i + 1]) for i in range(0, len(values) - 1, 2)]
        values = pairs + ([values[-1]] if len(values) % 2 else [])
    return values[0]


def all_of(*conds: Any) -> Expr:
    """True when every condition holds, or every element of a buffer or slice is nonzero."""
    return _logical_reduce("all_of", _C.logical_and, conds)


def any_of(*conds: Any) -> Expr:
    """True when some condition holds, or some element of a buffer or slice is nonzero."""
    return _logical_reduce("any_of", _C.logical_or, conds)


def call_extern(*args: Any, dtype: DTypeLike | None = None) -> Expr:
    """A call of an external device function: `T.call_extern(dtype, name, *args)`, or
    with the result type as a keyword, `T.call_extern(name, *args, dtype=...)`."""
    if dtype is None:
        if len(args) < 2:
            raise frontend_error(
                f"T.call_extern(dtype, name, *args): expected a result dtype and a function name, got {args!r}"
            )
        dtype, *args = args  # type: ignore[assignment]
    if not args or not isinstance(args[0], str):
        raise frontend_error(
            f"T.call_extern: the function name must be a string, got {args[0] if args else None!r}"
        )
    name, *args = args  # type: ignore[assignment]
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
    "asin",
    "acos",
    "atan",
    "asinh",
    "acosh",
    "atanh",
    "atan2",
    "Select",
    "Var",
    "let",
    "align_up",
    "assume",
    "max",
    "min",
    "clamp",
    "dp4a",
    "if_then_else",
    "cast",
    "Cast",
    "address_of",
    "access_ptr",
    "reinterpret",
    "ceildiv",
    "floordiv",
    "floormod",
    "index_to_coordinates",
    "truncdiv",
    "truncmod",
    "infinity",
    "max_value",
    "min_value",
    "all_of",
    "any_of",
    "call_extern",
    "__exp",
    "__exp10",
    "__log",
    "__log2",
    "__log10",
    "__tan",
    "__cos",
    "__sin",
    "fast_rcp",
    "ieee_add",
    "ieee_sub",
    "ieee_mul",
    "ieee_fmaf",
    "ieee_frcp",
    "ieee_fsqrt",
    "ieee_frsqrt",
    "ieee_fdiv",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "shift_left",
    "shift_right",
    "max3",
]
