"""Python handles for buffers: `A[i, j]` loads, `A[i, j] = v` stores, `A[a:b, :]` regions
for tile ops, `A.shape` / `A.dtype`. Scalars made by `T.alloc_var` also act as values."""

from __future__ import annotations

import abc
import operator
from typing import Any

from tilelang.types import BufferLike, ExprLike, ShapeLike

from . import builder_ctx
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C


class ExprStandIn(abc.ABC):
    """An object a kernel reads as the expression its __tl_expr__ gives (T.Shuffle of
    TVM's IR, which says there why it has none)."""

    __slots__ = ()

    @abc.abstractmethod
    def __tl_expr__(self):
        """The expression the object stands for in a kernel."""


def to_value(x):
    """Unwraps objects that stand for an expression (alloc_var scalars) into the Expr."""
    return x.__tl_expr__() if isinstance(x, (VarBuffer, ExprStandIn)) else x


# A Python float literal is a float32 constant (as in TileLang) unless stored into a
# wider dtype: one beyond float32's largest finite value is refused there. (Narrower
# dtypes convert a float32 value as IEEE does: 70000.0 into float16 is inf.)
_FLOAT32_MAX = 3.4028234663852886e38


def check_float_literal(value, dtype, what):
    """A Python float stored into a float dtype of 32 bits or fewer must fit float32 (inf
    and NaN do)."""
    if str(dtype) not in ("float32", "float16", "bfloat16") or not isinstance(value, float):
        return
    if _FLOAT32_MAX < abs(value) < float("inf"):
        raise frontend_error(
            f"{what}: the literal {value!r} exceeds maximum of float32 ({_FLOAT32_MAX:g}), the "
            f"type of float literals stored into {dtype}; write T.infinity(dtype) for an "
            "infinity, or use a float64 buffer"
        )


def const_int(x):
    """The Python int of a constant integer (Python int or constant Expr), else None."""
    if isinstance(x, int) and not isinstance(x, bool):
        return x
    if isinstance(x, _C.Expr):
        v = x.const_value()
        return v if isinstance(v, int) and not isinstance(v, bool) else None
    return None


class BufferData:
    """`buf.data`: a buffer's storage, as `T.Tensor(shape, dtype, buf.data)` takes it to
    make a view (see views.py)."""

    __slots__ = ("buffer",)

    def __init__(self, buffer):
        self.buffer = buffer

    def __repr__(self):
        return f"{self.buffer.name}.data"


class Region:
    """A rectangular part of a buffer: per-dimension starts and extents (from a slice)."""

    __slots__ = ("buffer", "extents", "mins")

    def __init__(self, buffer: BufferLike, mins: ShapeLike, extents: ShapeLike) -> None:
        self.buffer = buffer
        self.mins = list(mins)
        self.extents = list(extents)

    def to_core(self) -> Any:
        return _C.BufferRegion(self.buffer.handle, self.mins, self.extents)

    @property
    def shape(self) -> Any:
        return tuple(self.extents)

    @property
    def dtype(self) -> Any:
        return self.buffer.dtype

    def __repr__(self):
        ranges = ", ".join(f"{m}:{m} + {e}" for m, e in zip(self.mins, self.extents))
        return f"{self.buffer.name}[{ranges}]"


class Buffer:
    """A tensor parameter or an on-chip allocation of the kernel being traced."""

    __slots__ = ("dtype", "handle", "name", "scope", "shape")

    def __init__(self, handle: BufferLike) -> None:
        self.handle = handle
        self.name = handle.name
        self.dtype = make_dtype(handle.dtype.name)
        self.scope = handle.scope
        shape = []
        for dim in handle.shape:
            value = const_int(dim)
            shape.append(dim if value is None else value)
        self.shape = tuple(shape)

    @property
    def ndim(self) -> Any:
        return len(self.shape)

    @property
    def strides(self) -> Any:
        """The declared strides in elements (a T.StridedTensor's), constants as ints; empty
        for a compact row-major buffer, as TVM's Buffer.strides."""
        return tuple(
            dim if const_int(dim) is None else const_int(dim) for dim in self.handle.strides
        )

    @property
    def data(self) -> Any:
        return BufferData(self)

    def __repr__(self):
        return (
            f"Buffer({self.name}, shape={list(self.shape)}, dtype={self.dtype}, scope={self.scope})"
        )

    def full_region(self) -> Any:
        return Region(self, [0] * self.ndim, self.shape)

    def _normalize_index(self, index, dim):
        """A negative constant index counts from the end of the dimension, as in Python."""
        index = to_value(index)
        value = const_int(index)
        if value is not None and value < 0:
            return self.shape[dim] + value
        return index

    def _split_key(self, key):
        """Returns (indices, region or None) for a subscript key."""
        key = key if isinstance(key, tuple) else (key,)
        if len(key) > self.ndim:
            raise frontend_error(
                f"buffer '{self.name}' has {self.ndim} dimension(s) but is indexed with {len(key)}"
            )
        has_slice = len(key) < self.ndim or any(isinstance(k, slice) for k in key)
        if not has_slice:
            return [self._normalize_index(k, d) for d, k in enumerate(key)], None
        mins, extents = [], []
        for d in range(self.ndim):
            k = key[d] if d < len(key) else slice(None)
            if isinstance(k, slice):
                lo, ext = self._slice_range(k, d)
            else:
                lo, ext = self._normalize_index(k, d), 1
            mins.append(lo)
            extents.append(ext)
        return None, Region(self, mins, extents)

    def _slice_range(self, s, dim):
        if s.step not in (None, 1):
            raise frontend_error(
                f"slices of buffer '{self.name}' must have step 1, got {s.step}",
                also=RuntimeError,
            )
        lo = 0 if s.start is None else self._normalize_index(s.start, dim)
        hi = self.shape[dim] if s.stop is None else self._normalize_index(s.stop, dim)
        lo_c, hi_c = const_int(lo), const_int(hi)
        if lo_c is not None and hi_c is not None:
            return lo_c, hi_c - lo_c
        return lo, hi - lo

    def elem_offset_of(self, indices: ShapeLike) -> Any:
        """The row-major element offset of `indices` (TVM's Buffer.elem_offset_of)."""
        indices = list(indices) if isinstance(indices, (list, tuple)) else [indices]
        if len(indices) != self.ndim:
            raise frontend_error(
                f"buffer '{self.name}' has {self.ndim} dimension(s); elem_offset_of got "
                f"{len(indices)} index(es)"
            )
        offset = 0
        for index, extent in zip(indices, self.shape):
            offset = offset * extent + index
        return offset

    def access_ptr(
        self,
        access_mask: Any = "r",
        ptr_type: str = "handle",
        content_lanes: ExprLike = 1,
        offset: ExprLike = 0,
        extent: ExprLike | None = None,
    ) -> Any:
        """The address of the buffer's data (plus `offset` elements) for T.call_extern,
        as TVM's Buffer.access_ptr; see T.access_ptr."""
        from .math import access_ptr  # math imports this module: imported here

        del ptr_type, content_lanes  # the address has the element type either way
        return access_ptr(self, access_mask, extent=extent, offset=offset)

    def __getitem__(self, key):
        from .vector import load_indexed  # vector imports this module

        lanes = load_indexed(self, key)
        if lanes is not None:
            return lanes
        indices, region = self._split_key(key)
        if region is not None:
            return region
        ctx = builder_ctx.current(f"indexing buffer '{self.name}'")
        load = _C.buffer_load(self.handle, indices)
        ctx.remember_load(load, self, indices)
        return load

    def __setitem__(self, key, value):
        from .vector import (  # vector imports this module
            LaneVector,
            store_indexed,
            store_lanes,
            store_region,
        )

        if isinstance(value, Region):
            store_region(self, key, value)
            return
        if store_indexed(self, key, value):
            return
        indices, region = self._split_key(key)
        ctx = builder_ctx.current(f"storing into buffer '{self.name}'")
        check_float_literal(value, self.dtype, f"storing into buffer '{self.name}'")
        if region is not None:
            if isinstance(value, LaneVector):
                store_lanes(region, value)
                return
            ctx.builder.fill(region.to_core(), to_value(value))
            return
        ctx.builder.store(self.handle, indices, to_value(value))

    def __iter__(self):
        raise TypeError(f"buffer '{self.name}' is not iterable; index it or use T.Parallel")


def _forward(op, reflected=False):
    def method(self, other):
        a, b = self.__tl_expr__(), to_value(other)
        return op(b, a) if reflected else op(a, b)

    return method


def _forward_unary(op):
    def method(self):
        return op(self.__tl_expr__())

    return method


class _PrimExprCheck(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (_C.Expr, VarBuffer))

    def __subclasscheck__(cls, sub):
        return isinstance(sub, type) and issubclass(sub, (_C.Expr, VarBuffer))


class PrimExpr(metaclass=_PrimExprCheck):
    """`T.PrimExpr` / `tvm.tirx.PrimExpr` as an isinstance check: an expression, or a
    `T.alloc_var` scalar (which reads as its value, as TileLang's variable does where a
    macro returns one)."""


class VarBuffer(Buffer):
    """A `T.alloc_var` scalar: reads as its value; assigning its Python name stores into it."""

    __slots__ = ()

    def __tl_expr__(self):
        ctx = builder_ctx.current(f"reading '{self.name}'")
        load = _C.buffer_load(self.handle, [0])
        ctx.remember_load(load, self, [0])
        return load

    def store(self, value: ExprLike) -> None:
        check_float_literal(value, self.dtype, f"assigning '{self.name}'")
        builder_ctx.current(f"assigning '{self.name}'").builder.store(
            self.handle, [0], to_value(value)
        )

    def __getitem__(self, key):
        if key == 0 or key == (0,):
            return self.__tl_expr__()
        return Buffer.__getitem__(self, key)

    def __bool__(self):
        return bool(self.__tl_expr__())

    def __index__(self):
        return operator.index(self.__tl_expr__())


_BINARY = {
    "add": operator.add,
    "sub": operator.sub,
    "mul": operator.mul,
    "truediv": operator.truediv,
    "floordiv": operator.floordiv,
    "mod": operator.mod,
    "pow": operator.pow,
    "and": operator.and_,
    "or": operator.or_,
    "xor": operator.xor,
    "lshift": operator.lshift,
    "rshift": operator.rshift,
}
for _name, _op in _BINARY.items():
    setattr(VarBuffer, f"__{_name}__", _forward(_op))
    setattr(VarBuffer, f"__r{_name}__", _forward(_op, reflected=True))
for _name, _op in {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
}.items():
    setattr(VarBuffer, f"__{_name}__", _forward(_op))
for _name, _unary in {
    "neg": operator.neg,
    "pos": operator.pos,
    "invert": operator.invert,
    "abs": operator.abs,
}.items():
    setattr(VarBuffer, f"__{_name}__", _forward_unary(_unary))
VarBuffer.__hash__ = object.__hash__  # type: ignore[assignment,method-assign]


def wrap_buffer(handle):
    """The Python handle for a core buffer (VarBuffer for `local.var` scalars)."""
    return VarBuffer(handle) if handle.scope == "local.var" else Buffer(handle)
