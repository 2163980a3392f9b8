"""Reductions and scans over tiles (`T.reduce_sum`, `T.reduce_max`, `T.cumsum` ...) and
reducers (`T.alloc_reducer`, `T.reducer_init`, `T.reducer_update`, `T.finalize_reducer`). Each call hands its buffers to one
C++ tile op, which checks shapes and dims and reports mistakes at the user's line."""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, DTypeLike, ExprLike, ShapeLike

from . import builder_ctx, views
from .buffer import Buffer, Region, const_int, to_value, wrap_buffer
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C


def _region(x, what):
    x = to_value(x)
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, Region):
        return x
    if isinstance(x, _C.Expr):
        # A T.alloc_var read by its name: the variable itself (a one-element buffer).
        ctx = builder_ctx.current(what)
        element = ctx.element_of(x)
        if element is not None and element[0].scope == "local.var":
            return element[0].full_region()
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


def _tuning(name, batch, annotations, outputs=None):
    """Checks TileLang's tuning arguments of a reduction: `batch` (outputs per
    cross-thread collective) and `annotations` (lowering hints). They choose how
    TileLang's CUDA code is shaped, never the result, so nothing else reads them (but
    the annotation {"nan_propagate": True} of max / min / absmax, read by _nan_flag).
    `outputs`: the number of output elements where it is known; a batch must divide it,
    as TileLang requires (it checks the per-thread count, which divides this one)."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise frontend_error(f"{name}: batch must be >= 1 (an int), got {batch!r}")
    if outputs is not None and batch > 1:
        if batch > outputs:
            raise frontend_error(f"{name}: batch={batch} exceeds total output elements ({outputs})")
        if outputs % batch:
            raise frontend_error(
                f"{name}: batch={batch} must evenly divide the {outputs} output elements"
            )
    if annotations is not None and not isinstance(annotations, dict):
        raise frontend_error(
            f"{name}: annotations must be a dict, got {type(annotations).__name__} {annotations!r}"
        )


def _element_count(extents):
    """The product of `extents`, or None where one is not a constant."""
    n = 1
    for e in extents:
        e = const_int(e)
        if e is None:
            return None
        n *= e
    return n


def _nan_flag(name, nan_propagate, annotations):
    """TileLang's nan_propagate, given as the keyword or as the annotation
    {"nan_propagate": True} (the form its common reduce ops take)."""
    for what, value in (
        ("nan_propagate", nan_propagate),
        ('annotations["nan_propagate"]', (annotations or {}).get("nan_propagate", False)),
    ):
        if value not in (True, False) or not isinstance(value, int):
            raise frontend_error(f"{name}: {what} must be True or False, got {value!r}")
    return bool(nan_propagate) or bool((annotations or {}).get("nan_propagate", False))


def _reduce(kind, buffer, out, dim, clear, batch=1, annotations=None, nan_propagate=False):
    name = f"T.reduce_{kind}"
    _tuning(name, batch, annotations)
    ctx = builder_ctx.current(name)
    if _on_view(buffer) or _on_view(out):
        views.reduce_loops(
            ctx, name, kind, buffer, out, _int_arg(dim, f"{name} dim"), clear, nan_propagate
        )
        return
    dst = _region(out, f"{name} destination")
    _tuning(name, batch, annotations, _element_count(dst.extents))
    regions = [_region(buffer, f"{name} source").to_core(), dst.to_core()]
    attrs = {"kind": kind, "dim": _int_arg(dim, f"{name} dim"), "clear": bool(clear)}
    if nan_propagate:
        attrs["nan_propagate"] = True
    if batch > 1:
        attrs["batch"] = batch
    ctx.builder.tile_op("reduce", regions, [], attrs)


def reduce_max(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
    nan_propagate: bool = False,
) -> None:
    """out = max of `buffer` over `dim`; with clear=False, max(out, that). A NaN is
    ignored, as by the GPU's max and TileLang's CUDA code (numpy's fmax): a line of NaNs
    only gives -inf, where the fold starts. nan_propagate=True makes any NaN in a line
    give NaN (numpy's max)."""
    nan = _nan_flag("T.reduce_max", nan_propagate, annotations)
    _reduce("max", buffer, out, dim, clear, batch, annotations, nan)


def reduce_min(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
    nan_propagate: bool = False,
) -> None:
    """out = min of `buffer` over `dim`; with clear=False, min(out, that). NaN is
    ignored unless nan_propagate=True, as in T.reduce_max."""
    nan = _nan_flag("T.reduce_min", nan_propagate, annotations)
    _reduce("min", buffer, out, dim, clear, batch, annotations, nan)


def reduce_sum(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    """out = sum of `buffer` over `dim`; with clear=False, out + that."""
    _reduce("sum", buffer, out, dim, clear, batch, annotations)


def reduce_abssum(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    """out = sum of |buffer| over `dim` (always starts from zero, as in TileLang)."""
    _reduce("abssum", buffer, out, dim, True, batch, annotations)


def reduce_absmax(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
    nan_propagate: bool = False,
) -> None:
    """out = max of |buffer| over `dim`; with clear=False, max(out, that). NaN is
    ignored unless nan_propagate=True, as in T.reduce_max."""
    nan = _nan_flag("T.reduce_absmax", nan_propagate, annotations)
    _reduce("absmax", buffer, out, dim, clear, batch, annotations, nan)


def reduce_argmax(buffer: BufferLike, out: BufferLike, dim: ExprLike = -1) -> None:
    """out = the index along `dim` of the largest element of `buffer` (the first one
    on ties, as torch.argmax; NaNs are never chosen). `out` is an integer buffer of
    `buffer`'s shape without `dim` (or with it kept as 1)."""
    _arg_reduce("max", buffer, out, dim)


def reduce_argmin(buffer: BufferLike, out: BufferLike, dim: ExprLike = -1) -> None:
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


def reduce_bitand(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    _reduce("bitand", buffer, out, dim, clear, batch, annotations)


def reduce_bitor(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    _reduce("bitor", buffer, out, dim, clear, batch, annotations)


def reduce_bitxor(
    buffer: BufferLike,
    out: BufferLike,
    dim: ExprLike = -1,
    clear: bool = True,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    _reduce("bitxor", buffer, out, dim, clear, batch, annotations)


def _hint_attrs(name, annotations, reserved):
    """TileLang's annotations of a tile op, kept on it as attributes: they change
    nothing, and func.script() shows them (`test.scan="cumsum"`). A key naming one of the
    op's own arguments is refused; a value other than a number or a string is kept as
    its text."""
    attrs = {}
    for key, value in (annotations or {}).items():
        if key in reserved:
            raise frontend_error(
                f"{name}: the annotation {key!r} is an argument of {name}; pass it as {key}="
            )
        attrs[str(key)] = value if isinstance(value, (bool, int, float, str)) else str(value)
    return attrs


def _scan(kind, src, dst, dim, reverse, annotations=None):
    name = f"T.cum{kind}"
    _tuning(name, 1, annotations)
    hints = _hint_attrs(name, annotations, ("kind", "dim", "reverse"))
    ctx = builder_ctx.current(name)
    if _on_view(src) or (dst is not None and _on_view(dst)):
        views.scan_loops(ctx, name, kind, src, dst, _int_arg(dim, f"{name} dim"), bool(reverse))
        return
    src_region = _region(src, f"{name} source")
    dst_region = src_region if dst is None else _region(dst, f"{name} destination")
    attrs = {"kind": kind, "dim": _int_arg(dim, f"{name} dim"), "reverse": bool(reverse), **hints}
    ctx.builder.tile_op("cumsum", [src_region.to_core(), dst_region.to_core()], [], attrs)


def cumsum(
    src: BufferLike,
    dst: BufferLike | None = None,
    dim: ExprLike = 0,
    reverse: bool = False,
    annotations: dict[str, Any] | None = None,
) -> None:
    """Inclusive prefix sum of `src` along `dim` into `dst` (in place when dst is None);
    reverse=True sums from the end. `annotations` (TileLang's lowering hints) change
    nothing; func.script() shows them on the op."""
    _scan("sum", src, dst, dim, reverse, annotations)


def cummax(
    src: BufferLike,
    dst: BufferLike | None = None,
    dim: ExprLike = 0,
    reverse: bool = False,
    annotations: dict[str, Any] | None = None,
) -> None:
    """Inclusive running maximum of `src` along `dim`, like `cumsum`."""
    _scan("max", src, dst, dim, reverse, annotations)


class ReducerBuffer(Buffer):
    """A buffer made by T.alloc_reducer; remembers its reduction op and, once
    T.reducer_init opens an epoch on it, the epoch's state (TileLang's reducer API):
    `epoch` is None (never opened, the older API: a fragment updated in place),
    "open" or "closed"; `seed` is the epoch's starting value (a constant, or the
    register T.reducer_init stored it in); `epoch_loops` names the IR loops around the
    T.reducer_init that opened it. An epoch keeps its partials where the older API
    does: each thread combines the updates it runs into its own registers of the
    reducer, and T.finalize_reducer combines the threads' partials (the fragment
    reduction's lane and cross-warp steps), then the seed, once per output."""

    __slots__ = ("epoch", "epoch_loops", "reducer_op", "seed")
    epoch: str | None
    epoch_loops: list
    reducer_op: str
    seed: Any

    def _check_access(self, what):
        if self.epoch is not None:
            raise frontend_error(
                f"illegal {what} reducer '{self.name}': a reducer opened by T.reducer_init is "
                "updated only through T.reducer_update(acc[i], value) and read through the "
                "destination of T.finalize_reducer(acc, dst)"
            )

    def __getitem__(self, key):
        if self.epoch == "open":
            indices, _ = self._split_key(key)
            return ReducerElement(self, indices)
        self._check_access("read of")
        return super().__getitem__(key)

    def __setitem__(self, key, value):
        self._check_access("store to")
        super().__setitem__(key, value)


class ReducerElement:
    """`acc[i]` of a reducer whose epoch is open: the target of T.reducer_update,
    which is all it may be used for (its partial value is never readable)."""

    __slots__ = ("indices", "reducer")

    def __init__(self, reducer, indices):
        self.reducer, self.indices = reducer, indices

    def __tl_expr__(self):
        self.reducer._check_access("read of")

    def _illegal(self, *args):
        self.reducer._check_access("read of")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = _illegal
    __bool__ = __index__ = __neg__ = __lt__ = __le__ = __gt__ = __ge__ = _illegal

    def __repr__(self):
        return f"{self.reducer.name}{list(self.indices)}"


_REDUCER_OPS = ("sum", "max", "min", "bitand", "bitor", "bitxor")
_BITWISE_REDUCER_OPS = ("bitand", "bitor", "bitxor")


def _combine(op, a, b):
    """`a` op `b` for a reducer op: the same max / min as T.max / T.min and the fragment
    reduction (a NaN operand gives the other), `+`, `&`, `|`, `^`."""
    if op == "max":
        return _C.binary("Max", a, b)
    if op == "min":
        return _C.binary("Min", a, b)
    return {"sum": a.__add__, "bitand": a.__and__, "bitor": a.__or__, "bitxor": a.__xor__}[op](b)


def _has_infinity(dt):
    return dt.is_float() and (dt.bits >= 16 or dt == "float8_e5m2")


def _identity(op, dt):
    if op in ("sum", "bitor", "bitxor"):
        return _C.const(0, dt)
    if op == "bitand":
        return _C.const(-1 if dt.startswith("int") else (1 << dt.bits) - 1, dt)
    if _has_infinity(dt):
        return _C.infinity(dt, op == "max")
    return _C.min_value(dt) if op == "max" else _C.max_value(dt)


def alloc_reducer(
    shape: ShapeLike, dtype: DTypeLike, op: str = "sum", replication: str | None = None
) -> Any:
    """A block-wide reducer for `op` ("sum", "max", "min", or for integers "bitand",
    "bitor", "bitxor").

    With T.reducer_init / T.reducer_update / T.finalize_reducer(acc, dst) (TileLang's
    reducer epochs), every logical iteration of the T.Parallel loops that update it
    contributes exactly once, whatever threads run them. Used directly as a fragment
    (`acc[i] += x`, then T.finalize_reducer(acc)), it starts at the op's identity; on
    the CPU one executor runs the whole block, so it already holds the combined result
    and T.finalize_reducer is only a barrier.
    """
    if op not in _REDUCER_OPS:
        raise frontend_error(
            f"T.alloc_reducer op must be one of {', '.join(_REDUCER_OPS)}, got {op!r}"
        )
    if replication not in (None, "all", "none"):
        raise frontend_error(
            f"T.alloc_reducer replication must be None, 'all' or 'none', got {replication!r}"
        )
    dt = make_dtype(dtype)
    if op in _BITWISE_REDUCER_OPS and not dt.is_int():
        # AssertionError, as TileLang raises it for this mistake.
        raise AssertionError(
            f"T.alloc_reducer: bitwise reducer op '{op}' requires an integer dtype, got {dt}"
        )
    ctx = builder_ctx.current("T.alloc_reducer")
    shape = [to_value(s) for s in shape] if isinstance(shape, (list, tuple)) else [to_value(shape)]
    handle = ctx.builder.alloc(ctx.take_name("reducer"), shape, dt, "local.fragment")
    buf = ReducerBuffer(handle)
    buf.reducer_op = op
    buf.epoch = None
    buf.seed = None
    ctx.builder.fill(buf.full_region().to_core(), _identity(op, dt))
    return buf


def _reducer(x, what):
    if not isinstance(x, ReducerBuffer):
        raise frontend_error(f"{what} expects a buffer made by T.alloc_reducer, got {x!r}")
    return x


def reducer_init(reducer: BufferLike, init: ExprLike | None = None) -> None:
    """Opens an epoch of `reducer`: its outputs start at `init` (a value of the
    reducer's dtype; Python numbers are converted), else at the op's identity. `init`
    is read here, once; it is combined once into every output."""
    what = "T.reducer_init"
    ctx = builder_ctx.current(what)
    acc = _reducer(reducer, what)
    if acc.epoch == "open":
        raise frontend_error(
            f"double T.reducer_init of reducer '{acc.name}': its epoch is already open; "
            "close it with T.finalize_reducer(acc, dst) first"
        )
    seed = None
    if init is not None:
        seed = to_value(init)
        if isinstance(seed, (bool, int, float)):
            seed = _C.const(seed, acc.dtype)
        elif seed.dtype.name != acc.dtype:
            raise frontend_error(
                f"T.reducer_init: the starting value's dtype {seed.dtype.name} does not match "
                f"reducer '{acc.name}' of dtype {acc.dtype}; cast it (T.cast(value, "
                f"'{acc.dtype}'))"
            )
        elif seed.const_value() is None:
            # Read here, once: later stores into what the value reads change nothing.
            handle = ctx.builder.alloc(
                ctx.take_name(f"{acc.name}_seed"), [1], acc.dtype, "local", in_kernel_frame=True
            )
            ctx.builder.store(handle, [0], seed)
            seed = wrap_buffer(handle)[0]
    acc.seed = seed
    acc.epoch = "open"
    acc.epoch_loops = tuple(ctx.loop_ids)  # the loops the epoch's init runs in
    ctx.__dict__.setdefault("open_reducers", []).append(acc)
    # Every thread's partials start at the identity (the seed joins once, at finalize).
    ctx.builder.fill(acc.full_region().to_core(), _identity(acc.reducer_op, acc.dtype))


def reducer_update(target: str, value: ExprLike) -> None:
    """Combines `value` into one output of a reducer, `T.reducer_update(acc[i], v)`,
    inside a T.Parallel loop: once per logical iteration of the loop."""
    what = "T.reducer_update"
    ctx = builder_ctx.current(what)
    if isinstance(target, ReducerElement):
        acc, indices = target.reducer, target.indices
    else:
        element = ctx.element_of(target) if isinstance(target, _C.Expr) else None
        if element is None or not isinstance(element[0], ReducerBuffer):
            raise frontend_error(
                f"{what} expects `acc[indices]` of a reducer made by T.alloc_reducer as its "
                f"first argument, got {target!r}"
            )
        acc, indices = element
    if acc.epoch != "open":
        raise frontend_error(
            f"{what} of reducer '{acc.name}' before T.reducer_init: open its epoch with "
            "T.reducer_init(acc) first"
        )
    if "parallel" not in ctx.loop_kinds:
        raise frontend_error(
            f"{what} of reducer '{acc.name}' outside any T.Parallel loop: every thread would "
            "contribute; update it inside `for i in T.Parallel(...)`"
        )
    v = to_value(value)
    v = _C.const(v, acc.dtype) if isinstance(v, (bool, int, float)) else _C.cast(v, acc.dtype)
    # The thread running this iteration combines it into its own partial (the loop's
    # layout runs each logical iteration once).
    key = tuple(indices)
    Buffer.__setitem__(acc, key, _combine(acc.reducer_op, Buffer.__getitem__(acc, key), v))


def finalize_reducer(
    reducer: BufferLike,
    dst: BufferLike | None = None,
    batch: int = 1,
    annotations: dict[str, Any] | None = None,
) -> None:
    """Closes a reducer: with `dst` (a fragment or shared buffer of the reducer's shape
    and dtype), writes the combined outputs of the epoch opened by T.reducer_init there;
    without it (a reducer used as a fragment), makes its values visible to the block.
    `batch` and `annotations` tune TileLang's collectives and change no result."""
    what = "T.finalize_reducer"
    _tuning(what, batch, annotations)
    ctx = builder_ctx.current(what)
    acc = _reducer(reducer, what)
    _tuning(what, batch, annotations, _element_count(acc.shape))
    if dst is None:
        if acc.epoch is not None:
            raise frontend_error(
                f"{what} of reducer '{acc.name}' opened by T.reducer_init needs a destination: "
                f"{what}(acc, dst)"
            )
        # Combines the partials the block's threads hold of each element (the register
        # lowering's cross-thread reduction); one executor per block holds them whole.
        region = acc.full_region().to_core()
        attrs = {"kind": acc.reducer_op, "dim": 0, "finalize": 1}
        if batch > 1:
            attrs["batch"] = batch
        ctx.builder.tile_op("reduce", [region, region], [], attrs)
        ctx.builder.sync_threads()
        return
    if acc.epoch != "open":
        raise frontend_error(
            f"{what} of reducer '{acc.name}' without an open epoch: call T.reducer_init(acc) "
            "before the updates"
        )
    # The epoch runs init, updates, finalize once per iteration of the loops around the
    # init: a finalize outside one of them would leave the epochs of the other
    # iterations open (each next init reopens an open epoch), one inside a further loop
    # would close the epoch on that loop's first iteration and update it closed after.
    if tuple(ctx.loop_ids) != acc.epoch_loops:
        where = (
            "outside a loop that encloses its T.reducer_init"
            if len(ctx.loop_ids) < len(acc.epoch_loops)
            else "inside a loop that does not enclose its T.reducer_init"
        )
        raise frontend_error(
            f"{what} of reducer '{acc.name}' is not in the scope of its T.reducer_init: it "
            f"is {where}; finalize the epoch in the loop body that opens it (an `if` "
            "around the finalize is fine)"
        )
    out = to_value(dst)
    if not isinstance(out, Buffer) or isinstance(out, ReducerBuffer):
        raise frontend_error(
            f"{what} destination must be a buffer other than a reducer, got {dst!r}"
        )
    if out.dtype != acc.dtype or list(out.shape) != list(acc.shape):
        raise frontend_error(
            f"{what} destination '{out.name}' must have the reducer's shape {list(acc.shape)} "
            f"and dtype {acc.dtype}, got {list(out.shape)} {out.dtype}"
        )
    region = acc.full_region().to_core()
    attrs = {"kind": acc.reducer_op, "dim": 0, "finalize": 1}
    if batch > 1:
        attrs["batch"] = batch
    ctx.builder.tile_op("reduce", [region, region], [], attrs)
    acc.epoch = "closed"
    ctx.open_reducers.remove(acc)
    ix = tuple(
        ctx.builder.begin_for(f"i{d}", 0, n, "parallel", {}) for d, n in enumerate(acc.shape)
    )
    total = Buffer.__getitem__(acc, ix)
    out[ix] = total if acc.seed is None else _combine(acc.reducer_op, acc.seed, total)
    for _ in ix:
        ctx.builder.end_for()


def check_reducers_closed(ctx):
    """At the end of a kernel: an epoch left open is a mistake."""
    for acc in getattr(ctx, "open_reducers", []):
        raise frontend_error(
            f"reducer '{acc.name}' was opened by T.reducer_init but never finalized; call "
            "T.finalize_reducer(acc, dst) to read its result"
        )


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
    "reducer_init",
    "reducer_update",
]
