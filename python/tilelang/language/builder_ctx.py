"""The state of one trace: the C++ FunctionBuilder that kernel code writes into, plus the
few facts the Python side must remember while a kernel body runs (open frames, element
loads that may be copy start points, names for buffers, eager-mode parameters)."""

import threading

from tilelang import _native

_C = _native.load()
TileLangError = _C.TileLangError


def frontend_error(message):
    """A user error raised by the Python frontend; the trace entry adds file:line."""
    err = TileLangError(message)
    err.file = None
    err.line = 0
    err.bare_message = message
    return err


# Kinds of entries on TraceContext.frames (what `break` / `return` must know about).
PY_LOOP, IR_LOOP, IR_IF, KERNEL = "python loop", "loop", "if", "kernel"


class TraceContext:
    """Everything one trace needs; lives only while the traced function runs."""

    def __init__(self, name, file, line, mode="prim_func", const_values=None):
        self.builder = _C.FunctionBuilder(name, _C.SourceSpan(file, line))
        self.name = name
        self.mode = mode  # "prim_func", "eager" or "discover" (eager, consts unknown)
        self.const_values = const_values
        self.const_vars = {}
        self.frames = []
        self.kernel_vars = None
        self.kernel_extents = None
        self.pending_name = None
        self.loads = {}
        self.names = {}
        self.params = []  # eager: (python name, Buffer or scalar Var) in declaration order
        self.outputs = []  # eager: names of T.empty outputs, in declaration order
        self.returned = None
        self.has_return = False

    # ---- naming
    def take_name(self, default):
        """The name of the assignment being evaluated (if any), made unique in this trace."""
        base = self.pending_name or default
        self.pending_name = None
        count = self.names.get(base, 0)
        self.names[base] = count + 1
        return base if count == 0 else f"{base}_{count}"

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
