"""TVM's cross-thread reduction, as TileLang's TVM-style kernels write it:

    with T.attr(T.comm_reducer(lambda x, y: x + y, [T.Cast("float32", 0)]),
                "reduce_scope", T.reinterpret(T.uint64(0), dtype="handle")):
        T.evaluate(T.tvm_thread_allreduce(T.uint32(1), acc[0], True, out[0], tk, dtype="handle"))

Every thread gets in `out` the reducer's combination of `acc` over the threads that
differ from it only along the named thread bindings (`tk`). It is built here from what
the rest of the language has: each thread stores its value into a shared scratch row
indexed by its rank, and after the block barrier (which plan_barriers places, as for any
thread-level shared write and read) each thread combines its group's values: for a
group of 2 to 32 threads along one binding (a power of two) in the order of TVM's
shuffle-down tree, so that float16 / bfloat16 sums and products round as TileLang's do,
else in order. That is correct on every target; it suits reductions over tens of
threads, not a hot inner loop."""

from __future__ import annotations

from typing import Any, Callable

from tilelang.types import DTypeLike, Expr, ExprLike

from .. import _C
from . import builder_ctx
from .buffer import const_int, to_value
from .builder_ctx import frontend_error
from .loops import serial
from .ops import alloc_local, alloc_shared
from .warp import _linear_thread_index

__all__ = ["comm_reducer", "tvm_thread_allreduce"]

# The reducers of the enclosing `with T.attr(reducer, "reduce_scope", ...)` blocks.
_active: list = []


class comm_reducer:
    """`T.comm_reducer(combine, [identity])`: a commutative reducer of one value;
    `combine(x, y)` is applied to expressions, `identity` is its neutral element."""

    def __init__(self, combine: Callable[..., Any], identity: ExprLike) -> None:
        if not callable(combine):
            raise frontend_error(
                f"T.comm_reducer: combine must be a function of two values, got {combine!r}"
            )
        identity = list(identity) if isinstance(identity, (list, tuple)) else [identity]
        if len(identity) != 1:
            raise frontend_error(
                f"T.comm_reducer: only reducers of one value are supported; got {len(identity)} identities"
            )
        self.combine, self.identity = combine, identity[0]


class _Handle:
    """`T.reinterpret(T.uint64(0), dtype="handle")`: the null handle TVM's reduce_scope takes."""

    def __repr__(self):
        return "T.handle(0)"


NULL_HANDLE = _Handle()


class _Done:
    """What T.tvm_thread_allreduce returns: its statements are emitted already, and
    T.evaluate of it adds nothing."""


DONE = _Done()


def tvm_thread_allreduce(size: ExprLike, *args: Any, dtype: DTypeLike = "handle") -> Expr:
    what = "T.tvm_thread_allreduce"
    ctx = builder_ctx.current(what)
    if const_int(to_value(size)) != 1:
        raise frontend_error(
            f"{what}: only one value per reduction is supported; got size={size!r}"
        )
    if not _active:
        raise frontend_error(
            f'{what} needs an enclosing `with T.attr(T.comm_reducer(...), "reduce_scope", ...)` '
            "that names the reducer"
        )
    if len(args) < 4:
        raise frontend_error(
            f"{what}(size, value, cond, out, *thread_bindings): expected at least 4 arguments after size, "
            f"got {len(args)}"
        )
    reducer = _active[-1]
    value, cond, out, axes = to_value(args[0]), to_value(args[1]), args[2], args[3:]
    target = ctx.element_of(to_value(out)) if isinstance(to_value(out), _C.Expr) else None
    if target is None:
        raise frontend_error(f"{what}: out must be one buffer element such as red[0]; got {out!r}")
    threads = list(ctx.kernel_vars.threads)
    extents = [const_int(e) for e in ctx.kernel_extents[1]]
    strides, stride = [], 1
    for e in extents:
        strides.append(stride)
        stride *= e
    dims = []
    for axis in axes:
        found = [d for d, v in enumerate(threads) if isinstance(axis, _C.Expr) and v.same_as(axis)]
        if not found:
            raise frontend_error(
                f"{what}: reduction axes must be the kernel's thread bindings (T.get_thread_binding(d)); got {axis!r}"
            )
        dims.append(found[0])
    dtype_ = value.dtype if isinstance(value, _C.Expr) else None
    if dtype_ is None:
        raise frontend_error(f"{what}: value must be an expression of the kernel; got {value!r}")
    identity = _C.cast(to_value(reducer.identity), dtype_)
    if cond is not True and not (isinstance(cond, _C.Expr) and const_int(cond) == 1):
        value = _C.select(to_value(cond), value, identity)
    scratch = alloc_shared((stride,), dtype_, scope="shared")
    rank = _linear_thread_index(ctx)
    scratch[rank] = value
    base = rank
    for d in dims:
        base = base - threads[d] * strides[d]
    from .hooks import for_  # (hooks imports the language's modules)

    acc = alloc_local((1,), dtype_)
    count = 1
    for d in dims:
        count *= extents[d]
    if len(dims) == 1 and 1 < count <= 32 and count & (count - 1) == 0:
        # A warp's worth: combined in the order of TVM's shuffle-down tree (offsets
        # count / 2, ..., 1; lane 0's value), so that float16 / bfloat16 results round as
        # TileLang's do on the GPU.
        step = strides[dims[0]]
        vals = alloc_local((count,), dtype_)
        for k in for_(serial(count), ["red0"]):
            vals[k] = scratch[base + k * step]
        offset = count // 2
        while offset:
            for k in range(offset):
                vals[k] = to_value(reducer.combine(vals[k], vals[k + offset]))
            offset //= 2
        acc[0] = vals[0]
    else:
        acc[0] = identity

        def gather(i, offset):
            if i == len(dims):
                acc[0] = to_value(reducer.combine(acc[0], scratch[base + offset]))
                return
            for k in for_(serial(extents[dims[i]]), [f"red{i}"]):
                gather(i + 1, offset + k * strides[dims[i]])

        gather(0, 0)
    buf, idx = target
    buf[tuple(idx)] = acc[0]
    return DONE
