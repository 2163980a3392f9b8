"""`T.annotate_layout` and `T.use_swizzle`: hints for GPU targets, recorded on the trace
(`layout_map` and `swizzle` of the trace context) and checked here. The CPU target keeps
logical layouts and runs blocks in any order, so neither changes results on the CPU."""

from . import builder_ctx
from .buffer import Buffer, const_int, to_value
from .builder_ctx import frontend_error

_ORDERS = ("row", "column", "mlx")


def annotate_layout(layout_map):
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


def use_swizzle(panel_size, order="row", enable=True):
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


def disable_warp_group_reg_alloc():
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


__all__ = ["annotate_layout", "disable_warp_group_reg_alloc", "use_swizzle"]
