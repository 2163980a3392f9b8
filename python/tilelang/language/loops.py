"""Loop constructs (`T.Parallel`, `T.serial`, `T.Pipelined`, `T.unroll`, `T.vectorized`,
and `range` in a kernel). Each one checks its arguments, knows how to open its IR
frame(s) and close them; the rewritten `for` statement runs the body once with the loop
variables."""

from __future__ import annotations

import builtins
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from tilelang.types import ExprLike, ShapeLike

from . import builder_ctx
from .buffer import const_int, to_value
from .builder_ctx import frontend_error

_C = builder_ctx._C


def _show(*args):
    return ", ".join(repr(a) if isinstance(a, str) else str(a) for a in args)


def _bounds(what, start, stop, step, symbolic_step=False):
    """(min, extent, step) of a Python-style range with possibly symbolic ends; step is a
    non-zero Python int, or an integer expression whose sign is known only at run time."""
    start, stop, step = to_value(start), to_value(stop), to_value(step)
    if step is None:
        step = 1
    written = _show(*(a for a in (start, stop, step) if a is not None))
    if stop is None:
        start, stop = 0, start
    st = const_int(step)
    if st is None and not symbolic_step:
        raise frontend_error(
            f"{what}({written}): the step must be a constant integer, got {step}; "
            "compute the index from a unit-step loop instead (i = start + k * step)"
        )
    if st is None:
        dt = getattr(step, "dtype", None)
        if (
            not isinstance(step, _C.Expr)
            or dt.lanes != 1
            or not dt.name.startswith(("int", "uint"))
        ):
            raise frontend_error(f"{what}({written}): the step must be an integer, got {step!r}")
        return start, _symbolic_step_extent(start, stop, step), step
    if st == 0:
        raise frontend_error(
            f"{what}({written}): the step must not be zero; use a positive step to count up "
            "or a negative one to count down"
        )
    lo, hi = const_int(start), const_int(stop)
    if lo is not None and hi is not None:
        return lo, len(builtins.range(lo, hi, st)), st
    if st == 1:
        return start, (stop if lo == 0 else stop - start), 1
    span = stop - start if st > 0 else start - stop
    return start, _C.binary("Max", _C.ceildiv(span, abs(st)), 0), st


def _symbolic_step_extent(start, stop, step):
    """The trip count of range(start, stop, step) for a step known at run time: counting
    up for a positive step, down for a negative one, none for a step of 0."""
    zero = _C.const(0, step.dtype)
    up = _C.ceildiv(stop - start, step)
    down = _C.ceildiv(start - stop, zero - step)
    count = _C.select(step > zero, up, _C.select(step < zero, down, zero))
    return _C.binary("Max", count, zero)


class Loop:
    """One IR loop with a Python-range style signature: `(stop)` or `(start, stop, step)`."""

    kind = "serial"
    # The name in messages (None: T.<class name>), and whether the step may be an
    # expression known only at run time (loops of one thread's code: serial, unroll).
    display: str | None = None
    symbolic_step = False

    def __init__(self, start, stop=None, step=None, annotations=None):
        what = self.display or f"T.{type(self).__name__}"
        self.min, self.extent, self.step = _bounds(what, start, stop, step, self.symbolic_step)
        self.annotations = dict(annotations or {})

    def open(self, builder, names):
        unit = const_int(self.step) == 1
        var = builder.begin_for(
            names[0] if names else "i",
            self.min if unit else 0,
            self.extent,
            self.kind,
            self.annotations,
        )
        if unit:
            return var
        return self.min + var * self.step

    def close(self, builder):
        builder.end_for()

    if TYPE_CHECKING:
        # A kernel's `for` over a loop is rewritten (ast_rewrite.py) and never iterates
        # in Python; this gives a type checker the loop variable's type.
        def __iter__(self) -> Iterator[Any]: ...


def _unit_step(step):
    return step is None or const_int(to_value(step)) == 1


class serial(Loop):
    """`T.serial(stop)`, `T.serial(start, stop, step=1)`. With another step (a constant
    of either sign, or an integer expression) it is a SerialForWithStep, as in TileLang."""

    kind = "serial"
    symbolic_step = True

    def __new__(cls, start=None, stop=None, step=None, annotations=None, **kwargs):
        if cls is serial and not _unit_step(step):
            return SerialForWithStep(start, stop, step, annotations)
        return super().__new__(cls)


class SerialForWithStep(Loop):
    """A serial loop of a step other than 1: TileLang gives it its own class (not a TVM
    frame); its loop variable is start + k * step."""

    kind = "serial"
    display = "T.serial"
    symbolic_step = True


class unroll(Loop):
    kind = "unroll"
    symbolic_step = True

    def __new__(cls, start=None, stop=None, step=None, *args, **kwargs):
        stepped = cls is unroll and not _unit_step(step)
        # UnrollForWithStep is a subclass: Python then runs __init__ on it
        return super().__new__(UnrollForWithStep if stepped else cls)

    def __init__(
        self,
        start: ExprLike,
        stop: ExprLike | None = None,
        step: ExprLike | None = None,
        explicit: bool = False,
        unroll_factor: int | None = None,
        annotations: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(start, stop, step, annotations)
        if unroll_factor is not None:
            self.annotations["unroll_factor"] = int(unroll_factor)


class UnrollForWithStep(unroll):
    """T.unroll with a step other than 1 (TileLang's class of that name)."""

    display = "T.unroll"


class vectorized(Loop):
    kind = "vectorized"


class Serial(serial):
    """TileLang's capitalized alias of T.serial (a tile-level loop)."""


class Unroll(unroll):
    """TileLang's capitalized alias of T.unroll."""


class Vectorized(vectorized):
    """TileLang's capitalized alias of T.vectorized."""


class parallel(Loop):
    """TVM's `T.parallel(start, stop=None, annotations=None)`: one loop whose iterations
    the compiler spreads over the block's threads, as `T.Parallel(stop - start)` with the
    index offset by `start`."""

    kind = "parallel"

    def __init__(
        self,
        start: ExprLike,
        stop: ExprLike | None = None,
        *,
        annotations: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(start, stop, None, annotations)

    def open(self, builder: Any, names: ShapeLike) -> Any:
        var = builder.begin_for(
            names[0] if names else "i", 0, self.extent, "parallel", self.annotations
        )
        return var if const_int(self.min) == 0 else self.min + var


def _int_list(what, name, values):
    try:
        return [int(v) for v in values]
    except (TypeError, ValueError):
        raise frontend_error(
            f"{what}: {name}= must be a list of integers, got {values!r}"
        ) from None


class Pipelined(Loop):
    """A serial loop software-pipelined `num_stages` deep (0: not pipelined). `order` and
    `stage` place each statement of the body (or each `group` of statements) by hand on GPU
    targets; the CPU target runs the loop in program order (same results)."""

    def __init__(
        self,
        start: ExprLike,
        stop: ExprLike | None = None,
        num_stages: int = 0,
        order: str | None = None,
        stage: Any = None,
        group: Any = None,
        sync: Any = None,
    ) -> None:
        what = "T.Pipelined"
        if isinstance(num_stages, bool) or const_int(num_stages) is None or num_stages < 0:
            raise frontend_error(
                f"{what}: num_stages must be a non-negative integer (0 turns pipelining off), "
                f"got {num_stages!r}"
            )
        self.num_stages = int(num_stages)
        self.order = None if order is None else _int_list(what, "order", order)
        self.stage = None if stage is None else _int_list(what, "stage", stage)
        self.group = None
        if group is not None:
            self.group = [_int_list(what, "group", g) for g in group]
        annotations: dict[str, Any] = {"num_stages": self.num_stages}
        if self.order:
            annotations["order"] = self.order
        if self.stage:
            annotations["stage"] = self.stage
        if self.group:
            annotations["group"] = ";".join(",".join(str(x) for x in g) for g in self.group)
        super().__init__(start, stop, 1, annotations)

    def close(self, builder: Any) -> None:
        self._check_schedule(builder.statements_in_frame())
        super().close(builder)

    def _check_schedule(self, count):
        """order/stage give one entry per statement of the body (per group when grouped)."""
        units, unit_word = count, "statement"
        if self.group:
            self._check_groups(count)
            units, unit_word = len(self.group), "group"
        for name, values in (("order", self.order), ("stage", self.stage)):
            if values and len(values) != units:
                raise frontend_error(
                    f"T.Pipelined {name}={values} has {len(values)} entries but the loop body has "
                    f"{units} {unit_word}(s); give one entry per {unit_word}, in program order"
                )
        if self.order:
            placed = [o for o in self.order if o >= 0]
            if sorted(placed) != list(range(len(placed))) or any(o < -1 for o in self.order):
                raise frontend_error(
                    f"T.Pipelined order={self.order} must number the {unit_word}s 0, 1, 2 ... "
                    "each once (-1 leaves one out of the schedule)"
                )
        if self.stage:
            # The stages given by hand set the depth (as in TileLang, whatever num_stages
            # says: num_stages=0 with stage=[0, 0, 1] is a two-stage pipeline).
            bad = [s for s in self.stage if s < -1]
            if bad:
                raise frontend_error(
                    f"T.Pipelined stage={self.stage} has entries {bad} below -1; a stage is "
                    "the iteration offset of its statement (0, 1, ...) or -1 (left to the compiler)"
                )

    def _check_groups(self, count):
        flat = [i for g in self.group for i in g]
        bad = [i for i in flat if not 0 <= i < count]
        if bad or len(set(flat)) != len(flat):
            raise frontend_error(
                f"T.Pipelined group={self.group} must list statement indices in [0, {count}) of "
                f"the loop body, each at most once; got {bad or 'a repeated index'}"
            )


def _check_loop_layout(layout, extents):
    """A T.Fragment / T.Layout, or a function of the loop indices giving the thread."""
    if callable(layout) and not hasattr(layout, "shape"):
        return
    shape = getattr(layout, "shape", None)
    if shape is None and not hasattr(layout, "forward_thread"):
        raise frontend_error(
            f"T.Parallel(loop_layout=...) expects a T.Fragment (or a function of the loop "
            f"indices), got {type(layout).__name__} {layout!r}"
        )
    if shape is not None:
        dims = [const_int(to_value(d)) for d in shape]
        want = [const_int(e) for e in extents]
        if None not in dims and None not in want and dims != want:
            raise frontend_error(
                f"T.Parallel{tuple(want)}: loop_layout has shape {tuple(dims)}; it must match "
                "the loop extents"
            )


class Parallel:
    """An elementwise nest whose iterations the compiler spreads over the block's threads.
    `loop_layout` fixes that spread on GPU targets; the CPU runs the nest in order.
    `prefer_async` and `annotations` (TileLang's loop hints, e.g.
    {"parallel_async_without_async_commit_wait": True}) are recorded on the outermost
    loop; the stores of such a loop are plain stores here, ordered by the barriers the
    compiler places (a `T.ptx_commit_group` / `T.ptx_wait_group` around them then waits
    for nothing), so results are the same."""

    kind = "parallel"

    def __init__(
        self,
        *extents: ExprLike,
        coalesced_width: int | None = None,
        loop_layout: Any = None,
        prefer_async: bool | None = None,
        annotations: dict[str, Any] | None = None,
    ) -> None:
        if not extents:
            raise frontend_error("T.Parallel needs at least one extent, e.g. T.Parallel(M, N)")
        self.extents = [to_value(e) for e in extents]
        for e in self.extents:
            if isinstance(e, bool) or not isinstance(e, (int, _C.Expr)):
                raise frontend_error(
                    f"T.Parallel extents must be integers, got {type(e).__name__} {e!r}"
                )
            if const_int(e) is not None and const_int(e) < 0:
                raise frontend_error(f"T.Parallel extents must not be negative, got {e}")
        self.annotations = {}
        if annotations is not None:
            if not isinstance(annotations, dict) or not all(
                isinstance(k, str) for k in annotations
            ):
                raise frontend_error(
                    f"T.Parallel annotations must be a dict with str keys, got {annotations!r}"
                )
            for key, value in annotations.items():
                if not isinstance(value, (bool, int, str)):
                    raise frontend_error(
                        f"T.Parallel annotation {key!r} must be a bool, int or str, got {value!r}"
                    )
                self.annotations[key] = value
        if prefer_async is not None:
            if not isinstance(prefer_async, bool):
                raise frontend_error(
                    f"T.Parallel prefer_async must be True or False, got {prefer_async!r}"
                )
            self.annotations.setdefault("parallel_prefer_async", prefer_async)
        if coalesced_width is not None:
            if const_int(coalesced_width) is None or coalesced_width <= 0:
                raise frontend_error(
                    f"T.Parallel coalesced_width must be a positive integer, got {coalesced_width!r}"
                )
            self.annotations["coalesced_width"] = int(coalesced_width)
        if loop_layout is not None:
            _check_loop_layout(loop_layout, self.extents)
        self.loop_layout = loop_layout

    def open(self, builder: Any, names: ShapeLike) -> Any:
        names = _loop_names(names, len(self.extents))
        made = []
        for i, extent in enumerate(self.extents):
            ann = self.annotations if i == 0 else {}
            made.append(builder.begin_for(names[i], 0, extent, "parallel", ann))
        return made[0] if len(made) == 1 else tuple(made)

    def close(self, builder: Any) -> None:
        for _ in self.extents:
            builder.end_for()


class grid:
    """`for i, j in T.grid(M, N):` serial loops nested in order, the first outermost (TVM's
    T.grid, which TileLang kernels use for plain per-thread loops)."""

    kind = "serial"

    def __init__(self, *extents: ExprLike) -> None:
        if not extents:
            raise frontend_error("T.grid needs at least one extent, e.g. T.grid(M, N)")
        self.loops = [serial(e) for e in extents]

    def open(self, builder: Any, names: ShapeLike) -> Any:
        names = _loop_names(names, len(self.loops))
        made = [loop.open(builder, [name]) for loop, name in zip(self.loops, names)]
        return made[0] if len(made) == 1 else tuple(made)

    def close(self, builder: Any) -> None:
        for loop in reversed(self.loops):
            loop.close(builder)


class Persistent(Loop):
    """`for i, j in T.Persistent([d0, d1], wave_size, index, group_size=8):` the tiles of
    the domain d0 x d1 (any number of dims) shared out over `wave_size` workers (launch
    `T.Kernel(wave_size)` and pass its block index as `index`): worker `index` takes tiles
    index, index + wave_size, ... in one serial loop, and the body runs once per tile
    with its coordinates. Tiles are numbered in panels of `group_size` rows of the first
    two dims (tiles taken one after another share their rows' and columns' data in L2),
    the last panel shorter; group_size=1 is row-major order, as is every domain of one
    or more than two dims. The loop runs ceil(tiles / wave_size) times on every
    worker; a worker without a tile in the last round skips the body."""

    kind = "serial"

    def __init__(
        self, domain: ShapeLike, wave_size: ExprLike, index: ExprLike, group_size: ExprLike = 8
    ) -> None:
        what = "T.Persistent"
        if not isinstance(domain, (list, tuple)) or not domain:
            raise frontend_error(
                f"{what} domain must be a non-empty list of tile counts, got {domain!r}"
            )
        self.domain = [to_value(d) for d in domain]
        for d in self.domain:
            known = const_int(d) if isinstance(d, (int, _C.Expr)) else None
            if (
                isinstance(d, bool)
                or not isinstance(d, (int, _C.Expr))
                or (known is not None and known < 1)
            ):
                raise frontend_error(f"{what} domain entries must be positive integers, got {d!r}")
        self.wave_size, self.index = to_value(wave_size), to_value(index)
        if isinstance(self.wave_size, bool) or not isinstance(self.wave_size, (int, _C.Expr)):
            raise frontend_error(f"{what} wave_size must be an integer, got {wave_size!r}")
        if const_int(self.wave_size) is not None and const_int(self.wave_size) < 1:
            raise frontend_error(f"{what} wave_size must be positive, got {wave_size!r}")
        group = 1 if group_size is None else to_value(group_size)
        if isinstance(group, bool) or not isinstance(group, int) or group < 1:
            raise frontend_error(
                f"{what} group_size must be a positive Python int or None, got {group_size!r}"
            )
        self.group = group

    def open(self, builder: Any, names: ShapeLike) -> Any:
        from .math import ceildiv
        from .math import max as tmax
        from .math import min as tmin

        total = self.domain[0]
        for d in self.domain[1:]:
            total = total * d
        # (tl.persistent: a T.Pipelined loop inside may be warp-specialized on sm_90a, its
        # producer warpgroup loading the next tile's first stages during the epilogue.)
        wave = builder.begin_for(
            "wave", 0, ceildiv(total, self.wave_size), "serial", {"tl.persistent": 1}
        )
        tile = wave * self.wave_size + self.index
        builder.begin_if(tile < total)
        if len(self.domain) == 2:
            d0, d1 = self.domain
            g = self.group
            panel = tile // (g * d1)
            within = tile % (g * d1)
            # At least 1 for every tile the body runs on; saying so lets the compiler
            # prove the coordinates non-negative (a TMA store of the tile needs that).
            rows = tmax(tmin(g, d0 - panel * g), 1)
            coords = [panel * g + within % rows, within // rows]
        else:
            coords, rest = [], tile
            for d in reversed(self.domain):
                coords.append(rest % d)
                rest = rest // d
            coords.reverse()
        # Bound once per tile (a let each): code that uses them in an inner loop, a
        # TMA producer's K loop, then does not recompute the panel arithmetic (an
        # integer division by a runtime divisor) at every step.
        names = _loop_names(names, len(coords))
        coords = [builder.let(n, c) for n, c in zip(names, coords)]
        return coords[0] if len(coords) == 1 else tuple(coords)

    def close(self, builder: Any) -> None:
        builder.end_if()
        builder.end_for()


def _loop_names(names, count):
    if len(names) == count:
        return list(names)
    base = names[0] if names else "i"
    return [f"{base}{i}" for i in range(count)]


def python_range(*args):
    """`range` inside traced code: the builtin for ints, a serial loop for symbolic bounds."""
    if all(const_int(a) is not None and not isinstance(a, _C.Expr) for a in args):
        return builtins.range(*args)
    if not 1 <= len(args) <= 3:
        raise frontend_error(f"range expects 1 to 3 arguments, got {len(args)}")
    return serial(*args)


def from_range(r):
    return serial(r.start, r.stop, r.step)


def loop_break() -> None:
    """TileLang's `T.loop_break()`: `break` out of the innermost T.serial / T.unroll loop
    (the `break` statement does the same)."""
    from . import hooks  # imported here: hooks imports this module

    if hooks.break_():
        raise frontend_error(
            "T.loop_break() inside a Python-level loop (a `for` over range or a list, "
            "unrolled while tracing): write `break` there"
        )


class While:
    """TileLang's `with T.While(cond):`: a loop that runs its body while `cond` holds,
    testing it before each iteration (as the `while` statement over a symbolic
    condition does); `break` / T.loop_break leave it."""

    __tl_with__ = True

    def __init__(self, cond: ExprLike) -> None:
        self.cond = to_value(cond)

    def __enter__(self):
        from .builder_ctx import IR_LOOP

        ctx = builder_ctx.current("T.While")
        cond = self.cond
        if isinstance(cond, bool):
            cond = _C.const(cond, "bool")
        if not isinstance(cond, _C.Expr) or cond.dtype.name != "bool":
            raise frontend_error(f"T.While takes a condition such as `x[0] < n`, got {self.cond!r}")
        ctx.frames.append(IR_LOOP)
        ctx.open_loop("while")
        ctx.builder.begin_while(cond)

    def __exit__(self, *exc):
        ctx = builder_ctx.current("T.While")
        ctx.builder.end_while()
        ctx.frames.pop()
        ctx.close_loop()
        return False
