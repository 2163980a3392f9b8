"""The state of one trace: the C++ FunctionBuilder that kernel code writes into, plus the
few facts the Python side must remember while a kernel body runs (open frames, element
loads that may be copy start points, names for buffers, eager-mode parameters)."""

import threading

from tilelang import _native

_C = _native.load()
TileLangError = _C.TileLangError


_ALSO_CLASSES: dict = {}


def error_class(also=None):
    """TileLangError, or a subclass of it that is also the builtin exception class `also`
    (AssertionError, TypeError ...): where TileLang refuses a program with that class, an
    `except` clause or `pytest.raises` written for it catches this package's error too."""
    if also is None or issubclass(TileLangError, also):
        return TileLangError
    cls = _ALSO_CLASSES.get(also)
    if cls is None:
        cls = type(f"TileLang{also.__name__}", (TileLangError, also), {"__module__": __name__})
        _ALSO_CLASSES[also] = cls
    return cls


def frontend_error(message, also=None):
    """A user error raised by the Python frontend; the trace entry adds file:line. `also`
    names a builtin exception class the error also is (error_class)."""
    err = error_class(also)(message)
    err.file = None
    err.line = 0
    err.bare_message = message
    return err


class CountingBuilder:
    """The C++ FunctionBuilder, plus the number of statements and of bindings (lets and
    allocations) made in each open frame so far: T.Pipelined checks its order=/stage= lists
    against the statement count, and a symbolic `if` may be split only before bindings.
    It also remembers the lets, allocations and loop variables whose frame has closed
    (`is_dead`): a Python name still holding one has no value in the IR there."""

    _OPENS = frozenset(("begin_kernel", "begin_for", "begin_if", "begin_while"))
    _CLOSES = frozenset(("end_kernel", "end_for", "end_if", "end_while"))
    _EMITS = frozenset(
        (
            "store",
            "evaluate",
            "emit_break",
            "emit_continue",
            "sync_threads",
            "sync_grid",
            "copy",
            "fill",
            "gemm",
            "tile_op",
        )
    )

    _BINDS = frozenset(("let", "let_var", "alloc"))

    def __init__(self, core):
        self.core = core
        self.counts = [0]
        self.bindings = [0]
        self.scoped = [[]]  # lets, allocations and loop variables of each open frame
        self.dead = {}  # id -> value, for those whose frame has closed (kept alive)

    def is_dead(self, value):
        """Whether `value` (a let, a loop variable, a buffer's core allocation) is one
        whose scope has ended."""
        return self.dead.get(id(value)) is value

    def add_scoped(self, *values):
        """Values the innermost frame binds beyond its lets and allocations (what a loop's
        names hold: its variables, or start + i * step)."""
        self.scoped[-1].extend(values)

    def _end_scope(self):
        for value in self.scoped[-1]:
            self.dead[id(value)] = value
        self.scoped[-1] = []

    def statements_in_frame(self):
        """Statements emitted so far into the innermost open frame."""
        return self.counts[-1]

    def bindings_in_frame(self):
        """Lets and allocations made so far in the innermost open frame."""
        return self.bindings[-1]

    def __getattr__(self, name):
        attr = getattr(self.core, name)
        if name in self._BINDS:  # lets and allocations end with their frame
            return self._wrap(attr, self._bound, scoped=True)
        if name in self._OPENS:
            return self._wrap(attr, self._opened)
        if name in self._CLOSES:
            return self._wrap(attr, self._closed)
        if name in self._EMITS:
            return self._wrap(attr, self._emitted)
        if name == "begin_else":
            return self._wrap(attr, self._else)
        return attr

    def _wrap(self, method, after, scoped=False):
        def call(*args, **kwargs):
            result = method(*args, **kwargs)
            after()
            if scoped:
                self.scoped[-1].append(result)
            return result

        return call

    def _opened(self):
        self.counts.append(0)
        self.bindings.append(0)
        self.scoped.append([])

    def _closed(self):
        if len(self.counts) > 1:
            self._end_scope()
            self.counts.pop()
            self.bindings.pop()
            self.scoped.pop()
        self.counts[-1] += 1

    def _bound(self):
        self.bindings[-1] += 1

    def _else(self):
        self._end_scope()  # the then-branch's lets
        self.counts[-1] = self.bindings[-1] = 0

    def _emitted(self):
        self.counts[-1] += 1


# Kinds of entries on TraceContext.frames (what `break` / `return` must know about).
PY_LOOP, IR_LOOP, IR_IF, KERNEL = "python loop", "loop", "if", "kernel"


class TraceContext:
    """Everything one trace needs; lives only while the traced function runs."""

    def __init__(self, name, file, line, mode="prim_func", const_values=None):
        self.builder = CountingBuilder(_C.FunctionBuilder(name, _C.SourceSpan(file, line)))
        self.name = name
        self.mode = mode  # "prim_func", "eager" or "discover" (eager, consts unknown)
        self.const_values = const_values
        self.const_vars = {}
        self.frames = []
        self.kernel_vars = None
        self.kernel_extents = None
        self.binding_kernel = None  # the kernel TVM-style T.thread_binding loops opened
        self.pending_name = None
        self.line = line  # the user's line being traced
        self.macro_frames = []  # len(frames) when each active @T.macro was entered
        self.alloc_mark = 0
        self.allocations = 0
        self.last_named = (
            None,
            None,
            0,
        )  # buffers allocated so far (tells a fresh T.alloc_var from a read)
        self.if_stack = []  # states of the open symbolic ifs (hooks.SymbolicIf)
        self.loop_kinds = []  # kinds of the open IR loops ("serial", "parallel", "while" ...)
        self.pipelined_loops = 0  # open T.Pipelined loops of one or more stages
        self.loop_pipelined = []  # per open IR loop: whether it is one of them
        self.loop_ids = []  # one number per open IR loop, never reused within the trace
        self.loops_opened = 0
        self.loop_ranges = []  # per open IR loop: (variable, min, extent), or None
        self.loads = {}
        self.names = {}
        self.params = []  # eager: (python name, Buffer or scalar Var) in declaration order
        self.outputs = []  # eager: names of T.empty outputs, in declaration order
        self.returned = None
        self.has_return = False
        # T.prim_func: parameters left unannotated in the signature, to be declared by
        # the body (`A: T.Tensor(...)`); names still waiting for their declaration.
        self.undeclared = set()
        self.out_idx = None  # T.prim_func: output indices of the returned T.empty tensors
        self.func_pass_configs = None  # T.annotate_pass_configs
        self.func_compile_flags = None  # T.annotate_compile_flags
        self.function_assumes = []  # T.assume conditions written outside T.Kernel blocks

    # ---- naming
    def take_name(self, default):
        """The name of the assignment being evaluated (if any), made unique in this trace."""
        target = self.pending_name
        base = target or default
        self.pending_name = None
        self.allocations += 1
        count = self.names.get(base, 0)
        self.names[base] = count + 1
        name = base if count == 0 else f"{base}_{count}"
        self.last_named = (target, name, self.allocations)
        return name

    def allocated_for(self, target, buffer, mark):
        """Whether `buffer` was allocated for the assignment to `target` begun at `mark`
        (`x = T.alloc_var(...)` rebinds x; `x = y` with y an existing buffer does not)."""
        last_target, last_name, index = self.last_named
        return last_target == target and last_name == buffer.name and index > mark

    # ---- element loads, remembered so that T.copy can use `A[i, j]` as a start point
    def remember_load(self, expr, buffer, indices):
        self.loads[hash(expr)] = (expr, buffer, indices)

    def element_of(self, expr):
        entry = self.loads.get(hash(expr))
        if entry is None or not entry[0].same_as(expr):
            return None
        return entry[1], entry[2]

    # ---- frames the Python side tracks
    def innermost_loop(self):
        """The kind of the innermost loop, and whether a symbolic if lies between."""
        crossed_if = False
        for kind in reversed(self.frames):
            if kind == IR_IF:
                crossed_if = True
            elif kind in (PY_LOOP, IR_LOOP):
                return kind, crossed_if
            elif kind == KERNEL:
                break
        return None, crossed_if

    def open_loop(self, kind, loop_range=None, pipelined=False):
        self.loop_kinds.append(kind)
        self.loop_pipelined.append(pipelined)
        self.pipelined_loops += pipelined
        self.loop_ranges.append(loop_range)
        self.loops_opened += 1
        self.loop_ids.append(self.loops_opened)

    def close_loop(self):
        self.loop_kinds.pop()
        self.pipelined_loops -= self.loop_pipelined.pop()
        self.loop_ranges.pop()
        self.loop_ids.pop()

    def in_ir_frame(self):
        return any(kind != PY_LOOP for kind in self.frames)


_state = threading.local()


def push(ctx):
    stack = getattr(_state, "stack", None)
    if stack is None:
        stack = _state.stack = []
    stack.append(ctx)


def pop():
    _state.stack.pop()


def current(what="this construct"):
    """The active trace, or a clear error when kernel code runs outside one."""
    stack = getattr(_state, "stack", None)
    if not stack:
        raise frontend_error(
            f"{what} can only be used inside a @T.prim_func, @T.macro or @tilelang.jit function body"
        )
    return stack[-1]


def maybe_current():
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None
