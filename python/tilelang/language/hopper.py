"""Explicit Hopper control for hand-written schedules, with TileLang's names: warpgroup
regions (`with T.ws(g)`), mbarriers (`T.alloc_barrier`, `T.barrier_arrive`,
`T.barrier_wait`, `T.mbarrier_expect_tx`), TMA copies that complete on an mbarrier
(`T.tma_copy`) and wgmma gemms left in flight (`T.wgmma_gemm`, `T.wait_wgmma`).

Each call records a marker (a `tl.hopper.*` call, or a tile op with an attribute) that
src/transform/lower_explicit_hopper.cpp lowers on sm_90 / sm_90a and refuses, with the
user's line, on every other target: the target is only known when the kernel compiles.
"""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, Expr, ExprLike

from . import builder_ctx
from .buffer import Buffer, const_int, to_value, wrap_buffer
from .builder_ctx import KERNEL, PY_LOOP, frontend_error
from .dtypes import dtype as make_dtype
from .ops import GemmWarpPolicy, _copy_attrs, _copy_operand, _region
from .views import BufferView

_C = builder_ctx._C
_TMA_STORE_WAIT = "tl::tma_store_wait"  # device_calls.def's kTmaStoreWaitCall, <count, read>

WARPGROUP = 128  # threads of a warpgroup
MAX_ARRIVALS = (1 << 20) - 1  # an mbarrier counts at most 2^20 - 1 arrivals per phase
WARP_GROUP_FRAME = "warp group"  # the TraceContext.frames entry of an open T.ws


def _describe(x):
    if isinstance(x, _C.Expr):
        return f"{x.dtype} expression {x}"
    if isinstance(x, Buffer):
        return f"buffer '{x.name}'"
    return f"{type(x).__name__} {x!r}"


def _kernel(what):
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None:
        raise frontend_error(f"{what} must be called inside a `with T.Kernel(...)` block")
    return ctx


def _barriers(ctx):
    """Names of the buffers T.alloc_barrier made in this trace."""
    if not hasattr(ctx, "hopper_barriers"):
        ctx.hopper_barriers = set()
    return ctx.hopper_barriers


def _barrier_counts(ctx):
    """The arrival counts T.alloc_barrier gave each barrier buffer of this trace."""
    if not hasattr(ctx, "hopper_barrier_counts"):
        ctx.hopper_barrier_counts = {}
    return ctx.hopper_barrier_counts


def _marker(name, args, dtype="void"):
    return _C.call_extern(dtype, "tl.hopper." + name, args)


def _is_int_expr(x):
    return (
        isinstance(x, _C.Expr) and x.dtype.lanes == 1 and x.dtype.name.startswith(("int", "uint"))
    )


# ---- mbarriers


def alloc_barrier(arrive_count: ExprLike) -> Expr:
    """Shared-memory mbarriers, one per entry of `arrive_count` (an int: one barrier).

    Each phase of barrier i completes when arrive_count[i] arrivals (T.barrier_arrive by a
    thread, or one per T.tma_copy on it) have been made and the bytes its TMA copies expect
    have landed. Thread 0 initializes them, then the whole block waits once, so call it at
    the top of the T.Kernel body. Returns a buffer: `bar[i]` is barrier i (`bar` alone
    when there is one).
    """
    what = "T.alloc_barrier"
    ctx = _kernel(what)
    counts = list(arrive_count) if isinstance(arrive_count, (list, tuple)) else [arrive_count]
    if not counts:
        raise frontend_error(
            f"{what} arrive_count must be a positive integer or a non-empty list of them, got []"
        )
    for c in counts:
        c = to_value(c)
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_ARRIVALS:
            raise frontend_error(
                f"{what} arrive_count must be a positive integer up to {MAX_ARRIVALS} (the arrivals "
                f"that complete a phase) or a list of them, got {_describe(c)}"
            )
    inner = ctx.frames[ctx.frames.index(KERNEL) + 1 :] if KERNEL in ctx.frames else []
    if any(kind != PY_LOOP for kind in inner):
        where = "T.ws region" if WARP_GROUP_FRAME in inner else "loop or `if`"
        raise frontend_error(
            f"{what} must be called at the top level of the T.Kernel body, not inside a {where}: "
            "every thread of the block waits there for the barriers' initialization"
        )
    handle = ctx.builder.alloc(ctx.take_name("mbarrier"), [len(counts)], "uint64", "shared.dyn")
    first = _C.buffer_load(handle, [0])
    args = [first] + [_C.const(int(c), "int32") for c in counts]
    ctx.builder.evaluate(_marker("init_barriers", args))
    _barriers(ctx).add(handle.name)
    _barrier_counts(ctx)[handle.name] = [int(to_value(c)) for c in counts]
    return wrap_buffer(handle)


def create_list_of_mbarrier(*arrive_counts: Any) -> Expr:
    """TileLang's older form of T.alloc_barrier: the kernel's list of mbarriers, one per
    count (`T.create_list_of_mbarrier([128, 128])` or `(128, 128)`), which the mbarrier
    calls then name by index (`T.mbarrier_arrive(mbarrier=1)`)."""
    what = "T.create_list_of_mbarrier"
    ctx = _kernel(what)
    counts = (
        arrive_counts[0]
        if len(arrive_counts) == 1 and isinstance(arrive_counts[0], (list, tuple))
        else arrive_counts
    )
    if getattr(ctx, "mbarrier_list", None) is not None:
        raise frontend_error(f"{what}: the kernel has its list of mbarriers already; make one list")
    ctx.mbarrier_list = alloc_barrier(list(counts))
    return ctx.mbarrier_list


def _block_threads(ctx):
    """The threads of the kernel's block (T.Kernel's constant thread extents)."""
    threads = 1
    for e in ctx.kernel_extents[1]:
        threads *= const_int(e) or 1
    return threads


def _cluster_rank(what, ctx, value, name):
    """`value` checked as the rank of a block of the kernel's thread block cluster (an int
    below the cluster's size, or an int expression); returns it and the cluster's size."""
    cluster = 1
    for n in getattr(ctx, "kernel_cluster", None) or []:
        cluster *= n
    rank = to_value(value)
    if isinstance(rank, bool) or not (isinstance(rank, int) or _is_int_expr(rank)):
        raise frontend_error(
            f"{what} {name} must be an int or an int expression, got {_describe(rank)}"
        )
    if isinstance(rank, int) and not 0 <= rank < cluster:
        raise frontend_error(
            f"{what} {name} {rank} is outside the kernel's clusters of {cluster} blocks "
            "(T.Kernel(..., cluster_dims=...))"
        )
    return rank, cluster


def _arrive_remote(ctx, bar, rank):
    """An arrival on block `rank`'s copy of mbarrier `bar`, with a cluster-scope release."""
    from .math import address_of, call_extern

    ctx.builder.evaluate(
        call_extern("void", "tl::mbarrier_arrive_cluster_release", address_of(bar), rank)
    )


def _barrier(what, bar, name="barrier"):
    """The mbarrier element `bar` names (a T.alloc_barrier buffer of one, or bar[i]; or an
    index into the kernel's T.create_list_of_mbarrier)."""
    ctx = _kernel(what)
    bar = to_value(bar)
    listed = getattr(ctx, "mbarrier_list", None)
    if listed is not None and (
        isinstance(bar, int) and not isinstance(bar, bool) or _is_int_expr(bar)
    ):
        count = listed.shape[0]
        if isinstance(bar, int) and not 0 <= bar < count:
            raise frontend_error(
                f"{what} {name}: index {bar} is outside the kernel's {count} mbarriers "
                "(T.create_list_of_mbarrier)"
            )
        return _C.buffer_load(listed.handle, [bar])
    made = _barriers(ctx)
    if isinstance(bar, Buffer) and bar.name in made:
        if bar.shape[0] != 1:
            raise frontend_error(
                f"{what} {name}: '{bar.name}' holds {bar.shape[0]} mbarriers; pass one of them, "
                f"such as {bar.name}[i]"
            )
        return _C.buffer_load(bar.handle, [0])
    if isinstance(bar, _C.Expr):
        element = ctx.element_of(bar)
        if element is not None and element[0].name in made:
            return bar
    hint = (
        " (an integer names a barrier of T.create_list_of_mbarrier, which this kernel has not made)"
        if isinstance(bar, int)
        else ""
    )
    raise frontend_error(
        f"{what} {name} must be an mbarrier from T.alloc_barrier (the buffer, or bar[i]), "
        f"got {_describe(bar)}{hint}"
    )


def _emit(ctx, marker):
    ctx.builder.evaluate(marker)


def barrier_arrive(barrier: ExprLike) -> None:
    """The calling thread arrives on `barrier` (every thread that calls it counts)."""
    what = "T.barrier_arrive"
    bar = _barrier(what, barrier)
    _emit(builder_ctx.current(what), _marker("arrive", [bar]))


def cp_async_barrier_noinc(barrier: ExprLike) -> None:
    """TileLang's arrival for copies a thread issued by hand under `with T.attr(...,
    "async_scope", 1)`: on `barrier`, once those copies have landed. Such copies are
    plain stores here (see T.attr), landed when this runs, so it is T.barrier_arrive."""
    what = "T.cp_async_barrier_noinc"
    bar = _barrier(what, barrier)
    _emit(builder_ctx.current(what), _marker("arrive", [bar]))


def mbarrier_arrive(mbarrier: ExprLike, cta_id: ExprLike | None = None) -> None:
    """Same as T.barrier_arrive; with `cta_id`, the arrival is on that block's copy of
    the barrier in the thread block cluster (a T.alloc_cluster_barrier; cluster-scope
    release, as T.copy_cluster's)."""
    what = "T.mbarrier_arrive"
    bar = _barrier(what, mbarrier, "mbarrier")
    if cta_id is None:
        _emit(builder_ctx.current(what), _marker("arrive", [bar]))
        return
    ctx = _kernel(what)
    cta, _ = _cluster_rank(what, ctx, cta_id, "cta_id")
    _arrive_remote(ctx, bar, cta)


def mbarrier_arrive_expect_tx(mbarrier: ExprLike, tx_bytes: ExprLike) -> None:
    """T.mbarrier_expect_tx, then T.mbarrier_arrive, by the calling thread (PTX's
    mbarrier.arrive.expect_tx): the bytes are expected before the arrival counts."""
    mbarrier_expect_tx(mbarrier, tx_bytes)
    mbarrier_arrive(mbarrier)


# TVM's legacy PTX spellings of the same operations, which TileLang keeps in every
# dialect (tilelang.language.tir.exports.SHARED_LEGACY_TIR_EXPORTS). Their barrier is
# any mbarrier the calls above take: an element of T.alloc_barrier, or an index into
# the kernel's T.create_list_of_mbarrier (TVM's barrier ids).


def ptx_arrive_barrier(barrier_id: ExprLike) -> None:
    """TVM's name for T.mbarrier_arrive."""
    bar = _barrier("T.ptx_arrive_barrier", barrier_id)
    _emit(builder_ctx.current("T.ptx_arrive_barrier"), _marker("arrive", [bar]))


def ptx_arrive_barrier_expect_tx(barrier_id: ExprLike, byte_count: ExprLike) -> None:
    """TVM's name for T.mbarrier_arrive_expect_tx."""
    _barrier("T.ptx_arrive_barrier_expect_tx", barrier_id)
    mbarrier_arrive_expect_tx(barrier_id, byte_count)


def ptx_cp_async_barrier(barrier_id: ExprLike) -> None:
    """PTX's cp.async.mbarrier.arrive: the barrier's phase does not complete before the
    cp.async copies the calling thread issued (T.ptx_cp_async) have landed, and the call
    is no arrival of its own. Here the thread commits and waits for those copies on the
    spot (T.ptx_commit_group, T.ptx_wait_group(0)), so any arrival it makes afterwards
    covers them: the same ordering, the thread waiting earlier."""
    from .async_copy import ptx_commit_group, ptx_wait_group

    _barrier("T.ptx_cp_async_barrier", barrier_id)
    ptx_commit_group()
    ptx_wait_group(0)


def ptx_init_barrier_thread_count(barrier_id: ExprLike, thread_count: ExprLike) -> None:
    """TVM's initialization of a barrier with its arrival count. Here a barrier is
    initialized where it is made (T.alloc_barrier(count), T.create_list_of_mbarrier), so
    this checks that `thread_count` is the count it was made with, an error otherwise."""
    what = "T.ptx_init_barrier_thread_count"
    ctx = _kernel(what)
    bar = _barrier(what, barrier_id)
    given = to_value(barrier_id)
    listed = getattr(ctx, "mbarrier_list", None)
    element = ctx.element_of(bar)
    if isinstance(given, Buffer):
        name, index = given.name, 0
    elif element is not None:
        name, index = element[0].name, const_int(element[1][0])
    else:  # an index into T.create_list_of_mbarrier (which _barrier found)
        name, index = getattr(listed, "name", ""), const_int(given)
    count = const_int(to_value(thread_count))
    counts = _barrier_counts(ctx).get(name)
    if counts is None or index is None or not 0 <= index < len(counts):
        raise frontend_error(
            f"{what}: barrier_id must name one mbarrier by a constant index, got {_describe(barrier_id)}"
        )
    if count is None or count != counts[index]:
        raise frontend_error(
            f"{what}: thread_count must be the arrival count barrier {index} was made with "
            f"({counts[index]}, by T.alloc_barrier / T.create_list_of_mbarrier, which initialize "
            f"it), got {_describe(to_value(thread_count))}"
        )


def _parity(what, parity):
    parity = to_value(parity)
    value = const_int(parity)
    if value is not None:
        if value not in (0, 1):
            raise frontend_error(
                f"{what} parity must be 0 or 1 (the phase's parity bit), got {value}"
            )
        return _C.const(value, "int32")
    if isinstance(parity, bool) or not _is_int_expr(parity):
        raise frontend_error(
            f"{what} parity must be 0, 1 or an integer expression such as (k // stages) % 2, "
            f"got {_describe(parity)}"
        )
    return parity if parity.dtype.name == "int32" else _C.cast(parity, "int32")


def barrier_wait(barrier: ExprLike, parity: ExprLike) -> None:
    """Waits until the phase of `barrier` with parity `parity` has completed. Phases
    alternate 0, 1, 0 ...; waiting for parity 1 on a fresh barrier returns at once."""
    what = "T.barrier_wait"
    bar = _barrier(what, barrier)
    _emit(builder_ctx.current(what), _marker("wait", [bar, _parity(what, parity)]))


def mbarrier_wait_parity(mbarrier: ExprLike, parity: ExprLike) -> None:
    """Same as T.barrier_wait."""
    what = "T.mbarrier_wait_parity"
    bar = _barrier(what, mbarrier, "mbarrier")
    _emit(builder_ctx.current(what), _marker("wait", [bar, _parity(what, parity)]))


def mbarrier_expect_tx(mbarrier: ExprLike, tx_bytes: ExprLike) -> None:
    """Raises the bytes the current phase of `mbarrier` waits for by `tx_bytes` (each
    calling thread does); copies that complete on the barrier count them down."""
    what = "T.mbarrier_expect_tx"
    bar = _barrier(what, mbarrier, "mbarrier")
    tx = to_value(tx_bytes)
    value = const_int(tx)
    if value is not None and not 0 <= value <= MAX_ARRIVALS:
        raise frontend_error(f"{what} tx_bytes must be in [0, {MAX_ARRIVALS}], got {value}")
    if value is None and (isinstance(tx, bool) or not _is_int_expr(tx)):
        raise frontend_error(f"{what} tx_bytes must be an integer byte count, got {_describe(tx)}")
    tx = _C.const(value, "int32") if value is not None else _C.cast(tx, "int32")
    _emit(builder_ctx.current(what), _marker("expect_tx", [bar, tx]))


# ---- TMA


def tma_copy(
    src: BufferLike,
    dst: BufferLike,
    barrier: ExprLike | None = None,
    *,
    eviction_policy: str | None = None,
    annotations: dict[str, Any] | None = None,
    cluster_mask: Any = None,
    leader_scope_threads: int | None = None,
) -> None:
    """Copies a tile of a tensor parameter into a shared tile through TMA, completing on
    `barrier`: one thread (the first of the enclosing T.ws region, else thread 0) raises
    the bytes the barrier's phase waits for by the tile's size (mbarrier.expect_tx) and
    issues the loads. As in TileLang, it does not arrive: the threads arrive themselves
    with T.barrier_arrive (after their copies, so the expected bytes are counted before
    the phase can complete), and wait with T.barrier_wait; the barrier's arrive count is
    the number of those arrivals, not of the copies.

    `src` is a region of a kernel tensor parameter (`A[by * 64, k * 32]` or a slice), `dst`
    a shared tile or one stage of it (`A_s[s, :, :]`).

    From a shared tile to a tensor (`T.tma_copy(C_s, C[by * 128, bx * 128])`, no barrier)
    it is TileLang's TMA store: here T.copy's store of the tile (TMA on sm_90 where TMA
    can write the region), waited for by the compiler; T.tma_store_arrive and
    T.tma_store_wait after it are accepted and have nothing left to wait for.

    A tile TMA's tensor maps cannot describe (a row of more than 256 elements, such as
    `A[row, 0:1024]`) whose elements are one contiguous run in the tensor and in a
    plainly laid out shared tile goes as one bulk copy (cp.async.bulk, no tensor map).

    `leader_scope_threads` (a multiple of 32 dividing the block's threads; also in
    annotations): the copy is issued by the first thread of every group of that many
    threads instead of once, each group with its own source, destination and barrier
    (`T.tma_copy(A[row, 0:K], a_s[warp, 0:K], barrier=bars[warp],
    leader_scope_threads=32)`, `row` and `warp` from the thread index).

    `cluster_mask` (an int, bit r for block rank r of the thread block cluster; also
    accepted as annotations={"cluster_mask": m}): the blocks of the mask share the tile.
    The lowest of them multicasts it into all of them; the others issue nothing but
    expect the bytes the multicast brings on their own barrier; a block outside the mask
    loads its own. Every block of the mask must have initialized its barrier first (T.cluster_sync
    after T.alloc_barrier), and must not refill the tile while another block of the
    mask may still read its copy.
    """
    what = "T.tma_copy"
    ctx = _kernel(what)
    s_buf, s_min, s_ext, _ = _copy_operand(src, "source")
    d_buf, d_min, d_ext, _ = _copy_operand(dst, "destination")
    for side, b in (("source", s_buf), ("destination", d_buf)):
        if isinstance(b, BufferView):
            raise frontend_error(f"{what} {side} must be a buffer or a region of one, not a view")
    if s_buf.scope.startswith("shared") and d_buf.scope == "global":
        # A store (TileLang: tma_store and its commit, waited for by T.tma_store_wait).
        # Here it is T.copy's store of a shared tile: a TMA store on sm_90 where TMA can
        # write the region, issued, committed and waited for by the compiler, so the
        # later T.tma_store_arrive / T.tma_store_wait have nothing left to do.
        if cluster_mask is not None or (annotations or {}).get("cluster_mask") is not None:
            raise frontend_error(
                f"{what} cluster_mask multicasts loads; a store ('{s_buf.name}' -> '{d_buf.name}') takes none"
            )
        if s_ext is None and d_ext is None:
            raise frontend_error(
                f"{what} copies a tile: give a slice or a whole buffer on one side"
            )
        ctx.builder.copy(
            s_buf.handle, s_min, s_ext, d_buf.handle, d_min, d_ext,
            _copy_attrs(None, False, eviction_policy, annotations),
        )  # fmt: skip
        return
    if barrier is None:
        raise frontend_error(
            f"{what} needs barrier=: the mbarrier (from T.alloc_barrier) the copy completes on"
        )
    bar = _barrier(what, barrier)
    if s_buf.scope != "global":
        raise frontend_error(
            f"{what} copies global -> shared or shared -> global: the source '{s_buf.name}' is in "
            f"{s_buf.scope} memory and the destination '{d_buf.name}' in {d_buf.scope} memory"
        )
    if not d_buf.scope.startswith("shared"):
        raise frontend_error(
            f"{what} destination must be a T.alloc_shared tile, got '{d_buf.name}' in {d_buf.scope} memory"
        )
    if s_ext is None and d_ext is None:
        raise frontend_error(f"{what} copies a tile: give a slice or a whole buffer on one side")
    if d_buf.dtype == "float4_e2m1_unpacked":
        raise frontend_error(
            f"{what} into '{d_buf.name}' ({d_buf.dtype}) would unpack fp4 as sm_100's TMA does "
            "(float4_e2m1_unpacked), which no target here has; keep the shared tile float4_e2m1fn"
        )
    attrs = _copy_attrs(None, False, eviction_policy, annotations)
    if cluster_mask is not None:
        attrs["cluster_mask"] = cluster_mask
    if "cluster_mask" in attrs:
        m = attrs["cluster_mask"]
        if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 0xFFFF:
            raise frontend_error(
                f"{what} cluster_mask must be a Python int in [1, 0xffff] (bit r: block rank r of the "
                f"cluster), got {_describe(m)}"
            )
    if leader_scope_threads is not None:
        attrs["leader_scope_threads"] = leader_scope_threads
    if "leader_scope_threads" in attrs:
        n = attrs["leader_scope_threads"]
        threads = _block_threads(ctx)
        if isinstance(n, bool) or not isinstance(n, int) or n <= 0 or n % 32 or threads % n:
            raise frontend_error(
                f"{what} leader_scope_threads must be a multiple of 32 that divides the block's {threads} "
                f"threads, got {_describe(n)}"
            )
    attrs["tl.tma_barrier"] = bar
    ctx.builder.copy(s_buf.handle, s_min, s_ext, d_buf.handle, d_min, d_ext, attrs)


def tma_store_arrive() -> None:
    """TileLang's commit of the TMA stores issued so far (cp.async.bulk.commit_group).
    Here every TMA store (T.copy or T.tma_copy from a shared tile to a tensor) is
    committed and waited for where the compiler issues it, and later reads of the tensor
    in the kernel are ordered after its writes: nothing is left to commit. It is still
    emitted (`tl::tma_store_arrive()`, an empty group) on sm_90; before sm_90 and on the
    other targets it does nothing."""
    ctx = _kernel("T.tma_store_arrive")
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), "tl::tma_store_arrive", []))


def tma_store_wait(count: int = 0, read: bool = True) -> None:
    """TileLang's wait for all but `count` committed TMA store groups (`read`: until
    their shared tiles are read, else until their writes are done). Here the stores are
    waited for where they are issued (T.tma_store_arrive), so on sm_90 it is
    `tl::tma_store_wait<count, read>()` with nothing left to wait for; before sm_90 and
    on the other targets it does nothing."""
    what = "T.tma_store_wait"
    ctx = _kernel(what)
    if isinstance(count, bool) or not isinstance(count, int) or count < 0:
        raise frontend_error(
            f"{what} count must be a non-negative Python int, got {_describe(count)}"
        )
    if not isinstance(read, bool):
        raise frontend_error(f"{what} read must be True or False, got {_describe(read)}")
    name = f"{_TMA_STORE_WAIT}<{count}, {'true' if read else 'false'}>"
    ctx.builder.evaluate(_C.call_extern(make_dtype("void"), name, []))


# ---- wgmma


def wgmma_gemm(
    A: BufferLike,
    B: BufferLike,
    C: BufferLike,
    transpose_A: bool = False,
    transpose_B: bool = False,
    policy: Any = GemmWarpPolicy.Square,
    clear_accum: bool = False,
    k_pack: int = 1,
    wg_wait: int = 0,
) -> None:
    """C += op(A) @ op(B) on the tensor cores' wgmma (sm_90a), returning with the
    instructions still running: C and the tiles must not be touched until T.wait_wgmma.
    Takes T.gemm's arguments. One group stays in flight: a second T.wgmma_gemm first waits
    for the previous one; clear_accum=True waits for its own.
    """
    ctx = _kernel("T.wgmma_gemm")
    attrs = {
        "transpose_A": bool(transpose_A),
        "transpose_B": bool(transpose_B),
        "policy": int(policy),
        "clear_accum": bool(clear_accum),
        "k_pack": int(k_pack),
        "wg_wait": int(wg_wait),
        "tl.wgmma_explicit": True,
    }
    regions = [
        _region(x, f"T.wgmma_gemm operand {n}").to_core() for x, n in ((A, "A"), (B, "B"), (C, "C"))
    ]
    ctx.builder.gemm(*regions, attrs)


def wait_wgmma(n: ExprLike = 0) -> None:
    """Waits until at most `n` of the calling warpgroup's wgmma groups are in flight."""
    what = "T.wait_wgmma"
    ctx = _kernel(what)
    n = to_value(n)
    if isinstance(n, bool) or not isinstance(n, int) or not 0 <= n <= 7:
        raise frontend_error(
            f"{what} n must be a Python int from 0 to 7 (groups left in flight), got {_describe(n)}"
        )
    _emit(ctx, _marker("wait_wgmma", [_C.const(n, "int32")]))


def set_max_nreg(reg_count: int, is_inc: bool) -> None:
    """Register reallocation between warpgroups (setmaxnreg, sm_90a): the calling
    warpgroup's per-thread register limit goes up (is_inc=1) or down (is_inc=0) to
    `reg_count`. In a hand-written warp-specialized kernel the producer warpgroup, which
    only issues TMA copies, gives registers back (`T.set_max_nreg(24, 0)`) and the
    consumers take them (`T.set_max_nreg(160, 1)` in a block of 512 threads): the block's
    pool, 65536 registers, must cover every warpgroup's new limit. Every thread of the
    warpgroup calls it, at the start of its T.ws region. It does nothing on sm_90 (no
    `a`) and in the emulator."""
    what = "T.set_max_nreg"
    ctx = _kernel(what)
    reg_count, is_inc = to_value(reg_count), to_value(is_inc)
    if (
        isinstance(reg_count, bool)
        or not isinstance(reg_count, int)
        or not 24 <= reg_count <= 256
        or reg_count % 8
    ):
        raise frontend_error(
            f"{what} reg_count must be a Python int, a multiple of 8 from 24 to 256, got {_describe(reg_count)}"
        )
    if is_inc not in (0, 1) or not isinstance(is_inc, int):
        raise frontend_error(
            f"{what} is_inc must be 1 (raise the limit) or 0 (lower it), got {_describe(is_inc)}"
        )
    _emit(
        ctx, _marker("set_max_nreg", [_C.const(reg_count, "int32"), _C.const(int(is_inc), "int32")])
    )


def inc_max_nreg(reg_count: int) -> None:
    """T.set_max_nreg(reg_count, 1): the calling warpgroup's register limit goes up."""
    set_max_nreg(reg_count, True)


def dec_max_nreg(reg_count: int) -> None:
    """T.set_max_nreg(reg_count, 0): the calling warpgroup's register limit goes down."""
    set_max_nreg(reg_count, False)


def _reg_hint(what, which, reg_count):
    ctx = _kernel(what)
    reg_count = to_value(reg_count)
    if (
        isinstance(reg_count, bool)
        or not isinstance(reg_count, int)
        or not 24 <= reg_count <= 240
        or reg_count % 8
    ):
        raise frontend_error(
            f"{what} reg_count must be a Python int, a multiple of 8 from 24 to 240, got {_describe(reg_count)}"
        )
    from .math import call_extern

    ctx.builder.evaluate(
        call_extern(
            "void", "tl::setmaxnreg_hint", _C.const(which, "int32"), _C.const(reg_count, "int32")
        )
    )


def annotate_producer_reg_dealloc(reg_count: int = 24) -> None:
    """The registers per thread the producer warpgroup of the kernel's warp-specialized
    pipeline keeps (its setmaxnreg.dec; 24 by default, the least setmaxnreg allows),
    anywhere in the kernel. A hint for sm_90a's automatic warp specialization
    (T.Pipelined with TMA copies): a kernel without one, a hand-written T.ws split
    included, ignores it (use T.set_max_nreg there), as does another target. The counts
    the two hints give must fit the block's 65536 registers, an error otherwise."""
    _reg_hint("T.annotate_producer_reg_dealloc", 0, reg_count)


def annotate_consumer_reg_alloc(reg_count: int = 240) -> None:
    """The registers per thread the consumer warpgroups of the kernel's warp-specialized
    pipeline raise their limit to (setmaxnreg.inc); by default the most the block's
    register pool allows beside the producer's (240 for one producer and two consumer
    warpgroups). A hint, as T.annotate_producer_reg_dealloc."""
    _reg_hint("T.annotate_consumer_reg_alloc", 1, reg_count)


def alloc_cluster_barrier(arrive_count: ExprLike) -> Expr:
    """TileLang's mbarriers for the blocks of a cluster: T.alloc_barrier, whose
    initialization is fenced for the whole cluster (fence.mbarrier_init.release.cluster);
    another block may arrive on them (T.copy_cluster's remote_barrier) once a
    T.cluster_sync after the allocation has ordered it."""
    return alloc_barrier(arrive_count)


def copy_cluster(
    src: BufferLike,
    dst: BufferLike,
    *,
    dst_block: ExprLike | None = None,
    cluster_mask: Any = None,
    remote_barrier: ExprLike | None = None,
    eviction_policy: str | None = None,
    coalesced_width: int | None = None,
    annotations: dict[str, Any] | None = None,
    loop_layout: Any = None,
) -> None:
    """Copies between the blocks of a thread block cluster (CUDA sm_90).

    With `dst_block`: the calling block's shared tile (or region) `src` into the shared
    memory of block `dst_block` of the cluster, at `dst`'s place there (distributed
    shared memory). Every thread of the block calls it; each stores its share of the
    elements into the other block (`tl::store_cluster`, a mapa address). With
    `remote_barrier` (an mbarrier from T.alloc_cluster_barrier, the same element in
    every block) the block then meets, and its first thread arrives on that barrier of
    block `dst_block` with a cluster-scope release: block `dst_block` waits on its own
    copy of the barrier (T.mbarrier_wait_parity) and then reads the tile. Without it,
    order the copy with T.cluster_sync. Both blocks must have run the barrier's
    initialization first (T.cluster_sync after the allocation).

    With `cluster_mask` instead: T.tma_copy's multicast of a global tile into the shared
    memory of the blocks of the mask (the tile of the lowest of them), completing on
    `remote_barrier` in each; without `remote_barrier` the copy is done when it returns
    (a barrier of its own, initialized in every block first: call it at the top level
    of the kernel body, where every thread of the cluster reaches it).
    `coalesced_width` and `loop_layout` are accepted as hints."""
    what = "T.copy_cluster"
    ctx = _kernel(what)
    ann = dict(annotations or {})
    dst_block = ann.pop("dst_block", dst_block)
    cluster_mask = ann.pop("cluster_mask", cluster_mask)
    remote_barrier = ann.pop("barrier", remote_barrier)
    if cluster_mask is not None:
        if dst_block is not None:
            raise frontend_error(
                f"{what} takes dst_block (shared -> another block's shared memory) or cluster_mask "
                "(a TMA multicast of a global tile), not both"
            )
        if remote_barrier is not None:
            tma_copy(
                src, dst, remote_barrier, eviction_policy=eviction_policy, cluster_mask=cluster_mask
            )
            return
        # Without a barrier the copy is synchronous (TileLang's multicast demo): a barrier
        # of the block's threads, initialized in every block of the cluster before the
        # multicast may land, then the copy, every thread arriving and waiting.
        from tilelang.cuda.language.cluster import cluster_sync

        bar = alloc_barrier(_block_threads(ctx))
        cluster_sync()
        tma_copy(src, dst, bar, eviction_policy=eviction_policy, cluster_mask=cluster_mask)
        barrier_arrive(bar)
        barrier_wait(bar, 0)
        return
    if dst_block is None:
        raise frontend_error(
            f"{what} needs dst_block= (the cluster rank of the block whose shared memory receives "
            "the tile) or cluster_mask= (a TMA multicast)"
        )
    if not any(n > 1 for n in getattr(ctx, "kernel_cluster", None) or []):
        raise frontend_error(
            f"{what} with dst_block copies into another block of the thread block cluster, but this "
            "kernel has no clusters: launch it with T.Kernel(..., cluster_dims=...) (CUDA sm_90)"
        )
    block, _ = _cluster_rank(what, ctx, dst_block, "dst_block")
    s_buf, s_min, s_ext, _ = _copy_operand(src, "source")
    d_buf, d_min, d_ext, _ = _copy_operand(dst, "destination")
    for side, b in (("source", s_buf), ("destination", d_buf)):
        if isinstance(b, BufferView) or not str(b.scope).startswith("shared"):
            raise frontend_error(
                f"{what} with dst_block copies shared memory into another block's shared memory; the "
                f"{side} '{b.name}' is {'a view' if isinstance(b, BufferView) else 'in ' + str(b.scope) + ' memory'}"
            )
    if s_ext is None and d_ext is None:
        raise frontend_error(f"{what} copies a tile: give a slice or a whole buffer on one side")
    s_ext = s_ext if s_ext is not None else d_ext
    d_ext = d_ext if d_ext is not None else s_ext
    s_ext, d_ext = [to_value(e) for e in s_ext], [to_value(e) for e in d_ext]
    s_dims = [(i, e) for i, e in enumerate(s_ext) if const_int(e) != 1]
    d_dims = [(i, e) for i, e in enumerate(d_ext) if const_int(e) != 1]
    shape = [const_int(e) for _, e in s_dims]
    if any(n is None for n in shape) or [const_int(e) for _, e in d_dims] != shape:
        raise frontend_error(
            f"{what}: the source {s_ext} and destination {d_ext} regions must have the same constant "
            "extents (dims of 1 aside)"
        )
    bar = _barrier(what, remote_barrier, "remote_barrier") if remote_barrier is not None else None
    from .hooks import for_
    from .loops import Parallel
    from .math import address_of, call_extern
    from .warp import _linear_thread_index

    total = 1
    for n in shape:
        total *= n
    for flat in for_(Parallel(total), ["cluster_i"]):
        idx, rest = [], flat
        for n in reversed(shape):
            idx.append(rest % n)
            rest = rest // n
        idx.reverse()
        s_idx, d_idx = list(s_min), list(d_min)
        for k, (dim, _) in enumerate(s_dims):
            s_idx[dim] = s_min[dim] + idx[k]
        for k, (dim, _) in enumerate(d_dims):
            d_idx[dim] = d_min[dim] + idx[k]
        value = _C.cast(_C.buffer_load(s_buf.handle, s_idx), d_buf.handle.dtype)
        target = address_of(_C.buffer_load(d_buf.handle, d_idx))
        ctx.builder.evaluate(call_extern("void", "tl::store_cluster", target, block, value))
    if bar is not None:
        ctx.builder.sync_threads()
        ctx.builder.begin_if(_linear_thread_index(ctx) == 0)
        _arrive_remote(ctx, bar, block)
        ctx.builder.end_if()


__all__ = [
    "alloc_barrier",
    "alloc_cluster_barrier",
    "annotate_consumer_reg_alloc",
    "annotate_producer_reg_dealloc",
    "barrier_arrive",
    "barrier_wait",
    "copy_cluster",
    "cp_async_barrier_noinc",
    "create_list_of_mbarrier",
    "dec_max_nreg",
    "inc_max_nreg",
    "mbarrier_arrive",
    "mbarrier_arrive_expect_tx",
    "mbarrier_expect_tx",
    "mbarrier_wait_parity",
    "ptx_arrive_barrier",
    "ptx_arrive_barrier_expect_tx",
    "ptx_cp_async_barrier",
    "ptx_init_barrier_thread_count",
    "set_max_nreg",
    "tma_copy",
    "tma_store_arrive",
    "tma_store_wait",
    "wait_wgmma",
    "wgmma_gemm",
]
