"""Debugging inside kernels: `T.print` (a message, an expression, or a whole tile) and
`T.device_assert`. Both are tile ops ("print", "device_assert"); the device header prints
each line prefixed with the block and thread index, and a failed assertion surfaces in
Python as a TileLangError naming the kernel, the message, the source line and the block."""

from __future__ import annotations

import os
import sys

from tilelang.types import ExprLike

from . import builder_ctx
from .buffer import Buffer, Region, VarBuffer, to_value
from .builder_ctx import frontend_error

_C = builder_ctx._C


def _kernel_ctx(what):
    ctx = builder_ctx.current(what)
    if ctx.kernel_vars is None:
        raise frontend_error(f"{what} must be called inside a `with T.Kernel(...)` block")
    return ctx


def _where(ctx):
    """Block index (x, y, z) and thread extents (x, y): the line prefix's ingredients."""
    blocks = list(ctx.kernel_vars.blocks) + [0] * (3 - len(ctx.kernel_vars.blocks))
    threads = list(ctx.kernel_extents[1]) + [1, 1]
    return blocks[:3] + threads[:2]


def _range_text(lo, extent, dim):
    """The text of one dimension's range of a printed tile: ":" when it is the whole dim."""
    if isinstance(lo, int) and lo == 0 and str(extent) == str(dim):
        return ":"
    if isinstance(extent, int) and extent == 1:
        return _expr_text(lo)
    if isinstance(lo, int) and isinstance(extent, int):
        return f"{lo}:{lo + extent}"
    return f"{_expr_text(lo)}:{_expr_text(lo)} + {_expr_text(extent)}"


def _expr_text(e):
    """An expression as the IR prints it, without the outermost parentheses."""
    text = str(e)
    if not (text.startswith("(") and text.endswith(")")):
        return text
    depth = 0
    for k, c in enumerate(text):
        depth += {"(": 1, ")": -1}.get(c, 0)
        if depth == 0 and k < len(text) - 1:
            return text  # the first "(" closes before the end: not one outer pair
    return text[1:-1]


def print(
    obj: ExprLike | None = None, msg: str = "", warp_group_id: int = 0, warp_id: int = 0
) -> None:
    """Prints from the kernel, each line prefixed with `[block (x, y, z), thread (x, y, z)]`.

    - a buffer (or a slice of one): the whole tile, row by row, printed by one executor;
    - an expression: its value, labelled with `msg` (default: the expression's text);
    - `None`: just `msg`.

    `warp_group_id` / `warp_id` (which warp prints a tile on GPUs) are accepted for
    compatibility; the CPU prints tiles from thread 0.
    """
    ctx = _kernel_ctx("T.print")
    if not isinstance(msg, str):
        raise frontend_error(f"T.print msg must be a string, got {type(msg).__name__} {msg!r}")
    where = _where(ctx)
    if obj is None:
        if not msg:
            raise frontend_error(
                "T.print() needs something to print: a buffer, an expression or msg='...'"
            )
        ctx.builder.tile_op("print", [], where, {"msg": msg})
        return
    if isinstance(obj, VarBuffer):
        value = obj.__tl_expr__()
        ctx.builder.tile_op("print", [], [*where, value], {"msg": msg or obj.name})
        return
    if isinstance(obj, (Buffer, Region)):
        region = obj.full_region() if isinstance(obj, Buffer) else obj
        buf = region.buffer
        ranges = [_range_text(*r) for r in zip(region.mins, region.extents, buf.shape)]
        what = buf.name if all(r == ":" for r in ranges) else f"{buf.name}[{', '.join(ranges)}]"
        dims = ", ".join(str(e) for e in region.extents) + ("," if len(ranges) == 1 else "")
        header = f"{msg + ': ' if msg else ''}buffer {what} ({buf.dtype}, shape ({dims}))"
        attrs = {"msg": header, "name": buf.name, "last": ranges[-1]}
        ctx.builder.tile_op("print", [region.to_core()], where, attrs)
        return
    value = to_value(obj)
    if not isinstance(value, (bool, int, float, _C.Expr)):
        raise frontend_error(
            "T.print takes a buffer, a slice of one, an expression or None (with msg=); "
            f"got {type(obj).__name__} {obj!r}"
        )
    ctx.builder.tile_op("print", [], [*where, value], {"msg": msg or _expr_text(value)})


def device_assert(condition: ExprLike, msg: str = "") -> None:
    """Checks `condition` while the kernel runs; a failure is raised after the launch as a
    TileLangError: "device assertion failed in kernel 'k': <msg> (at file:line) (block (...))".
    A condition that is True while tracing costs nothing."""
    ctx = _kernel_ctx("T.device_assert")
    if not isinstance(msg, str):
        raise frontend_error(
            f"T.device_assert msg must be a string, got {type(msg).__name__} {msg!r}"
        )
    cond = to_value(condition)
    if isinstance(cond, bool) and cond:
        return
    if not isinstance(cond, (bool, int, _C.Expr)):
        raise frontend_error(
            f"T.device_assert needs a condition expression, got {type(condition).__name__} "
            f"{condition!r}"
        )
    caller = sys._getframe(1)
    location = f"{os.path.basename(caller.f_code.co_filename)}:{caller.f_lineno}"
    text = f"{msg} (at {location})" if msg else f"`{_expr_text(cond)}` is false (at {location})"
    ctx.builder.tile_op("device_assert", [], [cond], {"msg": text})


__all__ = ["device_assert", "print"]
