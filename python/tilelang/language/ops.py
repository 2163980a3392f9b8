"""Allocations and tile operators (`T.alloc_shared`, `T.copy`, `T.fill`, `T.gemm` ...):
each turns its Python operands into buffers/regions and calls one builder method; the C++
op checks the operands and reports mistakes at the user's line."""

from enum import IntEnum

from . import builder_ctx
from .buffer import Buffer, Region, VarBuffer, to_value, wrap_buffer
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C


def _shape_list(shape):
    if isinstance(shape, (list, tuple)):
        return [to_value(s) for s in shape]
    return [to_value(shape)]


def _alloc(shape, dtype, scope, default_name):
    ctx = builder_ctx.current(f"allocating a '{scope}' buffer")
    name = ctx.take_name(default_name)
    handle = ctx.builder.alloc(name, _shape_list(shape), make_dtype(dtype), scope)
    return wrap_buffer(handle)


def alloc_shared(shape, dtype, scope="shared.dyn"):
    return _alloc(shape, dtype, scope, "shared")


def alloc_fragment(shape, dtype, scope="local.fragment"):
    return _alloc(shape, dtype, scope, "frag")


def alloc_local(shape, dtype, scope="local"):
    return _alloc(shape, dtype, scope, "local")


def alloc_var(dtype, *args, init=None, scope="local.var"):
    """A scalar register; `x = value` on its Python name stores into it."""
    if args:
        if len(args) > 1 or init is not None:
            raise TypeError("T.alloc_var takes one initial value (positionally or as init=)")
        init = args[0]
    buf = _alloc([1], dtype, scope, "var")
    if init is not None:
        buf.store(init)
    return buf


class GemmWarpPolicy(IntEnum):
    """How T.gemm spreads a block's warps over the M and N dimensions of C."""

    Square = 0
    FullRow = 1
    FullCol = 2


def _copy_operand(x, side):
    """(buffer, mins, extents or None) for one side of T.copy."""
    x = to_value(x)
    if isinstance(x, Buffer):
        return x, [0] * x.ndim, list(x.shape)
    if isinstance(x, Region):
        return x.buffer, x.mins, x.extents
    if isinstance(x, _C.Expr):
        element = builder_ctx.current("T.copy").element_of(x)
        if element is not None:
            return element[0], element[1], None
    raise frontend_error(
        f"T.copy {side} must be a buffer, a slice such as A[0:32, :] or an element A[i, j] "
        f"used as a start point; got {type(x).__name__} {x!r}"
    )


def copy(src, dst, coalesced_width=None, disable_tma=False, eviction_policy=None):
    """Copies a tile; out-of-bounds parts are predicated (reads give 0, writes are dropped)."""
    ctx = builder_ctx.current("T.copy")
    s_buf, s_min, s_ext = _copy_operand(src, "source")
    d_buf, d_min, d_ext = _copy_operand(dst, "destination")
    if s_ext is None and d_ext is None:
        # Two elements: a plain store (the store converts to the destination's dtype).
        ctx.builder.store(d_buf.handle, d_min, _C.buffer_load(s_buf.handle, s_min))
        return
    attrs = {
        "coalesced_width": coalesced_width,
        "disable_tma": bool(disable_tma),
        "eviction_policy": eviction_policy,
    }
    ctx.builder.copy(s_buf.handle, s_min, s_ext, d_buf.handle, d_min, d_ext, attrs)


def _region(x, what):
    x = to_value(x)
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, Region):
        return x
    raise frontend_error(f"{what} must be a buffer or a slice of one, got {type(x).__name__} {x!r}")


def fill(buffer, value):
    builder_ctx.current("T.fill").builder.fill(
        _region(buffer, "T.fill target").to_core(), to_value(value)
    )


def clear(buffer):
    fill(buffer, 0)


def gemm(
    A,
    B,
    C,
    transpose_A=False,
    transpose_B=False,
    policy=GemmWarpPolicy.Square,
    clear_accum=False,
    k_pack=1,
    wg_wait=0,
    mbar=None,
):
    """C += op(A) @ op(B) on tiles; synchronous from the user's point of view.

    `wg_wait` and `mbar` (Hopper asynchrony) are accepted for compatibility; targets that
    do not use them ignore them.
    """
    ctx = builder_ctx.current("T.gemm")
    attrs = {
        "transpose_A": bool(transpose_A),
        "transpose_B": bool(transpose_B),
        "policy": int(policy),
        "clear_accum": bool(clear_accum),
        "k_pack": int(k_pack),
        "wg_wait": int(wg_wait),
    }
    regions = [
        _region(x, f"T.gemm operand {n}").to_core() for x, n in ((A, "A"), (B, "B"), (C, "C"))
    ]
    ctx.builder.gemm(*regions, attrs)


def sync_threads():
    builder_ctx.current("T.sync_threads").builder.sync_threads()


def evaluate(expr):
    builder_ctx.current("T.evaluate").builder.evaluate(to_value(expr))


__all__ = [
    "GemmWarpPolicy",
    "VarBuffer",
    "alloc_fragment",
    "alloc_local",
    "alloc_shared",
    "alloc_var",
    "clear",
    "copy",
    "evaluate",
    "fill",
    "gemm",
    "sync_threads",
]
