"""The functions rewritten kernel code calls (see ast_rewrite.py). Each decides at trace
time whether a construct is ordinary Python (its operands are Python values or constants)
or must become IR (its operands are symbolic), and keeps the builder's frames balanced."""

import functools
import operator

from . import builder_ctx
from .buffer import Buffer, VarBuffer, to_value, wrap_buffer
from .builder_ctx import IR_IF, IR_LOOP, PY_LOOP, frontend_error
from .dtypes import dtype as DType
from .kernel import Kernel
from .loops import Loop, Parallel, from_range, python_range
from .ops import alloc_var
from .shapes import EmptyDecl, TensorAnnotation

_C = builder_ctx._C
_current = builder_ctx.current


def _symbolic(x):
    return isinstance(x, _C.Expr) and x.const_value() is None


def _truth(x):
    if isinstance(x, _C.Expr):
        return bool(x.const_value())
    return bool(x)


# ---- assignment and declarations
def name_next(name):
    """Called before an assignment's value: allocations in it take the target's name."""
    _current().pending_name = name
    return name


def assign(name, value, local_vars):
    ctx = _current()
    ctx.pending_name = None
    old = local_vars.get(name)
    if isinstance(old, VarBuffer) and not isinstance(value, Buffer):
        old.store(value)
        return old
    if isinstance(value, EmptyDecl):
        return _declare_output(ctx, name, value.annotation)
    if _symbolic(value) and not isinstance(value, _C.Var) and ctx.builder.in_kernel:
        return ctx.builder.let(name, value)
    return value


def annotated(annotation, value):
    """`x: T.int32 = v` makes a scalar register initialised to v; other annotations pass."""
    if isinstance(annotation, DType):
        return alloc_var(annotation, init=value)
    return value


def _require_eager(ctx, name):
    if ctx.mode == "prim_func":
        raise frontend_error(
            f"the body declares parameter '{name}'; declarations in the body are for eager "
            "@tilelang.jit functions; a T.prim_func annotates its parameters in the signature"
        )


def declare(name, annotation):
    """`A: T.Tensor(shape, dtype)` or `n: T.int32` in an eager body declares a parameter."""
    ctx = _current()
    _require_eager(ctx, name)
    if isinstance(annotation, TensorAnnotation):
        buf = wrap_buffer(annotation.declare(ctx.builder, name))
        ctx.params.append((name, buf))
        return buf
    if isinstance(annotation, (str, type)):
        var = ctx.builder.scalar_param(name, DType(annotation))
        ctx.params.append((name, var))
        return var
    raise frontend_error(
        f"parameter '{name}' must be annotated with T.Tensor(shape, dtype) or a dtype, "
        f"got {annotation!r}"
    )


def _declare_output(ctx, name, annotation):
    buf = wrap_buffer(annotation.declare(ctx.builder, name))
    ctx.params.append((name, buf))
    ctx.outputs.append(name)
    return buf


def return_(value):
    ctx = _current()
    if ctx.in_ir_frame():
        raise frontend_error("`return` inside a kernel, loop or symbolic `if` is not supported")
    if ctx.mode == "prim_func" and value is not None:
        raise frontend_error("a T.prim_func returns nothing; outputs are parameters (see out_idx)")
    ctx.returned = value
    ctx.has_return = True
    return value


# ---- loops
def for_(iterable, names):
    ctx = _current()
    if isinstance(iterable, (Loop, Parallel)):
        return _ir_loop(ctx, iterable, names)
    if isinstance(iterable, range) and ctx.builder.in_kernel:
        return _ir_loop(ctx, from_range(iterable), names)
    return _python_loop(ctx, iterable)


def _ir_loop(ctx, loop, names):
    loop_vars = loop.open(ctx.builder, names)
    ctx.frames.append(IR_LOOP)
    yield loop_vars
    ctx.frames.pop()
    loop.close(ctx.builder)


def _python_loop(ctx, iterable):
    ctx.frames.append(PY_LOOP)
    try:
        yield from iterable
    finally:
        ctx.frames.pop()


class WhileLoop:
    """A `while`: plain Python when its condition is a Python value, else one IR loop."""

    def __init__(self, cond):
        self.ctx = _current()
        self.cond = cond
        first = to_value(cond())
        self.symbolic = _symbolic(first)
        self.first = first
        self.untested = True  # the first test was already evaluated above
        self.done = False
        self.ctx.frames.append(IR_LOOP if self.symbolic else PY_LOOP)
        if self.symbolic:
            self.ctx.builder.begin_while(first)

    def step(self):
        untested, self.untested = self.untested, False
        if self.symbolic:
            if not untested:
                self.ctx.builder.end_while()
                self._leave()
            return untested
        value = self.first if untested else to_value(self.cond())
        if _symbolic(value):
            raise frontend_error("a `while` condition became symbolic after its first Python test")
        if not _truth(value):
            self._leave()
            return False
        return True

    def _leave(self):
        if not self.done:
            self.done = True
            self.ctx.frames.pop()

    def exit(self):
        self._leave()


def while_(cond):
    return WhileLoop(cond)


def _loop_jump(keyword, emit):
    ctx = _current()
    kind, crossed_if = ctx.innermost_loop()
    if kind == PY_LOOP:
        if crossed_if:
            raise frontend_error(
                f"`{keyword}` of a Python-level loop inside a symbolic `if` is not supported; "
                "make the loop a T.serial loop"
            )
        return True
    emit(ctx.builder)
    return False


def break_():
    return _loop_jump("break", lambda b: b.emit_break())


def continue_():
    return _loop_jump("continue", lambda b: b.emit_continue())


# ---- if
class _SymbolicIf:
    """The token of an open IR `if` (any other value of the condition is plain Python)."""

    __slots__ = ()


_IR_IF = _SymbolicIf()


def if_(cond):
    cond = to_value(cond)
    if not _symbolic(cond):
        return _truth(cond)
    ctx = _current()
    ctx.builder.begin_if(cond)
    ctx.frames.append(IR_IF)
    return _IR_IF


def else_(token):
    if token is _IR_IF:
        _current().builder.begin_else()
        return True
    return not token


def endif(token):
    if token is _IR_IF:
        ctx = _current()
        ctx.frames.pop()
        ctx.builder.end_if()


# ---- boolean operators
def and_(first, *rest):
    acc = to_value(first)
    for thunk in rest:
        if _symbolic(acc):
            acc = _C.logical_and(acc, to_value(thunk()))
        elif not _truth(acc):
            return acc
        else:
            acc = to_value(thunk())
    return acc


def or_(first, *rest):
    acc = to_value(first)
    for thunk in rest:
        if _symbolic(acc):
            acc = _C.logical_or(acc, to_value(thunk()))
        elif _truth(acc):
            return acc
        else:
            acc = to_value(thunk())
    return acc


def not_(value):
    value = to_value(value)
    if _symbolic(value):
        return _C.logical_not(value)
    return not _truth(value)


_COMPARE = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
    "eq": operator.eq,
    "ne": operator.ne,
    "is": operator.is_,
    "is_not": operator.is_not,
    "in": lambda a, b: a in b,
    "not_in": lambda a, b: a not in b,
}


def compare(left, pairs):
    """A chained comparison `a < b < c`: each operand evaluated once, `and` semantics."""
    left = to_value(left)
    result = None
    for name, thunk in pairs:
        right = to_value(thunk())
        part = _COMPARE[name](left, right)
        result = part if result is None else and_(result, lambda p=part: p)
        if not _symbolic(result) and not _truth(result):
            return result
        left = right
    return result


def ifexp(cond, then_thunk, else_thunk):
    cond = to_value(cond)
    if _symbolic(cond):
        return _C.select(cond, to_value(then_thunk()), to_value(else_thunk()))
    return then_thunk() if _truth(cond) else else_thunk()


# ---- with
def with_(obj):
    if isinstance(obj, Kernel):
        return obj
    if _current().builder.in_kernel:
        raise frontend_error(
            f"`with` on a {type(obj).__name__} object is not supported inside a kernel; "
            "only `with T.Kernel(...)` opens a block"
        )
    return obj


def mark_rewritten(func):
    func.__tl_rewritten__ = True
    return func


HOOKS = {
    "_tl_name": name_next,
    "_tl_assign": assign,
    "_tl_annotated": annotated,
    "_tl_declare": declare,
    "_tl_return": return_,
    "_tl_for": for_,
    "_tl_while": while_,
    "_tl_break": break_,
    "_tl_continue": continue_,
    "_tl_if": if_,
    "_tl_else": else_,
    "_tl_endif": endif,
    "_tl_and": and_,
    "_tl_or": or_,
    "_tl_not": not_,
    "_tl_compare": compare,
    "_tl_ifexp": ifexp,
    "_tl_with": with_,
    "_tl_rewritten": mark_rewritten,
}


def namespace(func, ctx):
    """The globals a rewritten function runs in: its own globals and closure values, the
    hooks, and a line reporter bound to this trace's builder."""
    ns = dict(func.__globals__)
    code = func.__code__
    for name, cell in zip(code.co_freevars, func.__closure__ or ()):
        try:
            ns[name] = cell.cell_contents
        except ValueError:  # a cell not filled yet
            pass
    if "range" not in ns:
        ns["range"] = python_range
    ns.update(HOOKS)
    ns["_tl_line"] = functools.partial(ctx.builder.set_line, code.co_filename)
    return ns
