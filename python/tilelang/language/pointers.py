"""Pointer parameters: `a_ptr: T.ptr` (or `T.handle`) in a T.prim_func's signature,
made a tensor in the body by `A = T.make_tensor(a_ptr, (m, k), T.float16)` (or TileLang's
`T.match_buffer(a_ptr, shape, dtype)`). The parameter becomes a tensor parameter of that
shape and dtype that also accepts an integer address: a tensor passed for it is checked
like any tensor argument (dtype, shape, device, writability where the kernel writes it);
an address is trusted. `T.Tensor(shape, T.ptr)` is a tensor of 64-bit addresses.
docs/design/pointer_params.md has the design."""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, DTypeLike, ShapeLike

from . import builder_ctx
from .buffer import Buffer, to_value, wrap_buffer
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C

# The element type of a table of pointers (`T.Tensor((G,), T.ptr)`): TileLang lowers it
# to a buffer of int64 addresses.
POINTER_STORAGE = "int64"


class PointerType:
    """`T.ptr` / `T.handle`: the annotation of a pointer parameter, and as a dtype, the
    64-bit address an element of a table of pointers holds. Called, as TileLang writes
    `T.ptr()` or `T.handle("float16")`, it gives the same annotation."""

    def __init__(self, spelling, dtype=None, storage_scope="global"):
        self.spelling = spelling
        self.dtype = None if dtype is None else make_dtype(dtype)
        self.storage_scope = storage_scope

    def __call__(self, dtype=None, storage_scope="global", *, is_size_var=False):
        del is_size_var  # TVM's SizeVar flag: an address is never a size
        return PointerType(self.spelling, dtype, storage_scope)

    def __repr__(self):
        return f"T.{self.spelling}"


ptr = PointerType("ptr")
handle = PointerType("handle")


class PointerParam:
    """What a pointer parameter holds while its T.prim_func is traced: the body makes it
    a tensor with T.make_tensor; any other use is an error naming it."""

    def __init__(self, name, func_name, annotation):
        self.name = name
        self.func_name = func_name
        self.annotation = annotation
        self.buffer = None  # the tensor T.make_tensor made of it

    def _error(self, *_, **__):
        raise frontend_error(
            f"parameter '{self.name}' of T.prim_func '{self.func_name}' is a pointer "
            f"({self.annotation!r}); make it a tensor first: "
            f"`A = T.make_tensor({self.name}, shape, dtype)`"
        )

    __getitem__ = __setitem__ = __getattr__ = __call__ = __iter__ = __len__ = _error
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __bool__ = _error

    def __repr__(self):
        return f"<pointer parameter '{self.name}'>"


def check_all_made(ctx, func_name):
    """At the end of a trace: every pointer parameter was made a tensor. `func_name`
    names the function as its errors do ("T.prim_func 'f'", or the eager function's
    name in quotes)."""
    for name, value in ctx.params:
        if isinstance(value, PointerParam):
            raise frontend_error(
                f"pointer parameter '{name}' of {func_name} is never made a tensor; the "
                f"body makes it one with `T.make_tensor({name}, shape, dtype)`"
            )


def _shape_list(shape):
    return list(shape) if isinstance(shape, (list, tuple)) else [shape]


def _same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if isinstance(x, int) and isinstance(y, int):
            if x != y:
                return False
        elif not (hasattr(x, "same_as") and x.same_as(y)) and x is not y:
            return False
    return True


class AddressTensor:
    """A tensor at an address read inside the kernel: `T.make_tensor(ptrs[bx], (N,),
    dtype)` over a table of pointers. Its elements are read and written one at a time
    (`X[i, j]`, `X[i, j] = v`, and T.copy to or from it, element by element in a parallel
    loop, predicated by its shape), each through the address (tl::load_at / tl::store_at
    of the device headers); nothing can check the address, the extent or the dtype of the
    memory behind it, which the caller vouches for as for an address argument. Other
    tile operations and slices of it are refused."""

    def __init__(self, address, shape, dtype, strides, what):
        self.address = address
        self.shape = shape
        self.dtype = dtype
        self.ndim = len(shape)
        if strides is None:
            strides, step = [], 1
            for extent in reversed(shape):
                strides.insert(0, step)
                step = step * extent
        self.strides = list(strides)
        self.what = what

    @property
    def name(self):
        return f"T.make_tensor({self.address}, ...)"

    def _offset(self, indices):
        offset = None
        for index, stride in zip(indices, self.strides):
            term = _C.binary(
                "Mul", _C.cast(to_value(index), "int64"), _C.cast(to_value(stride), "int64")
            )
            offset = term if offset is None else _C.binary("Add", offset, term)
        return offset

    def _indices(self, key):
        key = key if isinstance(key, tuple) else (key,)
        if len(key) != self.ndim or any(isinstance(k, slice) for k in key):
            raise frontend_error(
                f"a tensor made by {self.what} of an address takes {self.ndim} indices (one "
                f"element, or a start point of T.copy), got {key!r}; slices of it are not supported"
            )
        return [to_value(k) for k in key]

    def load(self, indices):
        like = _C.cast(to_value(0), self.dtype)
        return _C.call_extern(
            self.dtype, "tl::load_at", [self.address, self._offset(indices), like]
        )

    def store(self, ctx, indices, value):
        value = _C.cast(to_value(value), self.dtype)
        call = _C.call_extern(
            make_dtype("void"), "tl::store_at", [self.address, self._offset(indices), value]
        )
        ctx.builder.evaluate(call)

    def in_bounds(self, indices):
        """The condition that `indices` lie inside the shape (T.copy predicates by it)."""
        cond = True
        for i, n in zip(indices, self.shape):
            term = _C.logical_and(i >= 0, i < n)
            cond = term if cond is True else _C.logical_and(cond, term)
        return cond

    def __getitem__(self, key):
        indices = self._indices(key)
        value = self.load(indices)
        ctx = builder_ctx.current("a load through an address")
        ctx.remember_load(value, self, indices)  # T.copy takes it as a start point
        return value

    def __setitem__(self, key, value):
        ctx = builder_ctx.current("a store through an address")
        self.store(ctx, self._indices(key), value)

    def __repr__(self):
        return f"<tensor at address {self.address} of shape {tuple(self.shape)}, {self.dtype}>"


def _address_tensor(address, shape, dtype, strides, what):
    value = to_value(address)
    dt = getattr(value, "dtype", None)
    if dt is None or dt.name not in ("int64", "uint64"):
        raise frontend_error(
            f"{what} takes a pointer parameter (`a_ptr: T.ptr`) or a 64-bit address read in the "
            f"kernel (an element of a T.Tensor(..., T.ptr) table), got {address!r}"
        )
    builder_ctx.current(what)
    return AddressTensor(value, _shape_list(shape), make_dtype(dtype), strides, what)


def _tensor_of(pointer, shape, dtype, strides, what):
    if not isinstance(pointer, PointerParam):
        if isinstance(pointer, PointerType):
            raise frontend_error(
                f"{what} takes a pointer parameter of the kernel (`a_ptr: T.ptr` in its "
                f"signature), got the annotation {pointer!r} itself"
            )
        return _address_tensor(pointer, shape, dtype, strides, what)
    ctx = builder_ctx.current(what)
    shape = _shape_list(shape)
    dt = make_dtype(dtype)
    if pointer.buffer is not None:
        old = pointer.buffer
        if old.dtype == dt and _same(list(old.shape), shape) and strides is None:
            return old
        raise frontend_error(
            f"{what}: pointer parameter '{pointer.name}' was already made a tensor of shape "
            f"{tuple(old.shape)} and dtype {old.dtype}; a pointer parameter makes one tensor "
            "(take views of it with T.view or slices)"
        )
    if ctx.builder.in_kernel:
        # Its shape becomes the parameter's, which the runtime checks before the launch:
        # it may name scalar parameters and symbolic sizes, never a block or thread index.
        raise frontend_error(
            f"{what}({pointer.name}, ...) is inside a `with T.Kernel(...)` block; make the "
            "tensor of a pointer parameter before the kernel (its shape is part of the "
            "kernel's signature)"
        )
    strides = None if strides is None else _shape_list(strides)
    core = ctx.builder.tensor_param(pointer.name, shape, dt, strides, address=True)
    pointer.buffer = wrap_buffer(core)
    ctx.params = [(n, pointer.buffer if v is pointer else v) for n, v in ctx.params]
    return pointer.buffer


def make_tensor(
    ptr: BufferLike,
    shape: ShapeLike,
    dtype: DTypeLike = "float32",
    strides: ShapeLike | None = None,
) -> Buffer:
    """`T.make_tensor(a_ptr, (m, k), T.float16)`: the tensor at pointer parameter
    `a_ptr`. The parameter then takes a tensor of that shape and dtype (checked as
    any tensor argument) or an integer address such as `x.data_ptr()` (trusted)."""
    return _tensor_of(ptr, shape, dtype, strides, "T.make_tensor")


def match_buffer(
    param: BufferLike,
    shape: ShapeLike,
    dtype: DTypeLike = "float32",
    data: BufferLike | None = None,
    strides: ShapeLike | None = None,
    elem_offset: Any = None,
    scope: str = "global",
    align: Any = -1,
    offset_factor: Any = 0,
    buffer_type: Any = "default",
    axis_separators: Any = None,
) -> Buffer:
    """TVM's `A = T.match_buffer(a_handle, shape, dtype)` of a `T.handle` parameter:
    T.make_tensor under TVM's name. Arguments that change the memory the buffer
    describes (data, elem_offset, a scope other than global) are refused by name."""
    del align, offset_factor, buffer_type  # alignment hints: a tensor argument is checked anyway
    for name, value, default in (
        ("data", data, None),
        ("elem_offset", elem_offset, None),
        ("axis_separators", axis_separators, None),
    ):
        if value is not default:
            raise frontend_error(f"T.match_buffer: {name}= is not supported (got {value!r})")
    if scope != "global":
        raise frontend_error(
            f"T.match_buffer: a pointer parameter is global memory; scope={scope!r} is not supported"
        )
    return _tensor_of(param, shape, dtype, strides, "T.match_buffer")
