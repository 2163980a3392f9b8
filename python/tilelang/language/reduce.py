"""Reductions and scans over tiles (`T.reduce_sum`, `T.reduce_max`, `T.cumsum` ...) and
reducers (`T.alloc_reducer` / `T.finalize_reducer`). Each call hands its buffers to one
C++ tile op, which checks shapes and dims and reports mistakes at the user's line."""

from . import builder_ctx, views
from .buffer import Buffer, Region, to_value
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C


def _region(x, what):
    x = to_value(x)
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, Region):
        return x
    raise frontend_error(f"{what} must be a buffer or a slice of one, got {type(x).__name__} {x!r}")


def _int_arg(value, what):
    if isinstance(value, bool) or not isinstance(value, int):
        raise frontend_error(f"{what} must be a Python int, got {type(value).__name__} {value!r}")
    return value


def _on_view(x):
    x = to_value(x)
    return isinstance(x, views.BufferView) or (
        isinstance(x, Region) and isinstance(x.buffer, views.BufferView)
    )


def _reduce(kind, buffer, out, dim, clear):
    name = f"T.reduce_{kind}"
    ctx = builder_ctx.current(name)
    if _on_view(buffer) or _on_view(out):
        views.reduce_loops(ctx, name, kind, buffer, out, _int_arg(dim, f"{name} dim"), clear)
        return
    regions = [
        _region(buffer, f"{name} source").to_core(),
        _region(out, f"{name} destination").to_core(),
    ]
    attrs = {"kind": kind, "dim": _int_arg(dim, f"{name} dim"), "clear": bool(clear)}
    ctx.builder.tile_op("reduce", regions, [], attrs)


def reduce_max(buffer, out, dim=-1, clear=True):
    """out = max of `buffer` over `dim`; with clear=False, max(out, that)."""
    _reduce("max", buffer, out, dim, clear)


def reduce_min(buffer, out, dim=-1, clear=True):
    """out = min of `buffer` over `dim`; with clear=False, min(out, that)."""
    _reduce("min", buffer, out, dim, clear)


def reduce_sum(buffer, out, dim=-1, clear=True):
    """out = sum of `buffer` over `dim`; with clear=False, out + that."""
    _reduce("sum", buffer, out, dim, clear)


def reduce_abssum(buffer, out, dim=-1):
    """out = sum of |buffer| over `dim` (always starts from zero, as in TileLang)."""
    _reduce("abssum", buffer, out, dim, True)


def reduce_absmax(buffer, out, dim=-1, clear=True):
    """out = max of |buffer| over `dim`; with clear=False, max(out, that)."""
    _reduce("absmax", buffer, out, dim, clear)


def reduce_argmax(buffer, out, dim=-1):
    """out = the index along `dim` of the largest element of `buffer` (the first one
    on ties, as torch.argmax; NaNs are never chosen). `out` is an integer buffer of
    `buffer`'s shape without `dim` (or with it kept as 1)."""
    _arg_reduce("max", buffer, out, dim)


def reduce_argmin(buffer, out, dim=-1):
    """out = the index along `dim` of the smallest element of `buffer` (the first on
    ties); see T.reduce_argmax."""
    _arg_reduce("min", buffer, out, dim)


def _arg_reduce(kind, buffer, out, dim):
    """Two reductions: the extreme value of each line, then the least index holding
    it (an index tile with a sentinel past the line elsewhere)."""
    from . import ops
    from .math import if_then_else

    name = f"T.reduce_arg{kind}"
    builder_ctx.current(name)
    src, dst = to_value(buffer), to_value(out)
    for what, x in (("source", src), ("destination", dst)):
        if not isinstance(x, Buffer):
            raise frontend_error(
                f"{name} {what} must be a buffer (shared or fragment), got {type(x).__name__} {x!r}"
            )
    if not dst.dtype.is_int():
        raise frontend_error(
            f"{name} destination '{dst.name}' must have an integer dtype for the indices, "
            f"got {dst.dtype}"
        )
    rank = src.ndim
    axis = _int_arg(dim, f"{name} dim")
    if not -rank <= axis < rank:
        raise frontend_error(
            f"{name} dim {axis} is out of range for source '{src.name}' of rank {rank}; use a "
            f"dim in [{-rank}, {rank - 1}]"
        )
    axis %= rank
    shape = list(src.shape)
    line = [n for d, n in enumerate(shape) if d != axis] or [1]
    extreme = ops.alloc_fragment(line, src.dtype)
    _reduce(kind, src, extreme, axis, True)
    index = ops.alloc_fragment(shape, dst.dtype)
    past = shape[axis]  # larger than every index of the line
    builder = builder_ctx.current(name).builder
    ix = [builder.begin_for(f"i{d}", 0, n, "parallel", {}) for d, n in enumerate(shape)]
    at = [i for d, i in enumerate(ix) if d != axis] or [0]
    index[tuple(ix)] = if_then_else(src[tuple(ix)] == extreme[tuple(at)], ix[axis], past)
    for _ in shape:
        builder.end_for()
    if dst.ndim == 0:
        single = ops.alloc_fragment([1], dst.dtype)
        _reduce("min", index, single, axis, True)
        dst[()] = single[0]
        return
    _reduce("min", index, dst, axis, True)


def reduce_bitand(buffer, out, dim=-1, clear=True):
    _reduce("bitand", buffer, out, dim, clear)


def reduce_bitor(buffer, out, dim=-1, clear=True):
    _reduce("bitor", buffer, out, dim, clear)


def reduce_bitxor(buffer, out, dim=-1, clear=True):
    _reduce("bitxor", buffer, out, dim, clear)


def _scan(kind, src, dst, dim, reverse):
    name = f"T.cum{kind}"
    ctx = builder_ctx.current(name)
    src_region = _region(src, f"{name} source")
    dst_region = src_region if dst is None else _region(dst, f"{name} destination")
    attrs = {"kind": kind, "dim": _int_arg(dim, f"{name} dim"), "reverse": bool(reverse)}
    ctx.builder.tile_op("cumsum", [src_region.to_core(), dst_region.to_core()], [], attrs)


def cumsum(src, dst=None, dim=0, reverse=False):
    """Inclusive prefix sum of `src` along `dim` into `dst` (in place when dst is None);
    reverse=True sums from the end."""
    _scan("sum", src, dst, dim, reverse)


def cummax(src, dst=None, dim=0, reverse=False):
    """Inclusive running maximum of `src` along `dim`, like `cumsum`."""
    _scan("max", src, dst, dim, reverse)


class ReducerBuffer(Buffer):
    """A fragment made by T.alloc_reducer; remembers its reduction op."""

    __slots__ = ("reducer_op",)


_REDUCER_OPS = ("sum", "max", "min")


def _has_infinity(dt):
    return dt.is_float() and (dt.bits >= 16 or dt == "float8_e5m2")


def _identity(op, dt):
    if op == "sum":
        return _C.const(0, dt)
    if _has_infinity(dt):
        return _C.infinity(dt, op == "max")
    return _C.min_value(dt) if op == "max" else _C.max_value(dt)


def alloc_reducer(shape, dtype, op="sum", replication=None):
    """A block-wide partial-result buffer for `op`, initialised to the op's identity.

    On GPUs each thread keeps its own partial results and T.finalize_reducer combines
    them; on the CPU one executor runs the whole block, so the buffer already holds
    the combined result and T.finalize_reducer is only a barrier.
    """
    if op not in _REDUCER_OPS:
        raise frontend_error(
            f"T.alloc_reducer op must be one of {', '.join(_REDUCER_OPS)}, got {op!r}"
        )
    if replication not in (None, "all", "none"):
        raise frontend_error(
            f"T.alloc_reducer replication must be None, 'all' or 'none', got {replication!r}"
        )
    ctx = builder_ctx.current("T.alloc_reducer")
    dt = make_dtype(dtype)
    shape = [to_value(s) for s in shape] if isinstance(shape, (list, tuple)) else [to_value(shape)]
    handle = ctx.builder.alloc(ctx.take_name("reducer"), shape, dt, "local.fragment")
    buf = ReducerBuffer(handle)
    buf.reducer_op = op
    ctx.builder.fill(buf.full_region().to_core(), _identity(op, dt))
    return buf


def finalize_reducer(reducer):
    """Makes the reducer's combined values visible to the whole block."""
    ctx = builder_ctx.current("T.finalize_reducer")
    if not isinstance(reducer, ReducerBuffer):
        raise frontend_error(
            f"T.finalize_reducer expects a buffer made by T.alloc_reducer, got {reducer!r}"
        )
    ctx.builder.sync_threads()


__all__ = [
    "alloc_reducer",
    "cummax",
    "cumsum",
    "finalize_reducer",
    "reduce_absmax",
    "reduce_abssum",
    "reduce_argmax",
    "reduce_argmin",
    "reduce_bitand",
    "reduce_bitor",
    "reduce_bitxor",
    "reduce_max",
    "reduce_min",
    "reduce_sum",
]
