"""Data movement beyond T.copy: `T.transpose`, `T.im2col` (alias `T.c2d_im2col`) and
`T.annotate_safe_value`, the value T.copy reads outside a tensor. The operators are
checked and lowered by the core (src/ops/transpose.cpp, src/ops/im2col.cpp)."""

from __future__ import annotations

from typing import Any

from tilelang.types import BufferLike, ExprLike

from . import builder_ctx
from .buffer import Buffer, Region, const_int, to_value
from .builder_ctx import frontend_error
from .ops import _EVICTION_POLICIES
from .views import BufferView

_C = builder_ctx._C


def _tile(x, what):
    """The core region of a buffer or slice operand."""
    x = to_value(x)
    if isinstance(x, BufferView) or (isinstance(x, Region) and isinstance(x.buffer, BufferView)):
        raise frontend_error(
            f"{what} cannot be a view made with T.Tensor(shape, dtype, data); pass the "
            f"buffer itself or T.copy the view into a buffer first"
        )
    if isinstance(x, Buffer):
        return x.full_region().to_core()
    if isinstance(x, Region):
        return x.to_core()
    raise frontend_error(f"{what} must be a buffer or a slice of one, got {type(x).__name__} {x!r}")


def transpose(src: BufferLike, dst: BufferLike) -> None:
    """dst[..., j, i] = src[..., i, j]: src covers (..., M, N), dst (..., N, M)."""
    ctx = builder_ctx.current("T.transpose")
    regions = [_tile(src, "T.transpose source"), _tile(dst, "T.transpose destination")]
    ctx.builder.tile_op("transpose", regions, [], {})


def _square_kernel(kernel):
    if isinstance(kernel, (list, tuple)):
        sizes = {const_int(to_value(k)) for k in kernel}
        if len(kernel) != 2 or len(sizes) != 1:
            raise frontend_error(
                f"T.im2col supports square kernels only: kernel must be an int or (k, k), got {kernel!r}"
            )
        return kernel[0]
    return kernel


def im2col(
    img: BufferLike,
    col: BufferLike,
    nhw_step: int,
    c_step: int,
    kernel: int,
    stride: ExprLike = 1,
    dilation: int = 1,
    pad: int = 0,
    eviction_policy: str | None = None,
    annotations: dict[str, Any] | None = None,
) -> None:
    """Gathers tile (nhw_step, c_step) of the im2col matrix of an NHWC image into `col`.

    col[i, j] = img[n, oh*stride + kh*dilation - pad, ow*stride + kw*dilation - pad, c]
    for output pixel m = nhw_step*BM + i = (n*OH + oh)*OW + ow and filter tap
    k = c_step*BK + j = (kh*kernel + kw)*C + c; 0 in the padding and past the matrix.
    """
    ctx = builder_ctx.current("T.im2col")
    if eviction_policy is not None and eviction_policy not in _EVICTION_POLICIES:
        raise frontend_error(
            f"T.im2col eviction_policy must be one of {', '.join(_EVICTION_POLICIES)} or None, "
            f"got {eviction_policy!r}"
        )
    regions = [_tile(img, "T.im2col image"), _tile(col, "T.im2col column tile")]
    args = [to_value(a) for a in (nhw_step, c_step, _square_kernel(kernel), stride, dilation, pad)]
    attrs = dict(annotations or {})
    if eviction_policy is not None:
        attrs["eviction_policy"] = _EVICTION_POLICIES[eviction_policy]
    ctx.builder.tile_op("im2col", regions, args, attrs)


c2d_im2col = im2col


def annotate_safe_value(buffer_or_map: BufferLike, value: ExprLike | None = None) -> None:
    """The value reads outside `buffer` give (instead of 0): T.copy's that follow, and
    every other load of a global tensor in the function (T.Parallel loops, scalar code).

    Accepts `T.annotate_safe_value(A, -1.0)` or TileLang's `T.annotate_safe_value({A: -1.0})`.
    """
    ctx = builder_ctx.current("T.annotate_safe_value")
    if isinstance(buffer_or_map, dict):
        if value is not None:
            raise frontend_error(
                "T.annotate_safe_value takes a {buffer: value} dict or (buffer, value), not both"
            )
        items: Any = buffer_or_map.items()
    else:
        if value is None:
            raise frontend_error(
                "T.annotate_safe_value needs a value: T.annotate_safe_value(A, 0.0) or "
                "T.annotate_safe_value({A: 0.0})"
            )
        items = [(buffer_or_map, value)]
    table = ctx.__dict__.setdefault("safe_values", {})
    for buf, val in items:
        buf = to_value(buf)
        if isinstance(buf, BufferView):
            buf = buf.base
        if not isinstance(buf, Buffer):
            raise frontend_error(
                f"T.annotate_safe_value needs a buffer, got {type(buf).__name__} {buf!r}"
            )
        val = to_value(val)
        if isinstance(val, bool) or not isinstance(val, (int, float, _C.Expr)):
            raise frontend_error(
                f"the safe value of '{buf.name}' must be a number or an expression, "
                f"got {type(val).__name__} {val!r}"
            )
        table[buf.handle] = val
        if buf.scope == "global":
            # Loads of the tensor anywhere in the function (T.Parallel, scalar code)
            # read it outside the tensor, as TileLang's kernel-wide annotation does.
            ctx.builder.set_attr(f"safe_value.{buf.name}", val)


__all__ = ["annotate_safe_value", "c2d_im2col", "im2col", "transpose"]
