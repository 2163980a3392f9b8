"""Loop constructs (`T.Parallel`, `T.serial`, `T.Pipelined`, `T.unroll`, `T.vectorized`,
and `range` in a kernel). Each one knows how to open its IR frame(s) and close them; the
rewritten `for` statement runs the body once with the loop variables."""

import builtins

from . import builder_ctx
from .buffer import const_int, to_value

_C = builder_ctx._C


def _bounds(start, stop, step):
    """(min, extent, step) of a Python-style range with possibly symbolic ends."""
    start, stop, step = to_value(start), to_value(stop), to_value(step)
    if stop is None:
        start, stop = 0, start
    if const_int(step) == 0:
        raise ValueError("loop step must not be zero")
    lo, hi, st = const_int(start), const_int(stop), const_int(step)
    if lo is not None and hi is not None and st is not None:
        return lo, max(0, len(builtins.range(lo, hi, st))), st
    if st == 1:
        return start, (stop if lo == 0 else stop - start), 1
    if st is None or st < 0:
        raise ValueError(f"a loop with symbolic bounds needs a positive constant step, got {step}")
    return start, _C.ceildiv(stop - start, st), st


class Loop:
    """One IR loop with a Python-range style signature."""

    kind = "serial"

    def __init__(self, start, stop=None, step=1, annotations=None):
        self.min, self.extent, self.step = _bounds(start, stop, step)
        self.annotations = dict(annotations or {})

    def open(self, builder, names):
        var = builder.begin_for(
            names[0] if names else "i",
            self.min if self.step == 1 else 0,
            self.extent,
            self.kind,
            self.annotations,
        )
        if self.step == 1:
            return var
        return self.min + var * self.step

    def close(self, builder):
        builder.end_for()


class serial(Loop):
    kind = "serial"


class unroll(Loop):
    kind = "unroll"

    def __init__(
        self, start, stop=None, step=1, explicit=False, unroll_factor=None, annotations=None
    ):
        super().__init__(start, stop, step, annotations)
        if unroll_factor is not None:
            self.annotations["unroll_factor"] = int(unroll_factor)


class vectorized(Loop):
    kind = "vectorized"


class Pipelined(Loop):
    """A serial loop software-pipelined `num_stages` deep (0: not pipelined)."""

    def __init__(
        self, start, stop=None, num_stages=0, order=None, stage=None, group=None, sync=None
    ):
        annotations = {"num_stages": int(num_stages)}
        if order:
            annotations["order"] = [int(x) for x in order]
        if stage:
            annotations["stage"] = [int(x) for x in stage]
        if group:
            annotations["group"] = ";".join(",".join(str(int(x)) for x in g) for g in group)
        super().__init__(start, stop, 1, annotations)


class Parallel:
    """An elementwise nest whose iterations the compiler spreads over the block's threads."""

    def __init__(self, *extents, coalesced_width=None, loop_layout=None):
        if not extents:
            raise ValueError("T.Parallel needs at least one extent")
        if loop_layout is not None:
            raise NotImplementedError("T.Parallel(loop_layout=...) is not supported yet")
        self.extents = [to_value(e) for e in extents]
        self.annotations = {}
        if coalesced_width is not None:
            self.annotations["coalesced_width"] = int(coalesced_width)

    def open(self, builder, names):
        names = _loop_names(names, len(self.extents))
        made = []
        for i, extent in enumerate(self.extents):
            ann = self.annotations if i == 0 else {}
            made.append(builder.begin_for(names[i], 0, extent, "parallel", ann))
        return made[0] if len(made) == 1 else tuple(made)

    def close(self, builder):
        for _ in self.extents:
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
    return serial(*args)


def from_range(r):
    return serial(r.start, r.stop, r.step)
