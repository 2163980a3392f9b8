"""Asynchronous copies written by hand, with TileLang's names: `T.ptx_cp_async(dst, src,
num_elems, predicate=None)` issues one cp.async of 4, 8 or 16 bytes from global to
shared memory, `T.ptx_commit_group()` closes this thread's issued copies into a group,
`T.ptx_wait_group(n)` waits until at most n groups are in flight, and
`T.async_copy(src, dst)` copies a global tile into shared memory for a later wait.

On the cuda targets the first three are the cp.async instructions
(device/cuda/copy_async.cuh; the emulator lands each copy at the wait that covers it,
so a missing wait reads stale data there too). On the cpu target a copy happens when it
is issued and commit / wait do nothing. `T.async_copy` copies a global tile into shared memory as T.copy does, on
sm_80+ with a cp.async per run and a commit and without a wait (the kernel waits with
T.ptx_wait_group, as in TileLang; elsewhere, and in a T.Pipelined loop, whose pipeline
waits, it completes as T.copy does).
"""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, Expr, ExprLike

from . import builder_ctx
from .buffer import Buffer, Region, const_int, to_value
from .builder_ctx import IR_LOOP, frontend_error
from .dtypes import dtype as make_dtype

_C = builder_ctx._C

_SHARED = ("shared", "shared.dyn")
# The device calls (src/ir/device_calls.def); a name with template arguments is
# f"{name}<{args}>".
_CP_ASYNC = "tl::cp_async_gs"
_CP_ASYNC_CONDITIONAL = "tl::cp_async_gs_conditional"
_CP_ASYNC_WAIT = "tl::cp_async_wait"


def _address(what, name, ptr, scopes, memory):
    """The buffer `ptr` (T.access_ptr / T.address_of of an element) points into, checked."""
    ptr = to_value(ptr)
    args = ptr.call_args if isinstance(ptr, _C.Expr) and ptr.call_name == "address_of" else []
    buf = args[0].load_buffer if args else None
    if buf is None:
        raise frontend_error(
            f'{what}: {name} must be an address such as T.access_ptr(A[i], "r") or '
            f"T.address_of(A[i]), got {ptr!r}"
        )
    if buf.scope not in scopes:
        raise frontend_error(
            f"{what}: {name} must point into {memory} memory, but buffer '{buf.name}' is in "
            f"'{buf.scope}' memory"
        )
    return ptr, make_dtype(buf.dtype.name)


def ptx_cp_async(
    dst_access_ptr: BufferLike,
    src_access_ptr: BufferLike,
    num_elems: ExprLike,
    predicate: ExprLike | None = None,
) -> None:
    """One cp.async of `num_elems` elements (4, 8 or 16 bytes) from global memory at
    `src_access_ptr` to shared memory at `dst_access_ptr`; where `predicate` is false the
    destination is zero-filled and the source is not read."""
    what = "T.ptx_cp_async"
    ctx = builder_ctx.current(what)
    dst, dt = _address(what, "the destination", dst_access_ptr, _SHARED, "shared")
    src, st = _address(what, "the source", src_access_ptr, ("global",), "global")
    n = const_int(to_value(num_elems))
    if n is None or n < 1:
        raise frontend_error(f"{what}: num_elems must be a positive constant, got {num_elems!r}")
    if dt.bits != st.bits:
        raise frontend_error(
            f"{what}: the destination holds {dt} and the source {st}; copy between equal widths"
        )
    lanes = _vectorized_lanes(ctx, n, dt.bits, (dst, src)) if predicate is None else None
    if lanes is not None:
        # TileLang's vectorizer widens the copy of a T.vectorized loop's iterations into one
        # cp.async of all their elements: issued by the first iteration, at its addresses.
        var, lo, extent = lanes
        wide = n * extent * dt.bits
        if wide not in (32, 64, 128):
            raise frontend_error(
                f"{what} in a T.vectorized loop of {extent} iterations: {extent} x {n} element(s) of "
                f"{dt} are {wide // 8 if wide % 8 == 0 else wide / 8} bytes; cp.async copies 4, 8 "
                "or 16 bytes (make the loop's elements fill one of those)"
            )
        ctx.builder.begin_if(var == lo)
        name = f"{_CP_ASYNC}<{wide // 8}>"
        ctx.builder.evaluate(_C.call_extern(make_dtype("void"), name, [dst, src]))
        ctx.builder.end_if()
        return
    bits = n * dt.bits
    if bits not in (32, 64, 128):
        raise frontend_error(
            f"{what}: {n} element(s) of {dt} are {bits // 8 if bits % 8 == 0 else bits / 8} bytes; "
            "cp.async copies 4, 8 or 16 bytes (one call per run of elements, not one per "
            "element of a T.vectorized loop)"
        )
    args = [dst, src]
    name = f"{_CP_ASYNC}<{bits // 8}>"
    if predicate is not None:
        pred = to_value(predicate)
        if not isinstance(pred, (bool, _C.Expr)):
            raise frontend_error(f"{what}: predicate must be a condition, got {pred!r}")
        args.append(pred)
        name = f"{_CP_ASYNC_CONDITIONAL}<{bits // 8}>"
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), name, args))


def _vectorized_lanes(ctx, n, bits, ptrs):
    """(variable, min, constant extent) of the T.vectorized loop directly around a
    T.ptx_cp_async whose addresses each advance `n` elements per iteration (the loop's
    copies form one contiguous run) and whose run starts, at the loop's first
    iteration, provably at a multiple of the run's size (tensors and shared tiles start
    16-byte aligned: a cp.async of 4, 8 or 16 bytes at a misaligned address faults on
    the GPU); None otherwise (each iteration then issues its own copy)."""
    kind, crossed_if = ctx.innermost_loop()
    if kind != IR_LOOP or crossed_if or not ctx.loop_kinds or ctx.loop_kinds[-1] != "vectorized":
        return None
    loop = ctx.loop_ranges[-1]
    if loop is None:
        return None
    var, lo, extent = loop
    extent = to_value(extent)
    extent = const_int(_C.simplify_expr(extent) if isinstance(extent, _C.Expr) else extent)
    if extent is None or extent < 2:
        return None
    for ptr in ptrs:
        found = ctx.element_of(ptr.call_args[0])
        if found is None:
            return None
        buf, indices = found
        offset = to_value(buf.elem_offset_of(list(indices)))
        step = _C.simplify_expr(_C.substitute_var(offset, var, var + 1) - offset)
        if const_int(step) != n:
            return None
        run = n * extent
        if run * bits not in (32, 64, 128):
            continue  # refused by the caller with the run's size
        first = to_value(lo)
        first = first if isinstance(first, _C.Expr) else _C.const(int(first), var.dtype)
        start = _C.substitute_var(offset, var, first)
        if const_int(_C.simplify_expr(start % run)) != 0:
            return None
    return var, lo, extent


def ptx_commit_group() -> None:
    """Closes the copies this thread issued since the last commit into one group."""
    ctx = builder_ctx.current("T.ptx_commit_group")
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), "tl::cp_async_commit", []))


def ptx_wait_group(num: ExprLike = 0) -> None:
    """Waits until at most `num` of this thread's committed groups are in flight; the
    copies are visible to the other threads after a barrier that follows."""
    what = "T.ptx_wait_group"
    ctx = builder_ctx.current(what)
    n = const_int(to_value(num))
    if n is None or n < 0:
        raise frontend_error(
            f"{what}: the number of groups left in flight must be a constant >= 0, got {num!r}"
        )
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), f"{_CP_ASYNC_WAIT}<{n}>", []))


def _buffer_of(x):
    x = to_value(x)
    if isinstance(x, Buffer):
        return x
    if isinstance(x, Region):
        return x.buffer
    if isinstance(x, _C.Expr):
        found = builder_ctx.current("T.async_copy").element_of(x)
        if found is not None:
            return found[0]
    return None


def async_copy(
    src: BufferLike,
    dst: BufferLike,
    *,
    coalesced_width: int | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any = None,
) -> Expr:
    """Copies a global tile (`src`) into shared memory (`dst`), as T.copy takes them, for
    a later T.ptx_wait_group (cuda sm_80+: a cp.async of each run, then a commit, no
    wait). In a T.Pipelined loop it is the loop's copy, which the pipeline makes
    asynchronous and waits for."""
    from .ops import copy

    ctx = builder_ctx.current("T.async_copy")
    sb, db = _buffer_of(src), _buffer_of(dst)
    if sb is not None and db is not None and not (sb.scope == "global" and db.scope in _SHARED):
        raise frontend_error(
            f"T.async_copy only supports global->shared/shared.dyn copies, got '{sb.name}' "
            f"({sb.scope}) -> '{db.name}' ({db.scope}); use T.copy"
        )
    ann = dict(annotations or {})
    elements = isinstance(to_value(src), _C.Expr) and isinstance(to_value(dst), _C.Expr)
    if not ctx.pipelined_loops and not (elements and not ann):
        # src/ir/attr_keys.def: kAsyncIssueAttr; never TMA (a cp.async copy).
        ann["tl.async_issue"] = 1
        ann.setdefault("disable_tma", True)
    return copy(src, dst, coalesced_width=coalesced_width, annotations=ann, loop_layout=loop_layout)


__all__ = ["async_copy", "ptx_commit_group", "ptx_cp_async", "ptx_wait_group"]
