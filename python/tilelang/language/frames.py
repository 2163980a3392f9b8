"""TVMScript's `if` frames, as TileLang kernels also write them:

    with T.If(i < rows):
        with T.Then():
            ...
        with T.Else():
            ...

or `with T.If(cond), T.Then():` for an `if` without `else`. They build the same IR as
a Python `if` on a symbolic condition; names bound inside follow Python's scoping
(use a T.alloc_var for a value that must outlive the branch)."""

from __future__ import annotations

from typing import Any

from tilelang.types import ExprLike

from . import allreduce, builder_ctx
from .buffer import to_value
from .builder_ctx import frontend_error

IF_FRAME = "T.If"  # the TraceContext.frames entry of an open T.If / T.Then / T.Else


class If:
    __tl_with__ = True

    def __init__(self, condition: ExprLike) -> None:
        self.cond = to_value(condition)
        self.branches: list[str] = []  # "then" / "else", in the order they were opened

    def __enter__(self):
        ctx = builder_ctx.current("T.If")
        ctx.tvm_ifs = [*getattr(ctx, "tvm_ifs", []), self]
        return self

    def __exit__(self, exc_type, exc, tb):
        ctx = builder_ctx.current("T.If")
        ctx.tvm_ifs = ctx.tvm_ifs[:-1]
        if exc_type is None and self.branches:
            ctx.builder.end_if()
        return False


def _open_if(what):
    ctx = builder_ctx.current(what)
    stack = getattr(ctx, "tvm_ifs", [])
    if not stack:
        raise frontend_error(f"{what}() belongs directly inside `with T.If(cond):`")
    return ctx, stack[-1]


class _Branch:
    """T.Then / T.Else: a branch of the innermost open T.If."""

    __tl_with__ = True
    what = ""

    def __enter__(self):
        ctx, frame = _open_if(self.what)
        self.open(ctx, frame)
        ctx.frames.append(IF_FRAME)
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            builder_ctx.current(self.what).frames.pop()
        return False


class Then(_Branch):
    what = "T.Then"

    def open(self, ctx: Any, frame: Any) -> None:
        if frame.branches:
            raise frontend_error("T.Then() comes once, before T.Else(), in a `with T.If(...)`")
        frame.branches.append("then")
        ctx.builder.begin_if(frame.cond)


class Else(_Branch):
    what = "T.Else"

    def open(self, ctx: Any, frame: Any) -> None:
        if frame.branches != ["then"]:
            raise frontend_error("T.Else() follows one T.Then() in a `with T.If(...)`")
        frame.branches.append("else")
        ctx.builder.begin_else()


class attr:
    """`with T.attr(node, key, value):` TVM's annotations, for the two keys TileLang's
    TVM-style kernels use.
    - "async_scope": hand-written producers put it around element-wise global-to-shared
      copies, to issue them as cp.async. Here they run as plain stores: the same result,
      synchronously (the copies' mbarrier arrival, T.cp_async_barrier_noinc, then finds
      them landed).
    - "reduce_scope": `node` is a T.comm_reducer, the reducer of the
      T.tvm_thread_allreduce calls inside.
    Other keys are refused."""

    __tl_with__ = True
    KEYS = ("async_scope", "reduce_scope")

    def __init__(self, node: Any, key: str, value: ExprLike) -> None:
        if key not in self.KEYS:
            raise frontend_error(
                f"T.attr: key {key!r} is not supported; supported: {', '.join(self.KEYS)}"
            )
        if key == "reduce_scope" and not isinstance(node, allreduce.comm_reducer):
            raise frontend_error(
                f'T.attr(node, "reduce_scope", ...): node must be a T.comm_reducer, got {node!r}'
            )
        self.reducer = node if key == "reduce_scope" else None

    def __enter__(self):
        builder_ctx.current("T.attr")
        if self.reducer is not None:
            allreduce._active.append(self.reducer)
        return self

    def __exit__(self, exc_type, exc, tb):
        if self.reducer is not None:
            allreduce._active.pop()
        return False


class sblock:
    """`with T.sblock("name"):` TVM's block, as TileLang kernels use it: a lexical scope
    for the annotations made inside it. A `T.annotate_safe_value` inside holds for the
    T.copy's inside; on leaving, the outer values hold again. (A global tensor's plain
    loads take its safe value kernel-wide; leaving the block sets the outer one again.)
    `T.reads(...)` / `T.writes(...)` inside only describe the block and change nothing."""

    __tl_with__ = True

    def __init__(self, name: str = "", no_realize: bool = False) -> None:
        if not isinstance(name, str):
            raise frontend_error(f"T.sblock: the name must be a string, got {name!r}")
        self.name = name
        self.saved = None

    def __enter__(self):
        ctx = builder_ctx.current("T.sblock")
        if not ctx.builder.in_kernel:
            raise frontend_error("T.sblock must be used inside `with T.Kernel(...)`")
        self.saved = dict(ctx.__dict__.setdefault("safe_values", {}))
        return self

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            return False
        ctx = builder_ctx.current("T.sblock")
        inner = ctx.__dict__.get("safe_values", {})
        for handle, value in self.saved.items():
            if handle in inner and inner[handle] is not value and handle.scope == "global":
                ctx.builder.set_attr(f"safe_value.{handle.name}", value)
        ctx.safe_values = self.saved
        return False


def reads(*regions: ExprLike) -> None:
    """TVM's block read regions: a description, nothing to do."""


def writes(*regions: ExprLike) -> None:
    """TVM's block write regions: a description, nothing to do."""
