"""The `T.float16`-style dtype objects. A dtype is a `str` holding its canonical name, so
it compares equal to that name and passes straight into the C++ core; the core's one
list of scalar types (dtypes.def) decides which names exist."""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from tilelang import _native
from tilelang.types import ExprLike

_C = _native.load()

# Python-level aliases users write (`T.half`, `T.int` ...).
ALIASES = {
    "half": "float16",
    "float": "float32",
    "double": "float64",
    "int": "int32",
    "uint": "uint32",
    "long": "int64",
    "short": "int16",
    # TileLang's name for the e4m3 type its GPUs have (no infinities: e4m3fn), and
    # TVM's older names of both float8 types.
    "float8_e4m3": "float8_e4m3fn",
    "e4m3_float8": "float8_e4m3fn",
    "e5m2_float8": "float8_e5m2",
    # TileLang's sm_100 shared-memory tag, which it prints as TVM's custom type.
    "float4_e2m1_unpacked": "custom[float4_e2m1_unpacked]8",
}
_UNPACKED_FP4 = "custom[float4_e2m1_unpacked]8"
# TVM's type codes (DLPack's, and 131 for TileLang's custom unpacked fp4).
_TYPE_CODES = {"int": 0, "uint": 1, "bool": 1, "float": 2, "tfloat": 2, "bfloat": 4}
_FLOAT_TYPE_CODES = {
    "float8_e4m3fn": 10,
    "float8_e4m3fnuz": 11,
    "float8_e5m2": 12,
    "float8_e5m2fnuz": 13,
    "float8_e8m0fnu": 14,
    "float4_e2m1fn": 17,
    _UNPACKED_FP4: 131,
}

_PY_TYPES = {builtins.bool: "bool", builtins.int: "int32", builtins.float: "float32"}
_INTERNAL = {"handle", "void"}
# numpy cannot hold these natively; ml_dtypes supplies them.
_ML_DTYPES_NAMES = {
    "bfloat16",
    "int4",
    "float8_e4m3fn",
    "float8_e5m2",
    "float8_e4m3fnuz",
    "float8_e5m2fnuz",
    "float8_e8m0fnu",
    "float4_e2m1fn",
}
_parsed: dict = {}


def _core_dtype(name):
    """The core's DataType for a name, raising TileLangError quoting an unknown name."""
    core = _parsed.get(name)
    if core is None:
        core = _parsed[name] = _parse(name)
    return core


def _from_string_works():
    try:
        _C.DataType.from_string("int32")
    except TypeError:  # bindings whose from_string lacks a str caster
        return False
    return True


_parse = _C.DataType.from_string if _from_string_works() else (lambda n: _C.Var("_", n).dtype)


def _name_of(value):
    """The dtype name of a string, numpy/ml_dtypes dtype, torch dtype or Python type."""
    if isinstance(value, str):
        return ALIASES.get(value, value)
    if isinstance(value, _C.DataType):
        return value.name
    if isinstance(value, type) and value in _PY_TYPES:
        return _PY_TYPES[value]
    module = type(value).__module__
    if module.startswith("torch"):
        name = str(value).replace("torch.", "")
        return "float4_e2m1fn" if name == "float4_e2m1fn_x2" else name
    try:
        return np.dtype(value).name
    except TypeError:
        raise TypeError(
            f"cannot make a dtype from {value!r} of type {type(value).__name__}"
        ) from None


class dtype(str):
    """A scalar or vector element type: `T.float16`, `T.float32x4`, `T.dtype(torch.half)`."""

    _core: Any  # the core's DataType, set by __new__

    def __new__(cls, value):
        if isinstance(value, dtype):
            return value
        core = _core_dtype(_name_of(value))
        obj = super().__new__(cls, core.name)
        obj._core = core
        return obj

    @property
    def bits(self) -> Any:
        return self._core.bits

    @property
    def bytes(self) -> Any:
        return self._core.bytes

    @property
    def lanes(self) -> Any:
        return self._core.lanes

    def with_lanes(self, lanes: ExprLike) -> Any:
        return dtype(self._core.with_lanes(lanes).name)

    def is_float(self) -> Any:
        return self.startswith(("float", "bfloat", "tfloat"))

    @property
    def type_code(self) -> Any:
        """TVM's type code: 0 int, 1 uint (and bool), 2 float, 4 bfloat16, DLPack's codes
        of the float8 types and float4_e2m1fn (17), 131 for float4_e2m1_unpacked."""
        scalar = str(self.with_lanes(1))
        if scalar in _FLOAT_TYPE_CODES:
            return _FLOAT_TYPE_CODES[scalar]
        for prefix in ("bfloat", "tfloat", "float", "uint", "int", "bool"):
            if scalar.startswith(prefix):
                return _TYPE_CODES[prefix]
        return 3  # handle

    def is_float4_e2m1fn(self) -> Any:
        """Packed fp4: two values a byte (any lanes: float4_e2m1fnx2 too)."""
        return str(self.with_lanes(1)) == "float4_e2m1fn"

    def is_float4_e2m1_unpacked(self) -> Any:
        """TileLang's sm_100 shared-memory tag: one fp4 value a byte slot."""
        return str(self) == _UNPACKED_FP4

    def is_float4(self) -> Any:
        return self.is_float4_e2m1fn() or self.is_float4_e2m1_unpacked()

    def is_int(self) -> Any:
        return self.startswith(("int", "uint"))

    def __eq__(self, other):
        if isinstance(other, str):
            return str.__eq__(self, ALIASES.get(other, other))
        if other is None:
            return False
        try:
            return str.__eq__(self, dtype(other))
        except (TypeError, ValueError):
            return NotImplemented

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = str.__hash__

    def __repr__(self):
        return f"T.{self!s}" if str(self).isidentifier() else f"T.dtype({str(self)!r})"

    def __reduce__(self):
        return (dtype, (str(self),))

    def __call__(self, value: ExprLike | None = None, *more: Any) -> Any:
        """`T.float32(1.5)` is a constant; applied to an expression it is a cast; with no
        value it is a fresh scalar variable of this dtype (bind it with T.let). A vector
        dtype with one value per lane builds that vector: `T.float16x2(a, b)`."""
        if more:
            from .vector import make_vector  # vector imports this module

            return make_vector(self, [value, *more])
        if value is None:
            return self._fresh_var()
        if isinstance(value, np.generic):
            value = value.item()
        if isinstance(value, builtins.int) and not isinstance(value, builtins.bool):
            return _C.const(self._checked_int(value), self)
        if isinstance(value, (builtins.bool, builtins.float)):
            return _C.const(value, self)
        return _C.cast(value, self)

    def _fresh_var(self):
        from .builder_ctx import maybe_current

        ctx = maybe_current()
        name = (ctx.pending_name if ctx is not None else None) or "v"
        return _C.Var(name, self)

    def _checked_int(self, value):
        """`value`, checked to fit this integer dtype."""
        if self.lanes != 1 or not (self.is_int() or self == "bool"):
            return value
        bits = self.bits
        lo, hi = (
            (0, 2**bits - 1)
            if self.startswith("uint")
            else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
        )
        if self == "bool":
            lo, hi = 0, 1
        if not lo <= value <= hi:
            from .builder_ctx import frontend_error

            raise frontend_error(
                f"T.{self}({value}): {value} is outside the range [{lo}, {hi}] of {self}"
            )
        return value

    def as_numpy(self) -> Any:
        """The numpy dtype holding this type (ml_dtypes for bfloat16, fp8, fp4 and int4)."""
        if self.lanes != 1:
            raise ValueError(f"dtype {self} has {self.lanes} lanes; numpy has no vector dtypes")
        name = self._core.numpy_name
        if name in _ML_DTYPES_NAMES:
            import ml_dtypes

            return np.dtype(getattr(ml_dtypes, name))
        return np.dtype(name)

    def as_torch(self) -> Any:
        """The torch dtype (int4 → int8, tfloat32 → float32, float4 → packed float4_e2m1fn_x2)."""
        import torch

        name = self._core.torch_name
        if not hasattr(torch, name):
            raise ValueError(f"dtype {self} needs torch.{name}, which this torch does not have")
        return getattr(torch, name)


def _make_all():
    made = {}
    for name in _C.scalar_type_names():
        if name not in _INTERNAL:
            made[name] = dtype(name)
    for alias, name in ALIASES.items():
        made[alias] = made[name]
    return made


DTYPES = _make_all()
SCALAR_NAMES = [n for n in _C.scalar_type_names() if n not in _INTERNAL]


def lookup(name):
    """`T.<name>` for dtype names, including lane variants such as float16x8."""
    if name in DTYPES:
        return DTYPES[name]
    base, sep, lanes = name.rpartition("x")
    if sep and lanes.isdigit() and (base in DTYPES) and DTYPES[base] != _UNPACKED_FP4:
        made = DTYPES[base].with_lanes(builtins.int(lanes))
        DTYPES[name] = made
        return made
    return None


def is_float4_e2m1fn(value):
    """Whether `value` names packed fp4 (float4_e2m1fn, any lanes)."""
    return dtype(value).is_float4_e2m1fn()


def is_float4_e2m1_unpacked(value):
    """Whether `value` names float4_e2m1_unpacked (TileLang's sm_100 shared-memory tag)."""
    return dtype(value).is_float4_e2m1_unpacked()


def is_float4(value):
    """Whether `value` names either fp4 variant."""
    return dtype(value).is_float4()


def is_dtype_like(value):
    """True for objects that name a dtype (strings that parse, dtypes, numpy/torch dtypes)."""
    if isinstance(value, dtype):
        return True
    try:
        dtype(value)
    except (TypeError, ValueError):
        return False
    return True


def resolve_torch_storage_dtype(value):
    """The dtype of the torch tensors that hold `value`'s data (int4 → int8, float4 →
    packed float4_e2m1fn_x2 where torch has it, else int8): dtype(value.as_torch())."""
    import torch

    value = dtype(value)
    if value._core.torch_name == "float4_e2m1fn_x2":
        if not hasattr(torch, "float4_e2m1fn_x2"):
            return dtype("int8")
        return dtype("float4_e2m1fn").with_lanes(2)  # two values a byte
    return dtype(value.as_torch())


def _torch_dtype_to_str():
    """{torch dtype: dtype name} for every torch dtype a T dtype names (TileLang's
    _TORCH_DTYPE_TO_STR); built on first use so that importing T needs no torch."""
    import torch

    table = {}
    for name in SCALAR_NAMES:
        try:
            torch_dtype = dtype(name).as_torch()
        except (ValueError, TypeError):
            continue
        if dtype(torch_dtype) == name:  # int4 is stored as int8, which keeps its name
            table[torch_dtype] = name
    for torch_name, name in (("half", "float16"), ("float", "float32"), ("double", "float64")):
        table[getattr(torch, torch_name)] = name
    return table


def _every_dtype_name():
    """Every dtype name T offers as an attribute: the scalar types, their aliases, and
    vectors of 2 to 64 lanes of the integer and floating types of 8 bits or more."""
    names = list(DTYPES)
    for name in SCALAR_NAMES:
        if name not in ("bool", _UNPACKED_FP4) and DTYPES[name].bits >= 8:
            names += [f"{name}x{lanes}" for lanes in (2, 4, 8, 16, 32, 64)]
    return names


_all_dtypes = _every_dtype_name()


def __getattr__(name):
    if name == "_TORCH_DTYPE_TO_STR":
        table = globals()[name] = _torch_dtype_to_str()
        return table
    found = lookup(name)
    if found is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return found


globals().update({k: v for k, v in DTYPES.items() if k not in ALIASES})
