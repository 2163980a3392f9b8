"""Parameter annotations and symbolic sizes: `T.Tensor(shape, dtype)`, `T.dynamic("m")`
(one kernel for every value, bound from argument shapes at call time), `T.const("M, N")`
(eager kernels specialized per value) and `T.empty` (an eager kernel's output)."""

from __future__ import annotations

from typing import Any

from tilelang.types import DTypeLike, ShapeLike

from . import builder_ctx
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype
from .pointers import POINTER_STORAGE, PointerType

_C = builder_ctx._C


def _names(spec):
    names = [n.strip() for n in spec.replace(",", " ").split()]
    if not names or not all(n.isidentifier() for n in names):
        raise ValueError(f"expected names such as 'm' or 'm, n', got {spec!r}")
    return names


def _shape_tuple(shape):
    if isinstance(shape, (list, tuple)):
        return tuple(shape)
    return (shape,)


class TensorAnnotation:
    """The type of a tensor parameter: `A: T.Tensor((M, K), T.float16)`."""

    def __init__(self, shape, dtype="float32", strides=None):
        self.shape = _shape_tuple(shape)
        # A table of pointers (`T.Tensor((G,), T.ptr)`) holds 64-bit addresses.
        self.dtype = make_dtype(POINTER_STORAGE if isinstance(dtype, PointerType) else dtype)
        self.strides = None if strides is None else _shape_tuple(strides)

    def __repr__(self):
        return f"T.Tensor({self.shape}, {self.dtype})"

    def declare(self, builder, name):
        return builder.tensor_param(
            name, list(self.shape), self.dtype, None if self.strides is None else list(self.strides)
        )


class _TensorType:
    """`T.Tensor((M, K), dtype)` or `T.Tensor[(M, K), dtype]`: a parameter annotation;
    with `data` (e.g. `A.data`) inside a kernel, a view of that buffer's elements with
    a new shape (see views.py)."""

    def __call__(self, shape, dtype="float32", data=None, strides=None):
        if data is not None:
            from .views import make_view

            return make_view(shape, dtype, data)
        return TensorAnnotation(shape, dtype, strides)

    def __getitem__(self, key):
        # TileLang's rule: subscripts that are all sizes are the shape (dtype float32):
        # T.Tensor[(N,)] and T.Tensor[M, K]; otherwise (shape, dtype).
        if not isinstance(key, tuple):
            key = (key,)
        if all(not isinstance(k, (tuple, list, str)) for k in key):
            key = (key,)
        if len(key) > 2:
            raise frontend_error(
                f"T.Tensor[...] takes a shape and a dtype, as T.Tensor[(M, K), T.float16]; got {key!r}"
            )
        return self(*key)

    def __repr__(self):
        return "T.Tensor"


Tensor = _TensorType()
Buffer = Tensor
# Annotations of T.macro parameters that name the memory a tile lives in; a macro
# takes the buffer it is given, so they document rather than convert.
SharedBuffer = FragmentBuffer = LocalBuffer = SharedTensor = LocalTensor = Tensor


class _StridedTensorType:
    """`T.StridedTensor((M, N), (sM, sN), dtype)` or `T.StridedTensor[(M, N), (sM, sN),
    dtype]`: a tensor parameter with the given element strides."""

    def __call__(self, shape, strides, dtype="float32"):
        return TensorAnnotation(shape, dtype, strides)

    def __getitem__(self, key):
        if not isinstance(key, tuple) or len(key) != 3:
            raise frontend_error(
                "T.StridedTensor[...] takes a shape, strides and a dtype, as "
                f"T.StridedTensor[(M, N), (N, 1), T.float16]; got {key!r}"
            )
        return self(*key)

    def __repr__(self):
        return "T.StridedTensor"


StridedTensor = _StridedTensorType()


def dynamic(names: ShapeLike, dtype: DTypeLike = "int32") -> Any:
    """Symbolic dimensions: one Var for 'm', a tuple for 'm, n'."""
    dt = make_dtype(dtype)
    if not dt.is_int():
        raise ValueError(f"T.dynamic({names!r}) needs an integer dtype, got {dt}")
    made = tuple(_C.Var(n, dt) for n in _names(names))
    return made[0] if len(made) == 1 else made


symbolic = dynamic


def const(names: ShapeLike, dtype: DTypeLike = "int32") -> Any:
    """Eager-mode compile-time sizes, bound from argument shapes or `fn.compile(M=...)`."""
    ctx = builder_ctx.current("T.const")
    if ctx.mode == "prim_func":
        raise frontend_error(
            "T.const is for eager @tilelang.jit functions; use T.dynamic in a T.prim_func"
        )
    made = []
    for n in _names(names):
        if ctx.const_values is not None and n in ctx.const_values:
            made.append(ctx.const_values[n])
            continue
        var = _C.Var(n, make_dtype(dtype))
        ctx.const_vars[n] = var
        made.append(var)
    return made[0] if len(made) == 1 else tuple(made)


class EmptyDecl:
    """`T.empty(shape, dtype)`: an output, declared when assigned to a name."""

    def __init__(self, shape, dtype):
        self.annotation = TensorAnnotation(shape, dtype)


def empty(*shape: Any, dtype: DTypeLike = "float32") -> EmptyDecl:
    """`B = T.empty(shape, dtype)` (or `T.empty(M, N, dtype=...)`): an output the call
    allocates and the function returns (`return B`)."""
    builder_ctx.current("T.empty")
    if len(shape) >= 2 and isinstance(shape[-1], str):
        shape, dtype = shape[:-1], shape[-1]  # T.empty((M, N), dtype)
    if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
        shape = shape[0]  # type: ignore[assignment]
    if not shape:
        raise frontend_error("T.empty needs a shape, e.g. T.empty((M, N), T.float32)")
    return EmptyDecl(list(shape), dtype)
