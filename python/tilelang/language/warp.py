"""Warp-level helpers: lane and warp indices (`T.get_lane_idx`, `T.get_warp_idx` ...),
register shuffles (`T.shfl_xor`, `shfl_down`, `shfl_up`, `shfl_sync`), votes (`T.ballot`,
`ballot_sync`, `any_sync`, `all_sync`, `activemask`) and `T.sync_warp`, with TileLang's
signatures.

Indices are plain arithmetic on the thread indices. The collectives are calls of
`tl::<name>` functions that each target's device header defines (device/cuda/warp.cuh
wraps CUDA's `__shfl_*_sync` / `__ballot_sync` ...; device/cpu/warp.h exchanges values
between the fibers of a warp), so no code generator knows about them. A warp has 32
lanes on every target; lanes are numbered by the linear thread index
`tx + ex * (ty + ey * tz)`, as CUDA numbers them.
"""

from __future__ import annotations

from tilelang.types import Expr, ExprLike

from . import builder_ctx
from .buffer import const_int, to_value
from .builder_ctx import TileLangError, frontend_error

_C = builder_ctx._C

WARP_SIZE = 32
FULL_MASK = 0xFFFFFFFF


# ---- argument checks: each error names the helper, the argument, what it needs and
# what it got; the trace adds the user's file and line.


def _describe(x):
    if isinstance(x, _C.Expr):
        return f"{x.dtype} expression {x}"
    return f"{type(x).__name__} {x!r}"


def _kernel(what):
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None:
        raise frontend_error(f"{what} must be called inside a `with T.Kernel(...)` block")
    return ctx


# Loops whose iterations the compiler spreads over threads (or vector lanes).
_SPREAD_LOOPS = {"parallel": "T.Parallel", "vectorized": "T.vectorized"}


def _collective(what):
    """The trace, for a helper that every lane of a warp must reach together."""
    ctx = _kernel(what)
    loops = [_SPREAD_LOOPS[k] for k in ctx.loop_kinds if k in _SPREAD_LOOPS]
    if loops:
        raise frontend_error(
            f"{what} cannot be used inside a {loops[-1]} loop: the compiler "
            "spreads its iterations over the threads, so its lanes are not the warp's lanes; "
            "call it in per-thread code (outside T.Parallel), e.g. with T.get_lane_idx()"
        )
    return ctx


def _outside_a_trace():
    """Whether no kernel is being traced: a vote called there returns its call expression
    (TileLang's `tvm.tirx.Call`), to inspect, as TileLang's votes do outside a kernel."""
    return builder_ctx.maybe_current() is None


def _is_int_dtype(dt):
    return dt.lanes == 1 and dt.name.startswith(("int", "uint")) and dt.bits >= 8


def _int_arg(what, name, x, expected):
    """An integer argument (Python int or integer expression) as an int32 expression or int."""
    x = to_value(x)
    if isinstance(x, bool) or not isinstance(x, (int, _C.Expr)):
        raise frontend_error(f"{what} {name} must be {expected}, got {_describe(x)}")
    if isinstance(x, _C.Expr):
        if not _is_int_dtype(x.dtype):
            raise frontend_error(f"{what} {name} must be {expected}, got {_describe(x)}")
        c = const_int(x)
        if c is not None:
            return c
        return x if x.dtype.name == "int32" else _C.cast(x, "int32")
    return x


def _warp_size(what, warp_size):
    if warp_size is None:
        return WARP_SIZE
    size = _int_arg(what, "warp_size", warp_size, "a positive integer (the lanes of a warp)")
    if isinstance(size, int) and size <= 0:
        raise frontend_error(f"{what} warp_size must be a positive integer, got {size}")
    return size


def _mask(what, mask):
    mask = to_value(mask)
    if isinstance(mask, _C.Expr) and mask.dtype.name == "bool":
        raise frontend_error(
            f"{what} mask must be a 32-bit lane mask (an integer), got {_describe(mask)}; "
            f"the predicate comes first: {what}(predicate, mask=0xFFFFFFFF)"
        )
    expected = "a 32-bit lane mask (an integer such as 0xFFFFFFFF)"
    if isinstance(mask, bool) or not isinstance(mask, (int, _C.Expr)):
        raise frontend_error(f"{what} mask must be {expected}, got {_describe(mask)}")
    if isinstance(mask, int):
        if not 0 <= mask <= FULL_MASK:
            raise frontend_error(
                f"{what} mask must be {expected}: a warp has {WARP_SIZE} lanes, got {mask:#x}"
            )
        return _C.const(mask, "uint32")
    if not _is_int_dtype(mask.dtype):
        raise frontend_error(f"{what} mask must be {expected}, got {_describe(mask)}")
    return mask if mask.dtype.name == "uint32" else _C.cast(mask, "uint32")


class PredicateTypeError(TileLangError, TypeError):  # type: ignore[misc,valid-type]
    """A vote given a predicate that is neither boolean nor integer (TileLang raises a
    TypeError there)."""


def _predicate(what, pred):
    """A vote's predicate: a boolean, or an integer that counts as true when non-zero.
    Checked before anything else, so a wrong one is named even outside a kernel."""
    pred = to_value(pred)
    if isinstance(pred, (bool, int)):
        return _C.const(bool(pred), "bool")
    if isinstance(pred, _C.Expr) and pred.dtype.lanes == 1:
        if pred.dtype.name == "bool":
            return pred
        if _is_int_dtype(pred.dtype):
            return _C.binary("NE", pred, _C.const(0, pred.dtype))
    message = (
        f"{what} requires an integer or boolean predicate: a condition such as `x > 0`, or "
        f"an integer (true when non-zero); got {_describe(pred)}"
    )
    err = PredicateTypeError(message)
    err.file, err.line, err.bare_message = None, 0, message
    raise err


def _shuffled_value(what, value):
    value = to_value(value)
    if isinstance(value, bool):
        return _C.const(value, "bool")
    if isinstance(value, int):
        return _C.const(value, "int32")
    if isinstance(value, float):
        return _C.const(value, "float32")
    if isinstance(value, _C.Expr):
        dt = value.dtype
        if dt.lanes == 1 and (dt.name == "bool" or dt.bits in (8, 16, 32, 64)):
            return value
    raise frontend_error(
        f"{what} value must be a scalar of 8, 16, 32 or 64 bits (an element such as x[0], "
        f"an alloc_var or an expression), got {_describe(value)}"
    )


def _width(what, width):
    width = _int_arg(what, "width", width, "a power of two from 1 to 32")
    if isinstance(width, int) and not (0 < width <= WARP_SIZE and width & (width - 1) == 0):
        raise frontend_error(
            f"{what} width must be a power of two from 1 to {WARP_SIZE} (lanes per group), "
            f"got {width}"
        )
    return width


def _lane_offset(what, name, x):
    x = _int_arg(what, name, x, f"an integer lane offset in [0, {WARP_SIZE})")
    if isinstance(x, int) and not 0 <= x < WARP_SIZE:
        raise frontend_error(f"{what} {name} must be a lane offset in [0, {WARP_SIZE}), got {x}")
    return x


# ---- indices


def _linear_thread_index(ctx):
    """tx + ex * (ty + ey * tz): the thread's rank in its block, as CUDA numbers lanes."""
    threads = list(ctx.kernel_vars.threads)
    extents = list(ctx.kernel_extents[1])
    index = threads[-1]
    for var, extent in zip(reversed(threads[:-1]), reversed(extents[:-1])):
        index = var + extent * index
    return index


def get_lane_idx(warp_size: int | None = None) -> Expr:
    """The calling thread's lane in its warp: linear thread index % warp_size (int32)."""
    what = "T.get_lane_idx"
    ctx = _kernel(what)
    return _linear_thread_index(ctx) % _warp_size(what, warp_size)


def get_warp_idx(warp_size: int | None = None) -> Expr:
    """The calling thread's warp in its block: linear thread index // warp_size (int32)."""
    what = "T.get_warp_idx"
    ctx = _kernel(what)
    return _linear_thread_index(ctx) // _warp_size(what, warp_size)


def get_warp_idx_sync(warp_size: int | None = None) -> Expr:
    """As T.get_warp_idx (TileLang's variant for converged warps; the value is the same)."""
    what = "T.get_warp_idx_sync"
    ctx = _kernel(what)
    return _linear_thread_index(ctx) // _warp_size(what, warp_size)


def get_warp_group_idx(warp_size: int | None = None, warps_per_group: int | None = None) -> Expr:
    """The calling thread's warp group: linear thread index // (warp_size * warps_per_group),
    4 warps per group unless given (warps_per_group needs warp_size, as in TileLang)."""
    what = "T.get_warp_group_idx"
    ctx = _kernel(what)
    if warps_per_group is not None and warp_size is None:
        raise frontend_error(
            f"{what} needs warp_size when warps_per_group is given: {what}(32, {warps_per_group!r})"
        )
    size = _warp_size(what, warp_size)
    group = 4
    if warps_per_group is not None:
        group = _int_arg(what, "warps_per_group", warps_per_group, "a positive integer")
        if isinstance(group, int) and group <= 0:
            raise frontend_error(f"{what} warps_per_group must be a positive integer, got {group}")
    return _linear_thread_index(ctx) // (size * group)


def shuffle_elect(thread_extent: ExprLike) -> Expr:
    """True in one thread of each group of `thread_extent` consecutive threads of the
    block (the group's first: TileLang elects lane 0 of the group's first warp), false
    in the others; `thread_extent=0` elects thread 0 of the whole block (bool)."""
    what = "T.shuffle_elect"
    ctx = _kernel(what)
    if isinstance(thread_extent, bool) or not isinstance(thread_extent, int) or thread_extent < 0:
        raise frontend_error(
            f"{what} takes the group size as a non-negative Python int (0: the whole block), "
            f"got {thread_extent!r}"
        )
    tid = _linear_thread_index(ctx)
    if thread_extent == 0:
        return _C.binary("EQ", tid, 0)
    return _C.binary("EQ", _C.binary("FloorMod", tid, thread_extent), 0)


# ---- shuffles


def _shuffle(what, fn, value, lane_arg, lane_name, width, mask, check_lane):
    _collective(what)
    v = _shuffled_value(what, value)
    lane = check_lane(what, lane_name, lane_arg)
    args = [_mask(what, mask), v, lane, _width(what, width)]
    return _C.call_extern(v.dtype, fn, args)


def _any_int(what, name, x):
    return _int_arg(what, name, x, "an integer lane index")


def shfl_xor(
    value: ExprLike, delta: ExprLike, width: ExprLike = WARP_SIZE, mask: ExprLike = FULL_MASK
) -> Expr:
    """`value` of lane (lane ^ delta): the butterfly step of a warp reduction. Within
    groups of `width` lanes, a lane whose partner lies in a later group keeps its value."""
    return _shuffle(
        "T.shfl_xor", "tl::shfl_xor_sync", value, delta, "delta", width, mask, _lane_offset
    )


def shfl_down(
    value: ExprLike, delta: ExprLike, width: ExprLike = WARP_SIZE, mask: ExprLike = FULL_MASK
) -> Expr:
    """`value` of lane (lane + delta) of the same group of `width` lanes; the last
    `delta` lanes of each group keep their own."""
    return _shuffle(
        "T.shfl_down", "tl::shfl_down_sync", value, delta, "delta", width, mask, _lane_offset
    )


def shfl_up(
    value: ExprLike, delta: ExprLike, width: ExprLike = WARP_SIZE, mask: ExprLike = FULL_MASK
) -> Expr:
    """`value` of lane (lane - delta) of the same group of `width` lanes; the first
    `delta` lanes of each group keep their own."""
    return _shuffle(
        "T.shfl_up", "tl::shfl_up_sync", value, delta, "delta", width, mask, _lane_offset
    )


def shfl_sync(
    value: ExprLike, srcLane: ExprLike, width: ExprLike = WARP_SIZE, mask: ExprLike = FULL_MASK
) -> Expr:
    """`value` of lane srcLane (modulo `width`) of the caller's group of `width` lanes."""
    return _shuffle(
        "T.shfl_sync", "tl::shfl_sync", value, srcLane, "srcLane", width, mask, _any_int
    )


# ---- votes


def _present_lanes(ctx, ballot):
    """`ballot` limited to the lanes that exist when the block ends with a partial warp.
    The GPU never sets the other bits; on the cpu target, a kernel that reads no thread
    index runs its block on one executor, which stands for all 32 lanes."""
    n = 1
    for extent in ctx.kernel_extents[1]:
        n *= extent
    if n % WARP_SIZE == 0:
        return ballot
    partial = _C.const((1 << (n % WARP_SIZE)) - 1, "uint64")
    if n < WARP_SIZE:
        return ballot & partial
    last = _linear_thread_index(ctx) // WARP_SIZE == n // WARP_SIZE
    return ballot & _C.select(last, partial, _C.const(FULL_MASK, "uint64"))


def ballot_sync(predicate: ExprLike, mask: ExprLike = FULL_MASK) -> Expr:
    """A uint64 with bit l set when lane l is in `mask` and its predicate holds."""
    what = "T.ballot_sync"
    pred = _predicate(what, predicate)
    call = _C.call_extern("uint64", "tl::ballot_sync", [_mask(what, mask), pred])
    return call if _outside_a_trace() else _present_lanes(_collective(what), call)


def ballot(predicate: ExprLike) -> Expr:
    """T.ballot_sync over the whole warp: bit l set when lane l's predicate holds (uint64)."""
    what = "T.ballot"
    pred = _predicate(what, predicate)
    call = _C.call_extern("uint64", "tl::ballot", [pred])
    return call if _outside_a_trace() else _present_lanes(_collective(what), call)


def any_sync(predicate: ExprLike, mask: ExprLike = FULL_MASK) -> Expr:
    """1 when the predicate holds on some lane of `mask`, else 0 (int32)."""
    what = "T.any_sync"
    pred = _predicate(what, predicate)
    if not _outside_a_trace():
        _collective(what)
    args = [_mask(what, mask), pred]
    return _C.call_extern("int32", "tl::any_sync", args)


def all_sync(predicate: ExprLike, mask: ExprLike = FULL_MASK) -> Expr:
    """1 when the predicate holds on every lane of `mask`, else 0 (int32)."""
    what = "T.all_sync"
    pred = _predicate(what, predicate)
    if not _outside_a_trace():
        _collective(what)
    args = [_mask(what, mask), pred]
    return _C.call_extern("int32", "tl::all_sync", args)


def activemask() -> Expr:
    """The lanes of the caller's warp that take part (uint64). Every thread of the block
    must reach warp-level calls together here, so: the lanes that exist."""
    ctx = _collective("T.activemask")
    return _present_lanes(ctx, _C.call_extern("uint64", "tl::activemask", []))


def _integer_operand(what, name, value, bits=None):
    v = to_value(value)
    if isinstance(v, bool) or not isinstance(v, (int, _C.Expr)):
        raise frontend_error(f"{what}: {name} must be an integer, got {_describe(v)}")
    if isinstance(v, _C.Expr) and not _is_int_dtype(v.dtype):
        raise frontend_error(f"{what}: {name} must be an integer, got {_describe(v)}")
    if bits is None:
        wide = isinstance(v, _C.Expr) and v.dtype.bits == 64 or isinstance(v, int) and v >> 32
        bits = 64 if wide else 32
    return (
        _C.cast(v, f"uint{bits}")
        if isinstance(v, _C.Expr)
        else _C.const(v & ((1 << bits) - 1), f"uint{bits}")
    )


def __ffs(value: ExprLike) -> Expr:
    """CUDA's __ffs / __ffsll: the 1-based position of the lowest set bit of an integer
    (64-bit values are searched whole), 0 when none is set; int32."""
    x = _integer_operand("T.__ffs", "value", value)
    return _C.call_extern("int32", "tl::find_first_set", [_C.cast(x, "uint64")])


def __fns(mask: ExprLike, base: ExprLike, offset: ExprLike) -> Expr:
    """CUDA's __fns: the position of the offset-th set bit of the 32-bit `mask`, counting
    from bit `base` up (offset > 0) or down (offset < 0); offset 0 gives `base` when that
    bit is set. 0xFFFFFFFF when there is no such bit; uint32."""
    args = [
        _integer_operand("T.__fns", "mask", mask, 32),
        _integer_operand("T.__fns", "base", base, 32),
        _C.cast(to_value(offset), "int32"),
    ]
    return _C.call_extern("uint32", "tl::find_nth_set", args)


def _match(what, fn, value, mask):
    _collective(what)
    v = to_value(value)
    if isinstance(v, (bool, int)):
        v = _C.const(int(v), "int32")
    elif isinstance(v, float):
        v = _C.const(v, "float32")
    if not isinstance(v, _C.Expr) or v.dtype.lanes != 1 or v.dtype.bits not in (32, 64):
        raise frontend_error(
            f"{what} compares a 32- or 64-bit integer or float value, got {_describe(v)}"
        )
    return _C.call_extern("uint32", fn, [_mask(what, mask), v])


def match_any_sync(value: ExprLike, mask: ExprLike = FULL_MASK) -> Expr:
    """The lanes of `mask` whose `value` equals the caller's (uint32; CUDA's
    __match_any_sync)."""
    return _match("T.match_any_sync", "tl::match_any_sync", value, mask)


def match_all_sync(value: ExprLike, mask: ExprLike = FULL_MASK) -> Expr:
    """`mask` when every lane of it holds the caller's `value`, else 0 (uint32; CUDA's
    __match_all_sync)."""
    return _match("T.match_all_sync", "tl::match_all_sync", value, mask)


def sync_warp(mask: ExprLike | None = None) -> None:
    """A barrier for the lanes of a warp (`__syncwarp`): shared-memory writes made
    before it by a lane are visible after it to the lanes in `mask`."""
    what = "T.sync_warp"
    ctx = _collective(what)
    args = [] if mask is None else [_mask(what, mask)]
    ctx.builder.evaluate(_C.call_extern("void", "tl::sync_warp", args))


# ---- block votes


def _block_vote(what, fn, predicate):
    pred = _predicate(what, predicate)
    if _outside_a_trace():  # the block's thread count comes with its kernel
        return _C.call_extern("int32", fn, [pred])
    ctx = _kernel(what)
    loops = [_SPREAD_LOOPS[k] for k in ctx.loop_kinds if k in _SPREAD_LOOPS]
    if loops:
        raise frontend_error(
            f"{what} cannot be used inside a {loops[-1]} loop: it is a barrier every thread "
            "of the block reaches once; call it in per-thread code (outside T.Parallel)"
        )
    threads = 1
    for extent in ctx.kernel_extents[1]:
        threads *= extent
    args = [pred, _C.const(threads, "int32")]
    return ctx.builder.let("vote", _C.call_extern("int32", fn, args))


def syncthreads_count(predicate: ExprLike) -> Expr:
    """A block barrier that returns, to every thread, how many threads of the block
    passed a true `predicate` (CUDA's __syncthreads_count), as int32."""
    return _block_vote("T.syncthreads_count", "tl::syncthreads_count", predicate)


def syncthreads_and(predicate: ExprLike) -> Expr:
    """A block barrier that returns 1 when `predicate` holds on every thread of the
    block, else 0 (CUDA's __syncthreads_and)."""
    return _block_vote("T.syncthreads_and", "tl::syncthreads_and", predicate)


def syncthreads_or(predicate: ExprLike) -> Expr:
    """A block barrier that returns 1 when `predicate` holds on some thread of the
    block, else 0 (CUDA's __syncthreads_or)."""
    return _block_vote("T.syncthreads_or", "tl::syncthreads_or", predicate)


# ---- warp reductions


def _warp_reduce(what, value, combine, integer_only=False):
    """`value` combined over the 32 lanes of the caller's warp, every lane getting the
    result: five butterfly steps of shfl_xor (offsets 16, 8, 4, 2, 1)."""
    ctx = _collective(what)
    v = _shuffled_value(what, value)
    if v.dtype.name == "bool" or (integer_only and not _is_int_dtype(v.dtype)):
        kind = "an integer" if integer_only else "a number"
        raise frontend_error(f"{what} value must be {kind}, got {_describe(v)}")
    v = ctx.builder.let("warp_red", v)
    offset = WARP_SIZE // 2
    while offset:
        args = [_C.const(FULL_MASK, "uint32"), v, offset, WARP_SIZE]
        # Bound at each step, so that every lane shuffles once per step.
        v = ctx.builder.let(
            "warp_red", combine(v, _C.call_extern(v.dtype, "tl::shfl_xor_sync", args))
        )
        offset //= 2
    return v


def warp_reduce_sum(value: ExprLike) -> Expr:
    """The sum of `value` over the lanes of the warp, returned to every lane."""
    return _warp_reduce("T.warp_reduce_sum", value, lambda a, b: a + b)


def warp_reduce_max(value: ExprLike) -> Expr:
    """The largest `value` of the lanes of the warp, returned to every lane."""
    return _warp_reduce("T.warp_reduce_max", value, lambda a, b: _C.binary("Max", a, b))


def warp_reduce_min(value: ExprLike) -> Expr:
    """The smallest `value` of the lanes of the warp, returned to every lane."""
    return _warp_reduce("T.warp_reduce_min", value, lambda a, b: _C.binary("Min", a, b))


def warp_reduce_bitand(value: ExprLike) -> Expr:
    """The bitwise and of the integer `value` of the lanes of the warp, to every lane."""
    return _warp_reduce("T.warp_reduce_bitand", value, lambda a, b: a & b, integer_only=True)


def warp_reduce_bitor(value: ExprLike) -> Expr:
    """The bitwise or of the integer `value` of the lanes of the warp, to every lane."""
    return _warp_reduce("T.warp_reduce_bitor", value, lambda a, b: a | b, integer_only=True)


__all__ = [
    "__ffs",
    "__fns",
    "activemask",
    "all_sync",
    "any_sync",
    "ballot",
    "ballot_sync",
    "get_lane_idx",
    "get_warp_group_idx",
    "get_warp_idx",
    "get_warp_idx_sync",
    "match_all_sync",
    "match_any_sync",
    "shfl_down",
    "shfl_sync",
    "shfl_up",
    "shfl_xor",
    "shuffle_elect",
    "sync_warp",
    "syncthreads_and",
    "syncthreads_count",
    "syncthreads_or",
    "warp_reduce_bitand",
    "warp_reduce_bitor",
    "warp_reduce_max",
    "warp_reduce_min",
    "warp_reduce_sum",
]
