"""The functions rewritten kernel code calls (see ast_rewrite.py). Each decides at trace
time whether a construct is ordinary Python (its operands are Python values or constants)
or must become IR (its operands are symbolic), and keeps the builder's frames balanced."""

import contextlib
import functools
import operator

from . import builder_ctx
from .buffer import Buffer, Region, VarBuffer, to_value, wrap_buffer
from .builder_ctx import IR_IF, IR_LOOP, PY_LOOP, frontend_error
from .dtypes import dtype as DType
from .kernel import Kernel, ThreadBindingLoop
from .loops import Loop, Parallel, from_range, grid, python_range
from .ops import alloc_var
from .pointers import PointerParam, PointerType
from .shapes import EmptyDecl, TensorAnnotation

_C = builder_ctx._C
_current = builder_ctx.current


def _symbolic(x):
    return isinstance(x, _C.Expr) and x.const_value() is None


def _truth(x):
    if isinstance(x, _C.Expr):
        return bool(x.const_value())
    if isinstance(x, (Buffer, Region)) and not isinstance(x, VarBuffer):
        # A tile has no truth value: Python's would be True, dropping the condition.
        raise frontend_error(
            f"a condition got the tile {x!r}, which has no truth value; test its elements "
            f"with T.any_of({x!r}) or T.all_of({x!r})"
        )
    return bool(x)


# ---- assignment and declarations
_UNBOUND = object()  # a name not bound before an assignment


def _is_scalar(x):
    """A value a scalar local can hold: a Python number or an expression."""
    return isinstance(x, (bool, int, float, _C.Expr))


def name_next(name):
    """Called before an assignment's value: allocations in it take the target's name."""
    ctx = _current()
    ctx.pending_name = name
    ctx.alloc_mark = ctx.allocations
    return name


def _describe(value):
    if isinstance(value, Buffer):
        return f"buffer '{value.name}' ({value.scope}, shape {tuple(value.shape)})"
    if isinstance(value, Region):
        return f"the slice {value!r}"
    text = repr(value)
    return f"{type(value).__name__} {text if len(text) < 60 else text[:57] + '...'}"


def _check_var_value(name, var, value):
    if isinstance(value, VarBuffer) or _is_scalar(value) or hasattr(value, "__tl_expr__"):
        return
    if isinstance(value, (Buffer, Region)):
        fix = "assign one element such as S[i], or bind the buffer to a new name"
    else:
        fix = "assign a number or an expression"
    raise frontend_error(
        f"cannot assign {_describe(value)} to '{name}', a T.alloc_var scalar of {var.dtype}; {fix}"
    )


def assign(name, value, local_vars):
    """`name = value`: stores into an alloc_var, hoists a name a symbolic `if` assigns into
    a local variable, binds a symbolic expression once (a let), else plain Python."""
    ctx = _current()
    ctx.pending_name = None
    fresh = isinstance(value, Buffer) and ctx.allocated_for(name, value, ctx.alloc_mark)
    old = local_vars.get(name, _UNBOUND)
    if isinstance(old, VarBuffer) and not fresh:
        if getattr(old, "vector_dtype", None) is None:  # a vector variable checks its own
            _check_var_value(name, old, value)
        old.store(value)
        return old
    ref = getattr(ctx, "element_refs", {}).get(id(old)) if isinstance(old, _C.Expr) else None
    if ref is not None and ref[0] is old and not fresh:  # a T.Ref parameter of a macro
        _check_var_value(name, ref[1], value)
        ref[1][tuple(ref[2])] = value
        return old
    if isinstance(value, EmptyDecl):
        return _declare_output(ctx, name, value.annotation)
    branch = _open_if(ctx)
    if branch is not None:
        scalar = to_value(value) if isinstance(value, VarBuffer) and not fresh else value
        var = branch.try_hoist(ctx, name, scalar, old, own=branch in _own_ifs(ctx))
        if var is not None:
            return var
    if _symbolic(value) and not isinstance(value, _C.Var) and ctx.builder.in_kernel:
        value = ctx.builder.let(name, value)
    for state in _own_ifs(ctx):
        state.bound_inside(name, old)
    return value


def unpack(value, count):
    """The values of `a, b = ...` as Python unpacks them (the same count, the same error),
    each one that reads memory read once now (a let; a T.alloc_var's current value), so
    that the assignments that follow cannot change what a later one stores."""
    items = list(value)
    if len(items) != count:
        raise ValueError(
            f"too many values to unpack (expected {count})"
            if len(items) > count
            else f"not enough values to unpack (expected {count}, got {len(items)})"
        )
    ctx = _current()
    out = []
    for item in items:
        if isinstance(item, VarBuffer):
            item = to_value(item)
        # Only a value that reads memory (a load, a call) can be changed by the stores
        # that follow; one of block indices, loop variables and lets is taken as it is.
        if (
            _symbolic(item)
            and not isinstance(item, _C.Var)
            and ctx.builder.in_kernel
            and item.reads_memory()
        ):
            item = ctx.builder.let("value", item)
        out.append(item)
    return out


def annotated(annotation, value):
    """`x: T.int32 = v` makes a scalar register initialised to v; other annotations pass."""
    if isinstance(annotation, DType):
        return alloc_var(annotation, init=value)
    return value


def _check_prim_func_declaration(ctx, name):
    """A T.prim_func's body may annotate the parameters its signature left unannotated,
    once each."""
    if ctx.mode != "prim_func":
        return
    if name in ctx.undeclared:
        ctx.undeclared.discard(name)
        return
    if any(n == name for n, _ in ctx.params):
        raise frontend_error(f"parameter '{name}' of T.prim_func '{ctx.name}' is annotated twice")
    raise frontend_error(
        f"the body declares '{name}', which is not an unannotated parameter of T.prim_func "
        f"'{ctx.name}'; declarations in the body are for eager @tilelang.jit functions, and "
        "for the parameters a T.prim_func's signature leaves unannotated"
    )


def declare(name, annotation):
    """`A: T.Tensor(shape, dtype)` or `n: T.int32` in the body declares a parameter (of an
    eager function, or one a T.prim_func's signature left unannotated)."""
    ctx = _current()
    _check_prim_func_declaration(ctx, name)
    if isinstance(annotation, PointerType):  # T.make_tensor makes it a tensor parameter
        pointer = PointerParam(name, ctx.name, annotation)
        ctx.params.append((name, pointer))
        return pointer
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


def _prim_func_out_idx(ctx, value):
    """The output indices of a T.prim_func that returns its T.empty tensors: negative, in
    the order returned (the outputs are its last parameters, in declaration order)."""
    values = value if isinstance(value, (tuple, list)) else (value,)
    outputs = [buf for name, buf in ctx.params if name in ctx.outputs]
    out_idx = []
    for v in values:
        pos = next((i for i, buf in enumerate(outputs) if buf is v), None)
        if pos is None:
            raise frontend_error(
                f"T.prim_func '{ctx.name}' can only return tensors made by T.empty, got "
                f"{_describe(v)}; outputs given by the caller are parameters (see out_idx)"
            )
        out_idx.append(pos - len(outputs))
    if len(set(out_idx)) != len(outputs):
        missing = [n for n in ctx.outputs if n not in {ctx.outputs[i] for i in out_idx}]
        raise frontend_error(
            f"T.prim_func '{ctx.name}' must return every tensor made by T.empty once; "
            f"{', '.join(repr(m) for m in missing) or 'one is returned twice'}"
            f"{' not returned' if missing else ''}"
        )
    return out_idx


def return_(value):
    ctx = _current()
    if ctx.in_ir_frame():
        raise frontend_error("`return` inside a kernel, loop or symbolic `if` is not supported")
    if ctx.mode == "prim_func" and value is not None:
        ctx.out_idx = _prim_func_out_idx(ctx, value)
    ctx.returned = value
    ctx.has_return = True
    return value


# ---- loops
def for_(iterable, names):
    ctx = _current()
    if isinstance(iterable, ThreadBindingLoop):
        return _binding_loop(ctx, iterable)
    if isinstance(iterable, (Loop, Parallel, grid)):
        return _ir_loop(ctx, iterable, names)
    if isinstance(iterable, range) and ctx.builder.in_kernel:
        return _ir_loop(ctx, from_range(iterable), names)
    return _python_loop(ctx, iterable)


def _ir_loop(ctx, loop, names):
    loop_vars = loop.open(ctx.builder, names)
    # What the loop's names hold (a variable, or start + i * step) ends with the loop.
    ctx.builder.add_scoped(*(loop_vars if isinstance(loop_vars, (tuple, list)) else [loop_vars]))
    ctx.frames.append(IR_LOOP)
    # (The range of a T.vectorized loop of one variable: T.ptx_cp_async widens its copies.)
    vectorized = (
        isinstance(loop_vars, _C.Var) and isinstance(loop, Loop) and loop.kind == "vectorized"
    )
    from .loops import Pipelined

    pipelined = isinstance(loop, Pipelined) and loop.num_stages > 0
    ctx.open_loop(loop.kind, (loop_vars, loop.min, loop.extent) if vectorized else None, pipelined)
    yield loop_vars
    ctx.close_loop()
    ctx.frames.pop()
    loop.close(ctx.builder)


def _binding_loop(ctx, loop):
    var = loop.open(ctx)
    yield var
    loop.close(ctx)


def _python_loop(ctx, iterable):
    ctx.frames.append(PY_LOOP)
    try:
        yield from iterable
    finally:
        ctx.frames.pop()


class WhileLoop:
    """A `while`: plain Python when its condition is a Python value, else one IR loop.
    `while True:` inside a kernel is an IR loop too (left with a `break` at run time)."""

    def __init__(self, cond, forever=False):
        self.ctx = _current()
        self.cond = cond
        first = to_value(cond())
        self.symbolic = _symbolic(first) or (forever and self.ctx.builder.in_kernel)
        self.first = first
        self.untested = True  # the first test was already evaluated above
        self.done = False
        self.ctx.frames.append(IR_LOOP if self.symbolic else PY_LOOP)
        if self.symbolic:
            self.ctx.builder.begin_while(first)
            self.ctx.open_loop("while")

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
            if self.symbolic:
                self.ctx.close_loop()

    def exit(self):
        self._leave()


def while_(cond, forever=False):
    return WhileLoop(cond, forever)


def _loop_jump(keyword, emit):
    ctx = _current()
    kind, crossed_if = ctx.innermost_loop()
    if kind is None:
        raise frontend_error(
            f"`{keyword}` outside a loop of the kernel: the Python loop around it encloses the "
            f"`with T.Kernel` block; put `{keyword}` inside a loop in the kernel body"
        )
    if kind == PY_LOOP:
        if crossed_if:
            raise frontend_error(
                f"`{keyword}` of a Python-level loop inside a symbolic `if` is not supported; "
                "make the loop a T.serial loop"
            )
        return True
    if kind == IR_LOOP and ctx.loop_kinds and ctx.loop_kinds[-1] in ("parallel", "vectorized"):
        raise frontend_error(
            f"`{keyword}` inside a T.{ctx.loop_kinds[-1].capitalize()} loop is not supported: its "
            "iterations have no order; use T.serial for a loop that can stop early"
        )
    emit(ctx.builder)
    return False


def break_():
    return _loop_jump("break", lambda b: b.emit_break())


def continue_():
    return _loop_jump("continue", lambda b: b.emit_continue())


# ---- if
class BranchLocal:
    """What a name bound inside a symbolic `if` (and not turned into a local variable)
    reads as after the `if`, or in the other branch, and what a name bound inside an IR
    loop reads as after the loop: any use is a clear error."""

    __slots__ = ("construct", "fix", "line", "name", "reason")

    def __init__(self, name, line, reason, fix, construct="the symbolic `if`"):
        self.name, self.line, self.reason, self.fix = name, line, reason, fix
        self.construct = construct

    def fail(self, *args, **kwargs):
        raise frontend_error(
            f"'{self.name}' is assigned inside {self.construct} at line {self.line} "
            f"({self.reason}), so it has no value here; {self.fix}"
        )

    __tl_expr__ = __bool__ = __index__ = __int__ = __float__ = __call__ = fail
    __getitem__ = __setitem__ = __iter__ = __neg__ = __pos__ = __invert__ = __abs__ = fail

    def __repr__(self):
        return (
            f"'{self.name}' (assigned inside {self.construct} at line {self.line}, so it has no "
            f"value here; {self.fix})"
        )


_ARITHMETIC = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow")
for _op in (*_ARITHMETIC, "and", "or", "xor", "lshift", "rshift"):
    setattr(BranchLocal, f"__{_op}__", BranchLocal.fail)
    setattr(BranchLocal, f"__r{_op}__", BranchLocal.fail)
for _op in ("lt", "le", "gt", "ge", "eq", "ne"):
    setattr(BranchLocal, f"__{_op}__", BranchLocal.fail)
BranchLocal.__hash__ = object.__hash__  # type: ignore[method-assign]


def outer_names(names, local_vars):
    """The values `names` (a loop's variables) hold before the loop, for scope_locals."""
    return {n: local_vars[n] for n in names if n in local_vars}


def scope_locals(names, local_vars, line, kind, outer=None):
    """After an IR loop (`for` over T.serial & co., a symbolic `while`) or a `with` block
    that opened an IR scope (T.ws, T.Kernel): the names its body bound to a let, a loop
    variable or a buffer of that scope, which have no value after it. A loop variable
    whose name meant something before the loop (`outer`, from outer_names) means that
    again, as TVMScript scopes loop variables: `for i in T.Parallel(N)` inside `for i
    in T.serial(M)` leaves `i` the outer loop's after it."""
    builder = _current().builder
    where = "the loop" if kind == "loop" else "the `with` block"
    found = {}
    for name in names:
        value = local_vars.get(name)
        if not builder.is_dead(value.handle if isinstance(value, Buffer) else value):
            continue
        before = outer.get(name) if outer else None
        usable = before is not None and not isinstance(before, (Buffer, BranchLocal))
        if usable and not builder.is_dead(before):
            found[name] = before
            continue
        if isinstance(value, Buffer):
            reason = (
                "a buffer allocated in a loop's body lives for one iteration"
                if kind == "loop"
                else f"a buffer allocated inside {where} lives there"
            )
            fix = f"allocate it before {where} to use it after"
        else:
            reason = (
                "its values live in one iteration" if kind == "loop" else "its value lives there"
            )
            fix = (
                f"to carry a value out, declare `{name} = T.alloc_var(dtype)` before {where} "
                "and assign to it"
            )
        found[name] = BranchLocal(name, line, reason, fix, construct=where)
    return found


_FIX_BOTH = "assign it in both branches (a number or expression then becomes a local variable)"
_FIX_DECLARE = "declare it before the `if` with `{name} = T.alloc_var(dtype)`"


class SymbolicIf:
    """An open IR `if`, and what its branches do to Python names.

    Python semantics are kept by turning names into scalar locals allocated before the
    `if`: those both branches assign, those that already held a number or expression, and
    (once the `if` has such a name) every expression assigned in a branch. A local is made
    at the first assignment, when its dtype is known: the builder's `if` is closed there,
    the local allocated outside, and the `if` reopened on the same let-bound condition.
    Names bound inside in any other way are unusable after the `if`."""

    def __init__(self, ctx, cond, names, both, local_vars):
        self.line = ctx.line
        self.hoist = set(both) | {n for n in names if _is_scalar(local_vars.get(n, _UNBOUND))}
        if self.hoist:
            cond = ctx.builder.let("cond", cond)  # the `if` may be reopened on it
        self.cond = cond
        self.in_else = False
        self.before = {}  # name -> its value before the `if`, for names bound inside
        self.hoisted = set()  # names turned into locals that keep their value after the `if`
        self.reasons = {}  # name -> (why it has no value after the `if`, the fix)
        ctx.builder.begin_if(cond)
        self.depth = len(ctx.frames)
        ctx.frames.append(IR_IF)
        ctx.if_stack.append(self)

    def bound_inside(self, name, old):
        self.before.setdefault(name, old)

    def try_hoist(self, ctx, name, value, old, own=True):
        """The local that now holds `name`, or None when it stays a plain binding. `own`:
        the assignment is in this `if`'s function (not in a macro called in a branch)."""
        if not _is_scalar(value) or not (old is _UNBOUND or _is_scalar(old)):
            return None
        wanted = own and name in self.hoist
        if not wanted and not (self.hoist and _symbolic(value) and not isinstance(value, _C.Var)):
            return None
        if ctx.builder.bindings_in_frame():  # reopening would end their scope
            if not own:
                return None
            self.reasons[name] = (
                "after buffers or other values were bound in that branch",
                _FIX_DECLARE.format(name=name),
            )
            return None
        var = self._split(ctx, name, value, old)
        if wanted:
            self.hoisted.add(name)
        elif own:
            self.before.setdefault(name, old)
        return var

    def _split(self, ctx, name, value, old):
        builder = ctx.builder
        builder.end_if()
        ctx.pending_name = name
        var = alloc_var(_dtype_of(value, old))
        if old is not _UNBOUND:
            var.store(old)
        builder.begin_if(_C.logical_not(self.cond) if self.in_else else self.cond)
        var.store(value)
        for state in _own_ifs(ctx):
            if state is not self:
                state.bound_inside(name, old)
        return var

    def _unusable(self, name, reason):
        reason, fix = self.reasons.get(name, (reason, _FIX_BOTH))
        return BranchLocal(name, self.line, reason, fix)

    def start_else(self):
        """Names the then-branch bound go back to their values from before the `if`."""
        self.in_else = True
        out = {
            name: self._unusable(name, "in the other branch") if old is _UNBOUND else old
            for name, old in self.before.items()
            if name not in self.hoisted
        }
        self.before = {}
        return out

    def finish(self):
        """Names bound inside and not hoisted have no single value after the `if`."""
        return {
            name: self._unusable(name, "in one branch only, or not to a number or expression")
            for name in self.before
            if name not in self.hoisted
        }


def _dtype_of(value, old):
    for x in (value, old):
        if isinstance(x, _C.Expr):
            return x.dtype.name
    for x in (value, old):
        if isinstance(x, bool):
            return "bool"
        if isinstance(x, float):
            return "float32"
    return "int32"


def _own_ifs(ctx):
    """The open symbolic ifs of the function being traced (a macro sees only its own)."""
    base = ctx.macro_frames[-1] if ctx.macro_frames else 0
    return [state for state in ctx.if_stack if state.depth >= base]


def _open_if(ctx):
    """The symbolic `if` whose branch is the innermost IR frame, if any."""
    for kind in reversed(ctx.frames):
        if kind == PY_LOOP:
            continue
        return ctx.if_stack[-1] if kind == IR_IF else None
    return None


def if_(cond, names=(), both=(), local_vars=None):
    cond = to_value(cond)
    if not _symbolic(cond):
        return _truth(cond)
    return SymbolicIf(_current(), cond, names, both, local_vars or {})


def else_(token):
    if isinstance(token, SymbolicIf):
        _current().builder.begin_else()
        return True
    return not token


def else_locals(token):
    """Rebinds for the start of a symbolic `else` (see SymbolicIf.start_else)."""
    return token.start_else() if isinstance(token, SymbolicIf) else {}


def endif(token):
    """Closes a symbolic `if`; returns the names to rebind after it."""
    if not isinstance(token, SymbolicIf):
        return {}
    ctx = _current()
    ctx.frames.pop()
    ctx.if_stack.pop()
    ctx.builder.end_if()
    return token.finish()


# ---- subscript stores
def setitem(obj, key, value):
    """`A[i] = v`: checks that v is something a buffer element can hold."""
    from .vector import LaneVector  # vector imports modules this one imports

    if isinstance(obj, Buffer) and not (
        _is_scalar(value)
        or isinstance(value, (VarBuffer, LaneVector, Region))
        or hasattr(value, "__tl_expr__")
    ):
        if isinstance(value, Buffer):
            fix = f"copy tiles with T.copy(src, {obj.name}[...])"
        else:
            fix = "store a number or an expression"
        raise frontend_error(
            f"cannot store {_describe(value)} into buffer '{obj.name}' ({obj.dtype}); {fix}"
        )
    obj[key] = value


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
class _OneTuple:
    """`with T.Kernel(n) as (bx,)`: the frame's single block index as a 1-tuple, as
    TileLang allows."""

    __tl_with__ = True

    def __init__(self, frame):
        self.frame = frame

    def __enter__(self):
        value = self.frame.__enter__()
        return value if isinstance(value, (tuple, list)) else (value,)

    def __exit__(self, *exc):
        return self.frame.__exit__(*exc)


def with_(obj, unpack=None):
    if isinstance(obj, Kernel) or getattr(obj, "__tl_with__", False):
        return _OneTuple(obj) if unpack == 1 else obj
    if _current().builder.in_kernel:
        raise frontend_error(
            f"`with` on a {type(obj).__name__} object is not supported inside a kernel; "
            "only `with T.Kernel(...)` opens a block"
        )
    return obj


def macro_return(value):
    """`return` in a @T.macro: only where no IR frame opened by the macro is still open."""
    ctx = _current()
    base = ctx.macro_frames[-1] if ctx.macro_frames else len(ctx.frames)
    if any(kind != PY_LOOP for kind in ctx.frames[base:]):
        raise frontend_error(
            "`return` inside a loop or symbolic `if` of a @T.macro is not supported; assign "
            "the result to a T.alloc_var and return it at the end of the macro"
        )
    return value


def mark_rewritten(func):
    func.__tl_rewritten__ = True
    return func


def expr_stmt(value):
    """A call on its own line: an expression call (T.call_extern, a shuffle ...) is
    evaluated for its effect, as TVMScript's T.evaluate; anything else (a tile op,
    which emitted itself and returned None; a Python call) is left as it is."""
    if isinstance(value, _C.Expr) and value.kind == "Call":
        ctx = _current()
        if ctx.builder.in_kernel:
            ctx.builder.evaluate(value)
    return value


HOOKS = {
    "_tl_expr_stmt": expr_stmt,
    "_tl_name": name_next,
    "_tl_assign": assign,
    "_tl_unpack": unpack,
    "_tl_annotated": annotated,
    "_tl_declare": declare,
    "_tl_return": return_,
    "_tl_for": for_,
    "_tl_while": while_,
    "_tl_break": break_,
    "_tl_continue": continue_,
    "_tl_if": if_,
    "_tl_else": else_,
    "_tl_else_locals": else_locals,
    "_tl_endif": endif,
    "_tl_scope_locals": scope_locals,
    "_tl_outer_names": outer_names,
    "_tl_setitem": setitem,
    "_tl_slice": slice,
    "_tl_macro_return": macro_return,
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
        with contextlib.suppress(ValueError):  # a cell not filled yet
            ns[name] = cell.cell_contents
    if "range" not in ns:
        ns["range"] = python_range
    ns.update(HOOKS)
    set_line = functools.partial(ctx.builder.set_line, code.co_filename)

    def line(number):
        ctx.line = number
        set_line(number)

    ns["_tl_line"] = line
    return ns
