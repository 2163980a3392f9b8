"""Atomics (`T.atomic_add`, `atomic_max`, `atomic_min`, `atomic_load`, `atomic_store`).

On one element (`T.atomic_add(C[i, j], v)`) an atomic is an expression: a call of
`tl::atomic_<op><order>` in the device header, so `return_prev=True` can hand back the
previous value. On a region (`T.atomic_add(C[0:32, :], C_local)`) it is the C++ "atomic"
tile op, which matches extents the way T.copy does. Blocks run concurrently on every
target (on the CPU, on parallel OS threads), so these are real atomics everywhere.
"""

from __future__ import annotations

import math

from tilelang.types import BufferLike, Expr, ExprLike

from . import builder_ctx
from .buffer import Buffer, Region, VarBuffer, const_int, to_value
from .builder_ctx import frontend_error
from .views import BufferView

_C = builder_ctx._C

# TileLang's memory-order names; the numbers are also GCC's __ATOMIC_* constants.
MEMORY_ORDERS = {"relaxed": 0, "consume": 1, "acquire": 2, "release": 3, "acq_rel": 4, "seq_cst": 5}


def _order(memory_order, what, allowed=tuple(MEMORY_ORDERS)):
    if memory_order is None:
        return MEMORY_ORDERS["relaxed"]
    if memory_order not in allowed:
        if len(allowed) < len(MEMORY_ORDERS):  # TileLang's wording for loads and stores
            raise frontend_error(
                f"{what} does not support memory_order {memory_order!r}; use one of "
                f"{', '.join(allowed)}"
            )
        raise frontend_error(
            f"{what} memory_order must be one of {', '.join(allowed)}, got {memory_order!r}"
        )
    return MEMORY_ORDERS[memory_order]


def _element(ctx, x):
    """(buffer, indices) when `x` is one element (`C[i, j]`, an alloc_var, a 1-element buffer)."""
    if isinstance(x, VarBuffer):
        return x, [0]
    if isinstance(x, Buffer) and all(const_int(s) == 1 for s in x.shape):
        return x, [0] * x.ndim
    if isinstance(x, _C.Expr):  # a load such as C[i, j], remembered by the trace
        return ctx.element_of(x)
    return None


def _check_dtype(buffer, what):
    dt = buffer.dtype
    if not (dt.is_float() or dt.is_int()) or dt.lanes != 1 or dt.bits not in (8, 16, 32, 64):
        raise frontend_error(
            f"{what} cannot update '{buffer.name}' of dtype {dt}; atomics need an integer or "
            "floating dtype of 8, 16, 32 or 64 bits"
        )


def _in_bounds(buffer, indices):
    """The condition that `indices` lie inside a global `buffer` (None when not needed)."""
    if buffer.scope != "global":
        return None
    cond = None
    for i, n in zip(indices, buffer.shape):
        ci, cn = const_int(i), const_int(n)
        if ci is not None and cn is not None and 0 <= ci < cn:
            continue
        term = _C.logical_and(_C.binary("GE", i, 0), _C.binary("LT", i, n))
        cond = term if cond is None else _C.logical_and(cond, term)
    return cond


# The device call of each kind (src/ir/device_calls.def), its template argument the
# memory order.
_DEVICE_CALLS = {
    "add": "tl::atomic_add",
    "max": "tl::atomic_max",
    "min": "tl::atomic_min",
    "and": "tl::atomic_and",
    "or": "tl::atomic_or",
    "xor": "tl::atomic_xor",
    "load": "tl::atomic_load",
    "store": "tl::atomic_store",
}


def _element_call(buffer, indices, kind, order, args):
    """`tl::atomic_<kind><order>(&buffer[indices], args...)`, 0 where the element lies
    outside."""
    load = _C.buffer_load(buffer.handle, indices)
    call = _C.call_extern(
        buffer.dtype, f"{_DEVICE_CALLS[kind]}<{order}>", [_C.call("address_of", [load]), *args]
    )
    return call, _in_bounds(buffer, indices)


def _emit(ctx, call, cond):
    if cond is None:
        ctx.builder.evaluate(call)
        return
    ctx.builder.begin_if(cond)
    ctx.builder.evaluate(call)
    ctx.builder.end_if()


def _as_region(x):
    if isinstance(x, Region):
        return x
    if isinstance(x, Buffer) and not isinstance(x, VarBuffer):
        return x.full_region()
    return None


def _start_point_region(buffer, indices, extents, what):
    """The region at `indices` with the value's non-unit extents, right-aligned."""
    ext = [e for e in extents if const_int(e) != 1]
    if len(ext) > buffer.ndim:
        raise frontend_error(
            f"{what} destination '{buffer.name}' is an element of a {buffer.ndim}-d buffer, but "
            f"the value covers {list(extents)}; index the destination with slices"
        )
    ext = [1] * (buffer.ndim - len(ext)) + ext
    return Region(buffer, indices, ext)


def _rmw(kind, dst, value, memory_order, return_prev):
    what = f"T.atomic_{kind}"
    ctx = builder_ctx.current(what)
    order = _order(memory_order, what)
    value_region = _as_region(value)
    # A whole buffer is a tile even of one element (TileLang's tile atomic): each of its
    # elements is updated once by the block, not once per thread. With return_prev a
    # one-element buffer is the element each thread updates.
    tile = isinstance(dst, Buffer) and not isinstance(dst, VarBuffer) and not return_prev
    element = None if tile else _element(ctx, dst)
    if kind in _BITWISE:
        if element is None or value_region is not None:
            raise frontend_error(
                f"{what} updates one element such as C[i] with a scalar value; got "
                f"{type(dst).__name__} {dst!r}"
            )
        if not element[0].dtype.is_int():
            raise frontend_error(
                f"{what} needs an integer element, but '{element[0].name}' has dtype "
                f"{element[0].dtype}"
            )
    if element is not None and value_region is None:
        buffer, indices = element
        _check_dtype(buffer, what)
        v = _C.cast(to_value(value), buffer.dtype)
        call, cond = _element_call(buffer, indices, kind, order, [v])
        if not return_prev:
            _emit(ctx, call, cond)
            return None
        prev = call if cond is None else _C.select(cond, call, _C.const(0, buffer.dtype))
        # Bound once here, so the update happens exactly once, where it is written.
        return ctx.builder.let("prev", prev)
    if return_prev:
        raise frontend_error(
            f"{what} with return_prev=True needs one element as destination (such as C[i, j]); "
            "an atomic on a region returns nothing"
        )
    if element is not None:
        buffer, indices = element
        dst_region = _start_point_region(buffer, indices, value_region.extents, what)
    else:
        dst_region = _as_region(dst)
    if dst_region is None:
        raise frontend_error(
            f"{what} destination must be an element such as C[i, j], a slice such as "
            f"C[0:32, :] or a buffer; got {type(dst).__name__} {dst!r}"
        )
    _check_dtype(dst_region.buffer, what)
    attrs = {"kind": kind, "memory_order": order}
    if value_region is not None:
        ctx.builder.tile_op("atomic", [dst_region.to_core(), value_region.to_core()], [], attrs)
    else:
        ctx.builder.tile_op("atomic", [dst_region.to_core()], [to_value(value)], attrs)
    return None


def atomic_add(
    dst: BufferLike,
    value: ExprLike,
    memory_order: str | None = None,
    return_prev: bool = False,
    use_tma: bool = False,
) -> Expr:
    """dst += value atomically. On one element with return_prev=True, returns the value
    dst held before. On sm_90, adding a whole shared tile of float32/int32/uint32 into
    a tensor region (relaxed order) becomes a TMA reduce-add whether or not `use_tma`
    is given (TileLang's switch for that path, accepted for compatibility)."""
    return _rmw("add", dst, value, memory_order, return_prev)


_BITWISE = ("and", "or", "xor")


def atomic_and(
    dst: BufferLike, value: ExprLike, memory_order: str | None = None, return_prev: bool = False
) -> Expr:
    """dst &= value atomically, on one integer element."""
    return _rmw("and", dst, value, memory_order, return_prev)


def atomic_or(
    dst: BufferLike, value: ExprLike, memory_order: str | None = None, return_prev: bool = False
) -> Expr:
    """dst |= value atomically, on one integer element."""
    return _rmw("or", dst, value, memory_order, return_prev)


def atomic_xor(
    dst: BufferLike, value: ExprLike, memory_order: str | None = None, return_prev: bool = False
) -> Expr:
    """dst ^= value atomically, on one integer element."""
    return _rmw("xor", dst, value, memory_order, return_prev)


def atomic_max(
    dst: BufferLike, value: ExprLike, memory_order: str | None = None, return_prev: bool = False
) -> Expr:
    """dst = max(dst, value) atomically."""
    return _rmw("max", dst, value, memory_order, return_prev)


def atomic_min(
    dst: BufferLike, value: ExprLike, memory_order: str | None = None, return_prev: bool = False
) -> Expr:
    """dst = min(dst, value) atomically."""
    return _rmw("min", dst, value, memory_order, return_prev)


def _run_of(ctx, x, width, what, role):
    """The region of `width` elements along the last dimension that `x` starts: an
    element (A[i, j]), a slice of that many elements, or a buffer of that many."""
    from .vector import LaneVector  # vector imports modules this one imports

    if isinstance(x, LaneVector):
        return _run_of_lanes(ctx, x, width, what, role)
    region = _as_region(x)
    if region is not None:
        sizes = [_const_extent(e) for e in region.extents]
        count = None if None in sizes else math.prod(sizes)
        if count != width:
            raise frontend_error(
                f"{what} {role} must cover {width} elements, got {region!r} with extents "
                f"{list(region.extents)}"
            )
        return region
    element = _element(ctx, x)
    if element is None:
        raise frontend_error(
            f"{what} {role} must be an element such as A[i, j] (the first of {width}), a slice "
            f"of {width} elements or a buffer of {width}; got {type(x).__name__} {x!r}"
        )
    buffer, indices = element
    return Region(buffer, indices, [1] * (buffer.ndim - 1) + [width])


def _run_of_lanes(ctx, vec, width, what, role):
    """The run a vector of loads reads (`A[T.Ramp(j, 1, 2)]`): consecutive elements of
    one buffer along its last dimension."""
    elements = [ctx.element_of(lane) if isinstance(lane, _C.Expr) else None for lane in vec.lanes]
    fail = frontend_error(
        f"{what} {role} must be {width} consecutive elements of one buffer (such as "
        f"A[T.Ramp(j, 1, {width})]); got {vec!r}"
    )
    if len(elements) != width or None in elements:
        raise fail
    buffer, first = elements[0]
    for k, (b, idx) in enumerate(elements):
        step = _const_extent(to_value(idx[-1]) - to_value(first[-1])) if k else 0
        same_row = all(
            _const_extent(to_value(a) - to_value(f)) == 0 for a, f in zip(idx[:-1], first[:-1])
        )
        if b is not buffer or step != k or not same_row:
            raise fail
    return Region(buffer, list(first), [1] * (buffer.ndim - 1) + [width])


def _atomic_add_run(dst, value, width, return_prev):
    what = f"T.atomic_addx{width}"
    ctx = builder_ctx.current(what)
    dst_region = _run_of(ctx, dst, width, what, "dst")
    value_region = _run_of(ctx, value, width, what, "value")
    _check_dtype(dst_region.buffer, what)
    if return_prev:
        return _atomic_add_run_prev(ctx, dst_region, value_region, width)
    if isinstance(value_region.buffer, BufferView):
        _add_elements(ctx, dst_region, value_region)
        return
    # A call each thread makes (TileLang's AtomicAddx2 / x4 is a per-thread device call),
    # not a block-wide region op whose elements the threads share.
    attrs = {"kind": "add", "memory_order": MEMORY_ORDERS["relaxed"], "per_thread": 1}
    ctx.builder.tile_op("atomic", [dst_region.to_core(), value_region.to_core()], [], attrs)


# T.atomic_addx2 / x4 with return_prev=True (src/ir/device_calls.def): one call updating
# the run, each element atomically, and writing the previous values.
_RUN_PREV_CALLS = {2: "tl::AtomicAddx2Ret", 4: "tl::AtomicAddx4Ret"}


def _atomic_add_run_prev(ctx, dst_region, value_region, width):
    """The previous values of an atomic add of a run, a vector of `width` lanes: one
    tl::AtomicAddx<width>Ret(&dst, values, prev, order) where the run is consecutive
    elements of a tensor and lies inside it (TileLang's call; one vector atomic where
    the GPU has one), else an atomic per element (an element outside reads 0)."""
    from .ops import alloc_local
    from .vector import LaneVector

    dst = dst_region.buffer
    dt = dst.dtype
    d_elems = _region_elements(dst_region)
    v_elems = _region_elements(value_region)
    order = MEMORY_ORDERS["relaxed"]
    # The device call's vector atomics address global memory (as AtomicAddx2 / x4's).
    consecutive = (
        not isinstance(dst, BufferView)
        and dst.scope == "global"
        and not dst.strides
        and all(const_int(e) == 1 for e in dst_region.extents[:-1])
    )
    prev = alloc_local((width,), dt)

    def each_element():
        for k, (d_idx, v_idx) in enumerate(zip(d_elems, v_elems)):
            v = _C.cast(to_value(value_region.buffer[tuple(v_idx)]), dt)
            call, cond = _element_call(dst, d_idx, "add", order, [v])
            prev[k] = call if cond is None else _C.select(cond, call, _C.const(0, dt))

    if not consecutive:
        each_element()
    else:
        values = alloc_local((width,), dt)
        for k, v_idx in enumerate(v_elems):
            values[k] = _C.cast(to_value(value_region.buffer[tuple(v_idx)]), dt)
        addr = [
            _C.call("address_of", [_C.buffer_load(b.handle, idx)])
            for b, idx in ((dst, d_elems[0]), (values, [0]), (prev, [0]))
        ]
        call = _C.call_extern("void", _RUN_PREV_CALLS[width], [*addr, _C.const(order, "int32")])
        first, last = _in_bounds(dst, d_elems[0]), _in_bounds(dst, d_elems[-1])
        inside = first if last is None else last if first is None else _C.logical_and(first, last)
        if inside is None:
            ctx.builder.evaluate(call)
        else:
            ctx.builder.begin_if(inside)
            ctx.builder.evaluate(call)
            ctx.builder.begin_else()
            each_element()
            ctx.builder.end_if()
    return LaneVector([prev[k] for k in range(width)], dt.with_lanes(width))


def _const_extent(e):
    """A slice `A[j:j + 2]` has the extent `(j + 2) - j`: simplified, it is constant."""
    return const_int(_C.simplify_expr(e) if isinstance(e, _C.Expr) else e)


def _region_elements(region):
    """The indices of a region's elements, in row-major order (constant extents)."""
    out = [[]]
    for m, e in zip(region.mins, region.extents):
        out = [idx + [m + k if k else m] for idx in out for k in range(_const_extent(e))]
    return out


def _add_elements(ctx, dst_region, value_region):
    """An atomic add of a run read through a view (T.view, T.reshape): one atomic per
    element, each value loaded through the view."""
    dst = dst_region.buffer
    order = MEMORY_ORDERS["relaxed"]
    for d_idx, v_idx in zip(_region_elements(dst_region), _region_elements(value_region)):
        v = _C.cast(value_region.buffer.load(v_idx), dst.dtype)
        _emit(ctx, *_element_call(dst, d_idx, "add", order, [v]))


def atomic_addx2(dst: BufferLike, value: ExprLike, return_prev: bool = False) -> Expr:
    """Adds the 2 elements starting at `value` into the 2 starting at `dst` (TileLang's
    paired atomic add: `T.atomic_addx2(dQ[i, j], acc[k])`), each one atomically. Either
    side may also be a slice or `A[T.Ramp(j, 1, 2)]`; with return_prev=True it returns
    the previous values as a 2-lane vector (`Prev[0:2] = T.atomic_addx2(...)`)."""
    return _atomic_add_run(dst, value, 2, return_prev)


def atomic_addx4(dst: BufferLike, value: ExprLike, return_prev: bool = False) -> Expr:
    """The same for 4 consecutive elements (TileLang's float4 atomic add)."""
    return _atomic_add_run(dst, value, 4, return_prev)


def _single(ctx, x, what):
    element = _element(ctx, x)
    if element is None:
        raise frontend_error(
            f"{what} needs one element such as flag[0] or C[i, j]; got {type(x).__name__} {x!r}"
        )
    _check_dtype(element[0], what)
    return element


def atomic_load(src: BufferLike, memory_order: str = "seq_cst") -> Expr:
    """The value of one element, read atomically (an expression, read where it is used)."""
    what = "T.atomic_load"
    ctx = builder_ctx.current(what)
    order = _order(memory_order, what, ("relaxed", "consume", "acquire", "seq_cst"))
    buffer, indices = _single(ctx, src, what)
    call, cond = _element_call(buffer, indices, "load", order, [])
    return call if cond is None else _C.select(cond, call, _C.const(0, buffer.dtype))


def atomic_store(dst: BufferLike, src: BufferLike, memory_order: str = "seq_cst") -> None:
    """Stores `src` into one element atomically."""
    what = "T.atomic_store"
    ctx = builder_ctx.current(what)
    order = _order(memory_order, what, ("relaxed", "release", "seq_cst"))
    buffer, indices = _single(ctx, dst, what)
    v = _C.cast(to_value(src), buffer.dtype)
    call, cond = _element_call(buffer, indices, "store", order, [v])
    _emit(ctx, call, cond)


__all__ = [
    "atomic_add",
    "atomic_addx2",
    "atomic_addx4",
    "atomic_and",
    "atomic_load",
    "atomic_max",
    "atomic_min",
    "atomic_or",
    "atomic_store",
    "atomic_xor",
]
