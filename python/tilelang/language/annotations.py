"""`T.annotate_layout` and `T.use_swizzle`, recorded on the trace (`layout_map` and
`swizzle` of the trace context) and checked here. A global buffer's layout moves its
elements on every target (as in TileLang); shared-tile layouts and `T.use_swizzle` are
hints for GPU targets: the CPU keeps logical on-chip layouts and runs blocks in any
order, so they never change results there."""

from __future__ import annotations

import itertools
import math
from typing import Any

from tilelang.types import ExprLike

from . import builder_ctx
from .buffer import Buffer, const_int, to_value
from .builder_ctx import frontend_error

_ORDERS = ("row", "column", "mlx")


def func_attr(attrs: dict[str, Any]) -> None:
    """TVM's `T.func_attr({"tir.noalias": True, ...})`: attributes of the function.
    They steer TVM's passes, which this compiler does not have, so they are checked
    for their form (a dict with string keys) and otherwise change nothing."""
    if not isinstance(attrs, dict) or not all(isinstance(k, str) for k in attrs):
        raise frontend_error(
            f"T.func_attr takes a dict with string keys such as {{'tir.noalias': True}}, got "
            f"{attrs!r}"
        )
    builder_ctx.current("T.func_attr")


def annotate_pass_configs(configs: dict[str, Any]) -> None:
    """`T.annotate_pass_configs({PassConfigKey.TL_ENABLE_FAST_MATH: True})`: pass configs of
    this function, merged with tilelang.compile's (whose values win)."""
    ctx = builder_ctx.current("T.annotate_pass_configs")
    if not isinstance(configs, dict) or not all(isinstance(k, str) for k in configs):
        raise frontend_error(
            f"T.annotate_pass_configs takes a dict with string keys such as "
            f"{{PassConfigKey.TL_ENABLE_FAST_MATH: True}}, got {configs!r}"
        )
    ctx.func_pass_configs = dict(configs)


def annotate_compile_flags(flags: str | list[str]) -> None:
    """`T.annotate_compile_flags(["--use_fast_math"])`: device compiler flags of this
    function, placed before tilelang.compile's compile_flags."""
    ctx = builder_ctx.current("T.annotate_compile_flags")
    if isinstance(flags, str):
        flags = [flags]
    if not isinstance(flags, (list, tuple)) or not all(isinstance(f, str) for f in flags):
        raise frontend_error(
            f"T.annotate_compile_flags takes a flag or a list of flags such as "
            f'["--use_fast_math"], got {flags!r}'
        )
    ctx.func_compile_flags = list(flags)


def annotate_layout(layout_map: dict[str, Any]) -> None:
    """Records `{buffer: T.Layout | T.Fragment | fn(*indices)}` for the buffers given."""
    from tilelang.layout import Fragment, Layout

    ctx = builder_ctx.current("T.annotate_layout")
    if not isinstance(layout_map, dict):
        raise frontend_error(
            f"T.annotate_layout takes a dict {{buffer: layout}}, got {type(layout_map).__name__}"
        )
    table = ctx.__dict__.setdefault("layout_map", {})
    for buf, layout in layout_map.items():
        buf = to_value(buf)
        if _identity_on_view(buf, layout):
            continue
        if not isinstance(buf, Buffer):
            raise frontend_error(
                f"T.annotate_layout keys must be buffers, got {type(buf).__name__} {buf!r}"
            )
        if not isinstance(layout, Layout):
            if not callable(layout):
                raise frontend_error(
                    f"layout of '{buf.name}' must be a T.Layout, a T.Fragment or a function of "
                    f"the {buf.ndim} indices, got {type(layout).__name__} {layout!r}"
                )
            layout = Layout(buf.shape, layout)
        if len(layout.shape) != buf.ndim or any(
            const_int(a) != const_int(b) or (const_int(a) is None and str(a) != str(b))
            for a, b in zip(layout.shape, buf.shape)
        ):
            raise frontend_error(
                f"layout for '{buf.name}' is over shape {list(layout.shape)} but the buffer has "
                f"shape {list(buf.shape)}; build the layout from the buffer's shape"
            )
        if buf.scope == "local.fragment" and not isinstance(layout, Fragment):
            raise frontend_error(
                f"'{buf.name}' is a fragment, so its layout must be a T.Fragment (thread and "
                f"index of each element), got a T.Layout"
            )
        table[buf.handle] = (buf, layout)
        if buf.scope in ("shared", "shared.dyn"):
            if not _mark_shared_swizzle(ctx, buf, layout):
                _check_injective(buf, layout)
        elif buf.scope == "global":
            _mark_global_layout(ctx, buf, layout)


def _identity_on_view(view, layout):
    """Whether `layout` on a T.view is the identity over the view's shape: the view's
    elements are laid out row-major over the bytes of the buffer it views, so that
    layout holds already (TileLang kernels annotate it on dtype-changing views). Any
    other layout of a view is an error naming the buffer to annotate instead."""
    from tilelang.layout import Fragment, Layout

    from .math import Var
    from .views import BufferView

    if not isinstance(view, BufferView):
        return False
    if isinstance(layout, Layout) and not isinstance(layout, Fragment):
        shape = [const_int(to_value(d)) for d in view.shape]
        if list(layout.shape) == list(view.shape) or [const_int(d) for d in layout.shape] == shape:
            index = [Var(f"i{k}", "int32") for k in range(len(view.shape))]
            out = _forward(layout, index)
            if len(out) == len(index) and all(
                str(to_value(o)) == str(v) for o, v in zip(out, index)
            ):
                return True
    raise frontend_error(
        f"T.annotate_layout of the view '{view.name}' accepts only the identity layout over its "
        f"shape {list(view.shape)} (its elements are row-major over the bytes of "
        f"'{view.base.name}'); annotate the layout of '{view.base.name}' instead"
    )


def _mark_global_layout(ctx, buf, layout):
    """Leaves the marker from which the compiler moves the elements of global `buf`
    (src/transform/global_layouts.cpp): a loop nest over the buffer's shape around
    `tl::global_layout(buf[i...], *forward(i...))`. The compiler checks the layout (a
    bijection onto an output of the same element count) and applies it to every access
    of the enclosing T.Kernel, those written before the annotation included."""
    from tilelang.layout import Fragment
    from tilelang.layout.layout import as_index_list

    from .math import call_extern

    if isinstance(layout, Fragment):
        raise frontend_error(
            f"'{buf.name}' is a global buffer, so its layout must be a T.Layout (where each "
            f"element lives), got a T.Fragment (which thread holds each element)"
        )
    if not ctx.builder.in_kernel:
        raise frontend_error(
            f"T.annotate_layout on global buffer '{buf.name}' must be inside a T.Kernel: the "
            f"layout applies to the accesses of that kernel"
        )
    if getattr(layout, "_identity", False):  # e.g. the sparse gemm's metadata layout
        return
    b = ctx.builder
    loop_vars = [b.begin_for(f"i{k}", 0, to_value(n), "serial") for k, n in enumerate(buf.shape)]
    try:
        forward = as_index_list(_forward(layout, loop_vars), f"layout of '{buf.name}'")
        element = builder_ctx._C.buffer_load(buf.handle, loop_vars)
        b.evaluate(call_extern("void", "tl::global_layout", element, *forward))
    finally:
        for _ in loop_vars:
            b.end_for()


# Rows of a shared tile checked when recognizing an annotated swizzle: the XOR
# patterns the compiler can apply repeat every 8 rows (row bits 0-2 at most).
_CHECKED_ROWS = 16


def _mark_shared_swizzle(ctx, buf, layout):
    """When `layout` permutes 16-byte chunks within rows as chunk ^ ((row >> s) & m)
    (make_swizzled_layout, the bank helpers, make_mma_swizzle_layout, or a function of
    that form), leaves the marker the compiler applies the layout from on CUDA targets
    (src/transform/shared_layouts.cpp). Other layouts stay recorded only: the tile keeps
    its logical layout, which gives the same results."""
    from tilelang.layout import Fragment

    from .math import address_of, call_extern

    if isinstance(layout, Fragment) or buf.ndim < 2:
        return False
    dims = [const_int(d) for d in buf.shape]
    bits = buf.dtype.bits
    if any(d is None for d in dims) or bits % 8 or 128 % bits or buf.dtype.lanes != 1:
        return False
    found = _xor_chunk_swizzle(layout, dims, bits)
    if found is None:
        return False
    shift, mask = found
    element = buf[tuple(0 for _ in dims)]
    ctx.builder.evaluate(call_extern("void", "tl::shared_layout", address_of(element), shift, mask))
    return True


# Shared tiles of at most this many elements have their annotated layout checked
# element by element (the check runs in Python while tracing).
_INJECTIVE_CHECK_LIMIT = 1 << 15


def _check_injective(buf, layout):
    """Refuses a shared tile's layout that maps two elements to one location, as TileLang
    does: on a GPU that applied it, the two would overwrite each other. (The tile keeps
    its logical layout here, see _mark_shared_swizzle, but the annotation is a mistake.)
    Checked when the shape is constant and small enough and the layout evaluates on
    integers."""
    from tilelang.layout import Fragment

    dims = [const_int(d) for d in buf.shape]
    if isinstance(layout, Fragment) or None in dims or math.prod(dims) > _INJECTIVE_CHECK_LIMIT:
        return
    owner = {}
    for index in itertools.product(*(range(d) for d in dims)):
        try:
            phys = tuple(const_int(to_value(x)) for x in _forward(layout, list(index)))
        except Exception:  # noqa: BLE001 - a layout we cannot evaluate on integers is not checked
            return
        if None in phys:
            return
        first = owner.setdefault(phys, index)
        if first != index:
            raise frontend_error(
                f"T.annotate_layout: the layout of shared buffer `{buf.name}` must be injective "
                f"(one location per element), but elements {first} and {index} both map to "
                f"physical coordinates {phys}"
            )


def _xor_chunk_swizzle(layout, dims, bits):
    """(row_shift, row_mask) of the XOR swizzle `layout` is on its last two dimensions
    (leading indices 0, the first _CHECKED_ROWS rows), or None (also for the identity)."""
    rows, cols = dims[-2], dims[-1]
    per = 128 // bits  # elements per 16-byte chunk
    lead = [0] * (len(dims) - 2)
    try:
        seen = []
        for r in range(min(rows, _CHECKED_ROWS)):
            row = []
            for c in range(cols):
                phys = [const_int(to_value(x)) for x in _forward(layout, [*lead, r, c])]
                if None in phys or phys[:-1] != [*lead, r]:
                    return None
                row.append(phys[-1])
            seen.append(row)
    except Exception:  # noqa: BLE001 - a layout we cannot evaluate on integers stays unapplied
        return None
    if all(v == c for row in seen for c, v in enumerate(row)):
        return None
    for mask in (7, 3, 1):
        if cols % (per * (mask + 1)):
            continue
        for shift in (0, 1, 2):
            if all(
                row[c] == ((c // per) ^ ((r >> shift) & mask)) * per + c % per
                for r, row in enumerate(seen)
                for c in range(cols)
            ):
                return shift, mask
    return None


def _forward(layout, index):
    fn = getattr(layout, "_forward_fn", None)
    out = fn(*index) if fn is not None else layout.map_forward_index(index)
    return list(out) if isinstance(out, (list, tuple)) else [out]


def use_swizzle(panel_size: int, order: str = "row", enable: bool = True) -> None:
    """Remaps block indices in panels of `panel_size` for L2 reuse on GPUs. The CPU runs
    blocks in any order, so there the remap is the identity; arguments are checked."""
    ctx = builder_ctx.current("T.use_swizzle")
    if not ctx.builder.in_kernel:
        raise frontend_error("T.use_swizzle must be called inside `with T.Kernel(...)`")
    size = const_int(to_value(panel_size))
    if isinstance(panel_size, bool) or size is None or size <= 0:
        raise frontend_error(
            f"T.use_swizzle panel_size must be a positive integer, got {panel_size!r}"
        )
    if order not in _ORDERS:
        raise frontend_error(f"T.use_swizzle order must be 'row', 'column' or 'mlx', got {order!r}")
    if not isinstance(enable, bool):
        raise frontend_error(f"T.use_swizzle enable must be True or False, got {enable!r}")
    if enable:
        ctx.swizzle = {"panel_size": size, "order": order}
        # A marker the cuda code generator reads to remap the block indices of the
        # whole kernel; a no-op function in the device headers.
        from .math import call_extern

        ctx.builder.evaluate(call_extern("void", "tl::use_swizzle", size, _ORDERS.index(order)))


def disable_warp_group_reg_alloc() -> None:
    """TileLang's hint that the kernel's warp-specialized pipeline keeps the registers it
    launched with: no setmaxnreg moves registers from the producer warpgroup to the
    consumers (sm_90a). Elsewhere it changes nothing."""
    ctx = builder_ctx.current("T.disable_warp_group_reg_alloc")
    if not ctx.builder.in_kernel:
        raise frontend_error(
            "T.disable_warp_group_reg_alloc must be called inside `with T.Kernel(...)`"
        )
    from .math import call_extern

    # A marker warp_specialize reads; a no-op function in the device headers.
    ctx.builder.evaluate(call_extern("void", "tl::no_setmaxnreg"))


def no_set_max_nreg() -> None:
    """TileLang's other name of T.disable_warp_group_reg_alloc."""
    disable_warp_group_reg_alloc()


def annotate_l2_hit_ratio(l2_hit_ratio_map: dict[str, Any]) -> None:
    """`T.annotate_l2_hit_ratio({B: 0.8})`: TileLang's hint that accesses to global
    buffer B should persist in the GPU's L2 cache for that fraction of its bytes (CUDA's
    stream access-policy window, set around the launch). A hint: no result depends on it.
    No target here sets the access-policy window, so the map is checked (global buffers,
    ratios from 0 to 1) and changes nothing else."""
    what = "T.annotate_l2_hit_ratio"
    builder_ctx.current(what)
    if not isinstance(l2_hit_ratio_map, dict):
        raise frontend_error(
            f"{what} takes a dict of global buffers to hit ratios such as {{B: 0.8}}, got "
            f"{l2_hit_ratio_map!r}"
        )
    for buf, ratio in l2_hit_ratio_map.items():
        if not isinstance(buf, Buffer):
            raise frontend_error(f"{what}: the keys are buffers, got {buf!r}")
        if buf.scope != "global":
            raise frontend_error(
                f"{what}: '{buf.name}' is a {buf.scope} buffer; the L2 persistence window "
                "applies to global buffers (kernel parameters)"
            )
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
            raise frontend_error(
                f"{what}: the hit ratio of '{buf.name}' must be a number from 0 to 1, got {ratio!r}"
            )


def annotate_min_blocks_per_sm(n: ExprLike) -> None:
    """TileLang's occupancy hint: CUDA kernels get `__launch_bounds__(threads, n)`, so that
    the device compiler keeps registers low enough for `n` blocks per multiprocessor
    (a warp-specialized kernel that moves registers keeps 1). It changes no result; the
    cpu and Metal targets ignore it."""
    ctx = builder_ctx.current("T.annotate_min_blocks_per_sm")
    if not ctx.builder.in_kernel:
        raise frontend_error(
            "T.annotate_min_blocks_per_sm must be called inside `with T.Kernel(...)`"
        )
    count = const_int(to_value(n))
    if isinstance(n, bool) or count is None or count <= 0:
        raise frontend_error(
            f"T.annotate_min_blocks_per_sm takes a positive integer constant, got {n!r}"
        )
    if getattr(ctx, "min_blocks_per_sm", None) is not None:
        raise frontend_error(
            f"T.annotate_min_blocks_per_sm is given twice in this kernel "
            f"({ctx.min_blocks_per_sm}, then {count}); give it once"
        )
    ctx.min_blocks_per_sm = count
    from .math import call_extern

    # A marker the cuda code generator reads; a no-op function in the device headers.
    ctx.builder.evaluate(call_extern("void", "tl::min_blocks_per_sm", count))


__all__ = [
    "annotate_l2_hit_ratio",
    "annotate_layout",
    "annotate_min_blocks_per_sm",
    "disable_warp_group_reg_alloc",
    "use_swizzle",
]
