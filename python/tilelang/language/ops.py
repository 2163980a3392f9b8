"""Allocations and tile operators (`T.alloc_shared`, `T.copy`, `T.fill`, `T.gemm` ...):
each turns its Python operands into buffers/regions and calls one builder method; the C++
op checks the operands and reports mistakes at the user's line."""

from __future__ import annotations

from enum import IntEnum
from typing import Any

from tilelang.types import BufferLike, DTypeLike, ExprLike, ShapeLike

from . import builder_ctx, views
from .buffer import Buffer, Region, VarBuffer, const_int, to_value, wrap_buffer
from .builder_ctx import frontend_error
from .dtypes import dtype as make_dtype
from .pointers import AddressTensor
from .views import BufferView

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


def alloc_shared(shape: ShapeLike, dtype: DTypeLike, scope: str = "shared.dyn") -> Buffer:
    return _alloc(shape, dtype, scope, "shared")


def alloc_fragment(shape: ShapeLike, dtype: DTypeLike, scope: str = "local.fragment") -> Buffer:
    return _alloc(shape, dtype, scope, "frag")


def alloc_local(shape: ShapeLike, dtype: DTypeLike, scope: str = "local") -> Buffer:
    return _alloc(shape, dtype, scope, "local")


_ALLOC_BY_SCOPE = {
    "shared": alloc_shared,
    "shared.dyn": alloc_shared,
    "local.fragment": alloc_fragment,
    "local": alloc_local,
}


def alloc_global(shape: ShapeLike, dtype: DTypeLike, scope: str = "global") -> Buffer:
    """A global-memory workspace that the kernels of the function share (e.g. a
    split-KV attention kernel's partial results, read by a combine kernel). Called in
    the function body outside every T.Kernel block. It is no parameter the caller
    sees: the runtime allocates it on every call (torch's allocator on the inputs'
    device when torch tensors are passed, numpy otherwise), uninitialized, with the
    shape its symbolic sizes get from the arguments, and passes it to each kernel."""
    if scope != "global":
        raise frontend_error(
            f"T.alloc_global allocates global memory; scope={scope!r} is not 'global' "
            "(use T.alloc_shared, T.alloc_fragment or T.alloc_local for on-chip memory)"
        )
    ctx = builder_ctx.current("T.alloc_global")
    name = ctx.take_name("workspace")
    return wrap_buffer(ctx.builder.workspace(name, _shape_list(shape), make_dtype(dtype)))


def alloc_buffer(shape: ShapeLike, dtype: DTypeLike = "float32", scope: str = "global") -> Buffer:
    """TVM's allocation, as TileLang kernels also write it: `scope` picks
    T.alloc_shared ("shared", "shared.dyn"), T.alloc_fragment ("local.fragment") or
    T.alloc_local ("local"); "global" outside every T.Kernel block is T.alloc_global.
    A global tensor inside a kernel is a parameter or a workspace instead. Another
    scope at the top of a body without T.Kernel is TVM's root-block allocation: it opens
    the body's kernel (one block of one thread until T.thread_binding loops set its axes)."""
    ctx = builder_ctx.current("T.alloc_buffer")
    if scope == "global" and not ctx.builder.in_kernel:
        return alloc_global(shape, dtype, scope)
    make = _ALLOC_BY_SCOPE.get(scope)
    if make is not None and not ctx.builder.in_kernel and not ctx.frames:
        from .kernel import open_function_kernel  # kernel imports this module's imports

        open_function_kernel(ctx, f"T.alloc_buffer(..., scope={scope!r})")
    if make is None:
        raise frontend_error(
            f"T.alloc_buffer: scope {scope!r} is not one a kernel allocates; use one of "
            f"{sorted(_ALLOC_BY_SCOPE)} (a global scratch tensor is a parameter of the kernel, "
            "or a T.alloc_global workspace allocated before the kernels)"
        )
    return make(shape, dtype, scope)


def alloc_var(
    dtype: DTypeLike, *args: Any, init: ExprLike | None = None, scope: str = "local.var"
) -> Any:
    """A scalar register; `x = value` on its Python name stores into it.

    As in TileLang: `T.alloc_var(dtype, init)`, `(dtype, init, scope)`, `(dtype, scope)`
    with the scope a string, or `init=` / `scope=` by keyword. A register var
    (scope "local.var") without an initial value starts at zero."""
    if len(args) > 2:
        raise TypeError(
            f"T.alloc_var takes at most an initial value and a scope after the dtype, "
            f"got {len(args)} positional arguments"
        )
    if len(args) == 1 and isinstance(args[0], str) and init is None and scope == "local.var":
        scope = args[0]
    elif args:
        if init is not None:
            raise TypeError("T.alloc_var takes one initial value (positionally or as init=)")
        init = args[0]
        if len(args) == 2:
            if not isinstance(args[1], str):
                raise TypeError(
                    f"T.alloc_var(dtype, init, scope): scope must be a string, got {args[1]!r}"
                )
            scope = args[1]
    if init is None and scope == "local.var":
        init = 0
    if make_dtype(dtype).lanes > 1 and scope == "local.var":
        from .vector import alloc_vector_var  # vector imports this module's imports

        return alloc_vector_var(dtype, init)
    buf = _alloc([1], dtype, scope, "var")
    if init is not None:
        buf.store(init)
    return buf


class GemmWarpPolicy(IntEnum):
    """How T.gemm spreads a block's warps over the M and N dimensions of C."""

    Square = 0
    FullRow = 1
    FullCol = 2


_EVICTION_POLICIES = {"evict_normal": 0, "evict_first": 1, "evict_last": 2}


def _copy_operand(x, side):
    """(buffer or view, mins, extents or None, whole) for one side of T.copy."""
    x = to_value(x)
    if isinstance(x, (Buffer, BufferView, AddressTensor)):
        return x, [0] * x.ndim, list(x.shape), True
    if isinstance(x, Region):
        return x.buffer, x.mins, x.extents, False
    if isinstance(x, _C.Expr):
        element = builder_ctx.current("T.copy").element_of(x)
        if element is not None:
            return element[0], list(element[1]), None, False
    raise frontend_error(
        f"T.copy {side} must be a buffer, a slice such as A[0:32, :] or an element A[i, j] "
        f"used as a start point; got {type(x).__name__} {x!r}"
    )


_PREFERRED_INSTRUCTIONS = ("tma", "cp_async", "sync")


def _copy_attrs(
    coalesced_width, disable_tma, eviction_policy, annotations, prefer_instruction=None
):
    attrs = dict(annotations or {})
    prefer = attrs.pop("prefer_instruction", prefer_instruction)
    if prefer is not None:
        if prefer not in _PREFERRED_INSTRUCTIONS:
            raise frontend_error(
                f"T.copy prefer_instruction must be one of {', '.join(map(repr, _PREFERRED_INSTRUCTIONS))} "
                f"or None, got {prefer!r}"
            )
        # A hint, as in TileLang: "sync" keeps the copy off TMA; "tma" and "cp_async" leave
        # the choice to the compiler, which takes them where the copy qualifies.
        if prefer == "sync":
            disable_tma = True
    if coalesced_width is not None and "coalesced_width" not in attrs:
        width = const_int(to_value(coalesced_width))
        if width is None or width <= 0:
            raise frontend_error(
                f"T.copy coalesced_width must be a positive integer, got {coalesced_width!r}"
            )
        attrs["coalesced_width"] = width
    if disable_tma and "disable_tma" not in attrs:
        attrs["disable_tma"] = True
    if eviction_policy is not None and "eviction_policy" not in attrs:
        if eviction_policy not in _EVICTION_POLICIES:
            raise frontend_error(
                f"T.copy eviction_policy must be one of {', '.join(_EVICTION_POLICIES)} or None, "
                f"got {eviction_policy!r}"
            )
        attrs["eviction_policy"] = _EVICTION_POLICIES[eviction_policy]
    return attrs


def _shape_str(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def copy(
    src: BufferLike,
    dst: BufferLike,
    coalesced_width: int | None = None,
    disable_tma: bool = False,
    eviction_policy: str | None = None,
    *,
    prefer_instruction: str | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any = None,
) -> None:
    """Copies a tile between any two memories (TileLang's T.copy).

    Each side is a whole buffer, a slice (`Q[b, i:i + 64, h, :]`) or an element used as a
    start point (`A[by * 64, k * 32]`, extents taken from the other side). Extents are
    matched right-aligned after dropping unit dimensions; parts outside a tensor are
    predicated: reads give 0 (or the value of T.annotate_safe_value), writes are dropped.
    `coalesced_width`, `disable_tma`, `eviction_policy`, `prefer_instruction` ("tma",
    "cp_async" or "sync": TileLang's preferred lowering; "sync" keeps the copy off TMA,
    the others leave the choice to the compiler), `annotations` and `loop_layout` are
    hints for GPU targets; the CPU accepts and ignores them.
    """
    ctx = builder_ctx.current("T.copy")
    s_buf, s_min, s_ext, s_whole = _copy_operand(src, "source")
    d_buf, d_min, d_ext, d_whole = _copy_operand(dst, "destination")
    attrs = _copy_attrs(
        coalesced_width, disable_tma, eviction_policy, annotations, prefer_instruction
    )
    if s_whole and d_whole and not views.same_shape(s_buf.shape, d_buf.shape):
        raise frontend_error(
            f"T.copy of two whole buffers needs equal shapes, but source '{s_buf.name}' has "
            f"shape {_shape_str(s_buf.shape)} and destination '{d_buf.name}' has "
            f"{_shape_str(d_buf.shape)}; slice one side to the other's shape "
            f"(e.g. {d_buf.name}[0:{s_buf.shape[0]}, ...]) to copy a part"
        )
    if s_ext is None and d_ext is None:
        if (
            not attrs
            or isinstance(s_buf, (BufferView, AddressTensor))
            or isinstance(d_buf, (BufferView, AddressTensor))
        ):
            # Two elements: a plain store, converted to the destination's dtype.
            value = _C.cast(_element(s_buf, s_min), d_buf.dtype)
            views.store(ctx, d_buf, d_min, value)
            return
        # With annotations, a copy of one element (TileLang keeps it a tile op).
        s_ext, d_ext = [1] * len(s_min), [1] * len(d_min)
    safe = views.safe_value_of(ctx, s_buf)
    if isinstance(s_buf, (BufferView, AddressTensor)) or isinstance(
        d_buf, (BufferView, AddressTensor)
    ):
        views.copy_loops(ctx, (s_buf, s_min, s_ext), (d_buf, d_min, d_ext), safe)
        return
    if safe is not None:
        attrs["safe_value"] = safe
    ctx.builder.copy(s_buf.handle, s_min, s_ext, d_buf.handle, d_min, d_ext, attrs)


def _element(buf, indices):
    if isinstance(buf, (BufferView, AddressTensor)):
        return buf.load(indices)
    return _C.buffer_load(buf.handle, indices)


def _region(x, what, ctx=None):
    x = to_value(x)
    view = x.buffer if isinstance(x, Region) else x
    if isinstance(view, BufferView):
        raise frontend_error(
            f"{what} must be a buffer or a slice of one, got '{view.name}', a view of "
            f"'{view.base.name}' (shape {list(view.shape)}, {view.dtype}); this operator does "
            f"not take views: T.copy the view into a buffer of that shape and dtype first"
        )
    if isinstance(x, Buffer):
        return x.full_region()
    if isinstance(x, Region):
        return x
    element = ctx.element_of(x) if ctx is not None and isinstance(x, _C.Expr) else None
    if element is not None:  # one element, as a region of one (T.fill(s[0], 0))
        buffer, indices = element
        return Region(buffer, indices, [1] * len(indices))
    raise frontend_error(
        f"{what} must be a buffer, a slice of one or one element, got {type(x).__name__} {x!r}"
    )


def fill(buffer: BufferLike, value: ExprLike) -> None:
    buffer = to_value(buffer)
    if isinstance(buffer, BufferView):
        buffer = buffer.full_region()
    if isinstance(buffer, Region) and isinstance(buffer.buffer, BufferView):
        views.fill_region(builder_ctx.current("T.fill"), buffer, to_value(value))
        return
    ctx = builder_ctx.current("T.fill")
    ctx.builder.fill(_region(buffer, "T.fill target", ctx).to_core(), to_value(value))


def clear(buffer: BufferLike) -> None:
    fill(buffer, 0)


def gemm(
    A: BufferLike,
    B: BufferLike,
    C: BufferLike,
    transpose_A: bool = False,
    transpose_B: bool = False,
    policy: Any = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
    mbar: BufferLike | None = None,
) -> None:
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


# TileLang's second gemm front end: the same operation and arguments.
gemm_v2 = gemm


def sync_threads(barrier_id: ExprLike | None = None, arrive_count: ExprLike | None = None) -> None:
    """A barrier of the whole block; `T.sync_threads(barrier_id, arrive_count)` a named
    barrier (CUDA `bar.sync id, count`, id 1-15) of the `arrive_count` threads, whole
    warps, that call it with that id: the others never reach it. Without
    `arrive_count` every thread of the block takes part."""
    ctx = builder_ctx.current("T.sync_threads")
    if barrier_id is None and arrive_count is None:
        ctx.builder.sync_threads()
        return
    if arrive_count is None and ctx.kernel_extents is not None:
        arrive_count = 1
        for extent in ctx.kernel_extents[1]:
            arrive_count *= extent
    ids, count = const_int(to_value(barrier_id)), const_int(to_value(arrive_count))
    if ids is None or not 1 <= ids <= 15:
        raise frontend_error(
            f"T.sync_threads: barrier_id must be a constant in [1, 15] (0 is the block's barrier), got {barrier_id!r}"
        )
    if count is None or count <= 0 or count % 32:
        raise frontend_error(
            f"T.sync_threads: arrive_count must be a constant multiple of 32 (whole warps), got {arrive_count!r}"
        )
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), "tl::named_barrier_sync", [ids, count]))


def named_barrier_arrive(barrier_id: ExprLike, arrive_count: ExprLike) -> None:
    """`T.named_barrier_arrive(barrier_id, arrive_count)`: one arrival at the named
    barrier `barrier_id` (1-15) of `arrive_count` threads (whole warps) without waiting
    for it (CUDA `bar.arrive`): the threads that wait there with
    `T.sync_threads(barrier_id, arrive_count)` go on once that many have arrived."""
    ctx = builder_ctx.current("T.named_barrier_arrive")
    ids, count = const_int(to_value(barrier_id)), const_int(to_value(arrive_count))
    if ids is None or not 1 <= ids <= 15:
        raise frontend_error(
            f"T.named_barrier_arrive: barrier_id must be a constant in [1, 15], got {barrier_id!r}"
        )
    if count is None or count <= 0 or count % 32:
        raise frontend_error(
            "T.named_barrier_arrive: arrive_count must be a constant multiple of 32 (whole warps), "
            f"got {arrive_count!r}"
        )
    ctx.builder.evaluate(
        _C.call_extern(make_dtype("void"), "tl::named_barrier_arrive", [ids, count])
    )


def sync_grid() -> None:
    """A barrier of every thread of every block of the launch (CUDA cooperative groups'
    `grid.sync()`): writes to global memory before it are visible to all blocks after it.
    Every thread of every block must call it, and all blocks must be resident at once; the
    launch checks that the grid fits (a persistent kernel launches about one block per SM)."""
    builder_ctx.current("T.sync_grid").builder.sync_grid()


def tvm_storage_sync(scope: str) -> None:
    """TVM's storage sync, as TileLang kernels write it: "shared" / "shared.dyn" is a
    barrier of the whole block (T.sync_threads()), "warp" one of the warp
    (T.sync_warp()), "global" one of the whole grid (T.sync_grid())."""
    if scope in ("shared", "shared.dyn"):
        sync_threads()
    elif scope == "warp":
        from .warp import sync_warp

        sync_warp()
    elif scope == "global":
        sync_grid()
    else:
        raise frontend_error(
            f'T.tvm_storage_sync takes "shared", "shared.dyn", "warp" or "global", got {scope!r}'
        )


def evaluate(expr: ExprLike) -> None:
    from .allreduce import DONE

    ctx = builder_ctx.current("T.evaluate")
    if expr is DONE:  # T.tvm_thread_allreduce emitted its statements already
        return
    ctx.builder.evaluate(to_value(expr))


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
    "named_barrier_arrive",
    "sync_grid",
    "sync_threads",
]
