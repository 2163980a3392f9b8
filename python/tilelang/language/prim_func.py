"""Tracing entry points: `@T.prim_func` (trace a function with annotated parameters into
a PrimFunc at decoration time), `@T.macro` (a helper inlined while tracing), and the
common runner that executes rewritten code under a builder and reports user errors at
the user's file:line with a short traceback."""

from __future__ import annotations

import contextlib
import inspect
import os
import types
from typing import Any, Callable

from . import builder_ctx
from .ast_rewrite import REWRITTEN_FILES, located_error, rewritten_code
from .buffer import wrap_buffer
from .builder_ctx import TileLangError, TraceContext, frontend_error
from .dtypes import dtype as DType
from .hooks import namespace
from .kernel import close_function_kernel
from .pointers import PointerParam, PointerType, check_all_made
from .shapes import TensorAnnotation

_C = builder_ctx._C
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def instantiate(func, ctx, is_macro=False):
    """The rewritten function, bound to `ctx`'s builder."""
    try:
        code, name = rewritten_code(func, is_macro)
    except TileLangError as err:
        raise err.with_traceback(None) from None
    ns = namespace(func, ctx)
    exec(code, ns)  # noqa: S102 - runs the user's own, rewritten kernel source
    fn = ns[name]
    fn.__defaults__ = func.__defaults__
    fn.__kwdefaults__ = func.__kwdefaults__
    return fn


def _user_frames(tb):
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE_DIR):
            frames.append(tb)
        tb = tb.tb_next
    return frames


def _short_traceback(tb):
    """The traceback without the frontend's own frames."""
    out = None
    for entry in reversed(_user_frames(tb)):
        out = types.TracebackType(out, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return out


def _user_line(tb):
    line = None
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in REWRITTEN_FILES:
            line = (filename, tb.tb_lineno)
        tb = tb.tb_next
    return line


def _located(err):
    """The error with the user's file:line in front when it has none yet."""
    if getattr(err, "file", None):
        return err
    where = _user_line(err.__traceback__)
    if where is None:
        return err
    message = getattr(err, "bare_message", None) or str(err)
    return located_error(message, *where, like=err)


def run_traced(ctx, func, args, kwargs, prologue=None):
    """Runs the rewritten `func` under `ctx`; returns what it returns. `prologue()`, run
    under `ctx` first, may give the (args, kwargs) to call it with instead."""
    fn = instantiate(func, ctx)
    builder_ctx.push(ctx)
    try:
        if prologue is not None:
            args, kwargs = prologue()
        result = fn(*args, **kwargs)
        close_function_kernel(ctx)
        return result
    except TileLangError as err:
        clean = _located(err)
        raise clean.with_traceback(_short_traceback(err.__traceback__)) from None
    finally:
        builder_ctx.pop()


def finish(ctx):
    try:
        return ctx.builder.finish()
    except TileLangError as err:
        raise err.with_traceback(None) from None


def _resolve_annotation(func, name, annotation):
    if type(annotation) is str:  # a postponed annotation (T.int32 is a str subclass)
        ns = dict(func.__globals__)
        for var, cell in zip(func.__code__.co_freevars, func.__closure__ or ()):
            with contextlib.suppress(ValueError):
                ns[var] = cell.cell_contents
        annotation = eval(annotation, ns)
    return annotation


class Undeclared:
    """What an unannotated T.prim_func parameter holds until the body declares it
    (`A: T.Tensor((M, N), T.float32)`)."""

    def __init__(self, name, func_name):
        self._name, self._func_name = name, func_name

    def _error(self, *_, **__):
        raise frontend_error(
            f"parameter '{self._name}' of T.prim_func '{self._func_name}' is used before the "
            f"body declares it (`{self._name}: T.Tensor((M, N), T.float32)` or "
            f"`{self._name}: T.int32`)"
        )

    __getitem__ = __setitem__ = __getattr__ = __call__ = __iter__ = __len__ = _error
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __bool__ = _error

    def __repr__(self):
        return f"<undeclared parameter '{self._name}'>"


def _missing_annotation(func, name):
    return frontend_error(
        f"parameter '{name}' of T.prim_func '{func.__name__}' needs an annotation such as "
        f"T.Tensor((M, N), T.float32) or T.int32, in the signature or as the body's "
        f"`{name}: T.Tensor(...)`"
    )


def _declare_param(builder, func, name, annotation):
    if annotation is inspect.Parameter.empty:
        raise _missing_annotation(func, name)
    annotation = _resolve_annotation(func, name, annotation)
    if isinstance(annotation, TensorAnnotation):
        return wrap_buffer(annotation.declare(builder, name))
    if isinstance(annotation, PointerType):
        return PointerParam(name, func.__name__, annotation)
    # By identity: `in` would compare an expression annotation (`x: T.Var(...)`) with ==.
    if isinstance(annotation, DType) or any(annotation is t for t in (int, float, bool)):
        return builder.scalar_param(name, DType(annotation))
    raise frontend_error(
        f"parameter '{name}' of T.prim_func '{func.__name__}' must be annotated with "
        f"T.Tensor(shape, dtype), a dtype or T.ptr, got {annotation!r} "
        f"(a {type(annotation).__name__})"
    )


def _where(func):
    return func.__code__.co_filename, func.__code__.co_firstlineno


def trace_prim_func(func):
    """Traces `func` into a core PrimFunc and its attributes. A parameter is annotated in
    the signature or, left unannotated there, declared by the body
    (`A: T.Tensor(...)`); the parameters keep the signature's order, T.empty outputs
    (returned by the body) follow."""
    file, line = _where(func)
    ctx = TraceContext(func.__name__, file, line, "prim_func")
    names = list(inspect.signature(func).parameters)
    params = []
    try:
        for p in inspect.signature(func).parameters.values():
            if p.annotation is inspect.Parameter.empty:
                ctx.undeclared.add(p.name)
                params.append(Undeclared(p.name, func.__name__))
                continue
            value = _declare_param(ctx.builder, func, p.name, p.annotation)
            ctx.params.append((p.name, value))
            params.append(value)
    except TileLangError as err:
        message = getattr(err, "bare_message", None) or str(err)
        raise located_error(message, file, line, like=err) from None
    run_traced(ctx, func, params, {})
    try:
        for name in names:
            if name in ctx.undeclared:
                raise _missing_annotation(func, name)
        check_all_made(ctx, f"T.prim_func '{func.__name__}'")
        if ctx.outputs and ctx.out_idx is None:
            raise frontend_error(
                f"T.prim_func '{func.__name__}' makes outputs with T.empty "
                f"({', '.join(repr(n) for n in ctx.outputs)}) but does not return them"
            )
    except TileLangError as err:
        raise located_error(err.bare_message, file, line, like=err) from None
    ctx.builder.order_params(names)
    return finish(ctx), func_attrs(ctx)


def func_attrs(ctx):
    """TileLang's function-level attributes of a traced function."""
    attrs = {"global_symbol": ctx.name}
    if ctx.out_idx:
        attrs["tilelang_out_idx"] = list(ctx.out_idx)
    if ctx.func_pass_configs is not None:
        attrs["tilelang_pass_configs"] = dict(ctx.func_pass_configs)
    if ctx.func_compile_flags is not None:
        flags = ctx.func_compile_flags
        attrs["tilelang_compile_flags"] = [flags] if isinstance(flags, str) else list(flags)
    return attrs


class PrimFunc:
    """A traced kernel: what `@T.prim_func` returns and `tilelang.compile` accepts."""

    def __init__(
        self, core: Any, func: Callable[..., Any] | None = None, attrs: dict[str, Any] | None = None
    ) -> None:
        self.core = core
        self.func = func
        self.__name__ = core.name
        self.__doc__ = getattr(func, "__doc__", None)
        self._attrs = dict(attrs) if attrs else {"global_symbol": core.name}

    @property
    def name(self) -> str:
        return self.core.name

    @property
    def attrs(self) -> dict[str, Any]:
        """TileLang's function attributes: "global_symbol", and where the body gives them,
        "tilelang_out_idx" (the returned T.empty outputs), "tilelang_pass_configs"
        (T.annotate_pass_configs) and "tilelang_compile_flags" (T.annotate_compile_flags);
        tilelang.compile merges them with its own arguments."""
        return dict(self._attrs)

    @property
    def params(self) -> list:
        return list(self.core.param_names)

    @property
    def buffer_map(self) -> dict:
        """TVM's buffer_map: each tensor parameter's name (an entry of `params`) mapped to
        its buffer (name, dtype, shape); scalar parameters have none."""
        out = {}
        for i, name in enumerate(self.params):
            core = self.core.param_buffer(i)
            if core is not None:
                out[name] = wrap_buffer(core)
        return out

    def with_attr(self, key: str | dict[str, Any], value: Any = None) -> PrimFunc:
        """A copy with the attribute `key` set to `value` (or every item of a dict), as
        TVM's PrimFunc.with_attr: "global_symbol" renames the kernel (a C identifier);
        "tilelang_out_idx", "tilelang_pass_configs" and "tilelang_compile_flags" are what
        tilelang.compile merges with its arguments; other keys are kept as given."""
        items = dict(key) if isinstance(key, dict) else {key: value}
        core, attrs = self.core, dict(self._attrs)
        for k, v in items.items():
            if not isinstance(k, str):
                raise TypeError(f"PrimFunc.with_attr: an attribute name is a string, got {k!r}")
            if k == "global_symbol":
                if not isinstance(v, str) or not v.isidentifier():
                    raise ValueError(
                        f"PrimFunc.with_attr: global_symbol names the kernel and must be a C "
                        f"identifier, got {v!r}"
                    )
                core = core.renamed(v)
            attrs[k] = v
        return PrimFunc(core, self.func, attrs)

    @property
    def body(self) -> Any:
        """TVM's statement tree of the function: not here (tilelang's IR is C++). A stand-in
        whose every use raises OutOfScopeError; `script()` prints the IR."""
        from tilelang.tvm._scope import refused_name

        return refused_name(
            "tilelang PrimFunc.body (a TVM statement tree)",
            "tilelang's IR is C++: func.script() prints it, kernel.get_kernel_source() shows "
            "the generated code",
        )

    def script(self) -> str:
        return self.core.script()

    def __str__(self):
        return self.core.script()

    def __repr__(self):
        return self.core.script()

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError(
            f"T.prim_func '{self.name}' is not callable; compile it first with "
            "tilelang.compile(func, out_idx=...)"
        )


def prim_func(
    func: Callable[..., Any] | None = None, *, private: bool = False, check_well_formed: bool = True
) -> Any:
    """Decorator: traces the function now and returns a PrimFunc."""
    if func is None:
        return lambda f: prim_func(f, private=private)
    return _traced(func)


def _traced(func):
    core, attrs = trace_prim_func(func)
    return PrimFunc(core, func, attrs)


class Ref:
    """`x: T.Ref` on a parameter of a @T.macro: the argument is passed by reference, as a
    C++ `T&`. It must be a T.alloc_var scalar, one element of a buffer (`A[i, j]`, its
    indices evaluated once at the call) or a slice; assigning the parameter's name in the
    macro (`x = v`, `x += v`) stores into that variable or element, and reading it reads
    the current value. `x: T.Var` means the same (TileLang's older spelling)."""

    def __init__(self) -> None:
        raise TypeError("T.Ref is a parameter annotation of a @T.macro, not a value")


def _is_ref_annotation(annotation, func):
    from .math import Var

    if isinstance(annotation, str):  # `from __future__ import annotations`
        try:
            annotation = eval(annotation, func.__globals__)
        except (NameError, AttributeError, SyntaxError, TypeError):
            return False
    return annotation is Ref or annotation is Var


def _reference_argument(ctx, macro, name, value):
    """What a `name: T.Ref` parameter of `macro` receives for the argument `value`."""
    from .buffer import Buffer, Region, VarBuffer

    if isinstance(value, (VarBuffer, Region)):
        return value
    element = ctx.element_of(value) if isinstance(value, _C.Expr) else None
    if element is None or isinstance(element[0], VarBuffer) and list(element[1]) != [0]:
        shown = f"buffer '{value.name}'" if isinstance(value, Buffer) else repr(value)
        raise frontend_error(
            f"argument '{name}' of macro '{macro}' is passed by reference (T.Ref), so it "
            f"must be a T.alloc_var, a buffer element such as A[i] or a slice, got {shown} "
            f"({type(value).__name__})"
        )
    buffer, indices = element
    if isinstance(buffer, VarBuffer):
        return buffer
    fixed = []
    for index in indices:  # the element the call names, whatever the indices do later
        index = _C.const(index, "int32") if isinstance(index, int) else index
        if index.const_value() is None and index.kind != "Var":
            index = ctx.builder.let(f"{name}_index", index)
        fixed.append(index)
    load = _C.buffer_load(buffer.handle, fixed)
    ctx.remember_load(load, buffer, fixed)
    ctx.__dict__.setdefault("element_refs", {})[id(load)] = (load, buffer, fixed)
    return load


class Macro:
    """`@T.macro`: a helper whose body is traced inline where it is called. Its parameters
    are ordinary Python values (buffers, expressions, ints, other macros); it may return
    values, call other macros and open its own loops and ifs. A parameter annotated
    `T.Ref` (or `T.Var`) is passed by reference (see Ref)."""

    def __init__(self, func: Callable[..., Any]) -> None:
        self.func = func
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self.__wrapped__ = func
        try:
            params: Any = inspect.signature(func).parameters.values()
        except (TypeError, ValueError):
            params = ()
        self.ref_params = {
            p.name
            for p in params
            if p.annotation is not p.empty and _is_ref_annotation(p.annotation, func)
        }

    def _bind_references(self, ctx, args, kwargs):
        bound = inspect.signature(self.func).bind(*args, **kwargs)
        for name in self.ref_params & set(bound.arguments):
            bound.arguments[name] = _reference_argument(
                ctx, self.func.__name__, name, bound.arguments[name]
            )
        return bound.args, bound.kwargs

    def __repr__(self):
        return f"<T.macro {self.func.__name__}>"

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        ctx = builder_ctx.current(f"macro '{self.func.__name__}'")
        if getattr(self.func, "__tl_rewritten__", False):
            fn = self.func  # defined inside a kernel: rewritten with it
        else:
            fn = instantiate(self.func, ctx, is_macro=True)
        if self.ref_params:
            args, kwargs = self._bind_references(ctx, args, kwargs)
        ctx.macro_frames.append(len(ctx.frames))
        try:
            return fn(*args, **kwargs)
        finally:
            ctx.macro_frames.pop()


def macro(func: Callable[..., Any] | None = None, *, hygienic: bool = True) -> Any:
    if func is None:
        return Macro
    return Macro(func)
