"""Eager `@tilelang.jit` functions: the body declares its tensors (`A: T.Tensor((M, K),
dtype)`), sizes (`T.const`), outputs (`T.empty`) and returns them. A call binds the
consts from the argument shapes, traces and compiles once per specialization, and runs."""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterable
from typing import Any, Callable

import numpy as np

from tilelang.language.buffer import Buffer
from tilelang.language.builder_ctx import TileLangError, TraceContext, frontend_error
from tilelang.language.hooks import declare
from tilelang.language.kernel import DiscoveryDone
from tilelang.language.pointers import PointerType, check_all_made
from tilelang.language.prim_func import PrimFunc, finish, func_attrs, run_traced
from tilelang.language.shapes import TensorAnnotation

from . import log
from .kernel import JITKernel
from .specializations import Specializations


def is_tensor(value):
    return isinstance(value, np.ndarray) or hasattr(value, "__dlpack__")


def tensor_like(value):
    """A tensor, or a `T.Tensor(shape, dtype)` annotation standing for one (get_tir)."""
    return is_tensor(value) or isinstance(value, TensorAnnotation)


def freeze(value):
    """A hashable cache key for a Python argument."""
    if isinstance(value, (bool, int, float, str, bytes, type(None))):
        return (type(value).__name__, value)
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(freeze(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple(sorted((str(k), freeze(v)) for k, v in value.items())))
    if tensor_like(value):
        return ("tensor", str(value.dtype), len(value.shape))
    try:
        hash(value)
        return value
    except TypeError:
        return ("id", id(value))


class Specialization:
    """One compiled variant: the kernel and how the function's arguments map onto it."""

    def __init__(self, kernel, input_names, returned):
        self.kernel = kernel
        self.input_names = input_names
        self.returned = returned  # None, an int (param index) or a tuple of indices

    def call(self, values):
        full = self.kernel.run([values.get(name) for name in self.input_names])
        if self.returned is None:
            return None
        if isinstance(self.returned, tuple):
            return [full[i] for i in self.returned]
        return full[self.returned]


class EagerFunction:
    """What `@tilelang.jit` returns for an eager-style function."""

    __test__ = False  # never collected by pytest, as LazyJIT

    def __init__(self, func: Callable[..., Any], options: Any) -> None:
        from .binding import JITFunc

        self.fn = func
        self._jit_func = JITFunc(func, mode="eager")
        self.options = options
        self.signature = inspect.signature(func)
        self.__name__ = func.__name__
        self.__doc__ = func.__doc__
        self._signature_types = _signature_types(func, self.signature)
        self._const_maps: dict = {}
        self._kernels = Specializations()
        self._last_spec = None

    @property
    def func(self) -> Any:
        """The decorated function as TileLang's `.func` (a binding.JITFunc): calling it
        calls the function; `_parse_phase1_key(*args)` splits a call into its key,
        its tensors and its compile-time values."""
        return self._jit_func

    # ---- tracing
    def _context(self, mode, const_values=None):
        code = self.fn.__code__
        return TraceContext(
            self.fn.__name__, code.co_filename, code.co_firstlineno, mode, const_values
        )

    def _bind(self, args, kwargs, partial=False):
        bound = (self.signature.bind_partial if partial else self.signature.bind)(*args, **kwargs)
        bound.apply_defaults()
        for name in self.signature.parameters:
            bound.arguments.setdefault(name, None)
        return bound

    def _prologue(self, bound):
        """Declares the parameters annotated in the signature (`A: T.Tensor(...)`), as the
        body's annotations would; the call then passes their buffers."""
        if not self._signature_types:
            return None

        def declare_all():
            values = inspect.BoundArguments(self.signature, dict(bound.arguments))
            for name, annotation in self._signature_types.items():
                values.arguments[name] = declare(name, annotation)
            return values.args, values.kwargs

        return declare_all

    def _discover_trace(self, bound):
        """Traces the declarations only (up to the first T.Kernel); returns the trace's
        context, its `where` set to {const name: (param name, dim, kind) or None}."""
        ctx = self._context("discover")
        with contextlib.suppress(DiscoveryDone):
            run_traced(ctx, self.fn, bound.args, bound.kwargs, self._prologue(bound))
        ctx.where = {name: self._find_dim(ctx, var) for name, var in ctx.const_vars.items()}
        return ctx

    def _discover(self, bound):
        """Traces the declarations only: ({const name: (param name, dim)}, declared names)."""
        ctx = self._discover_trace(bound)
        where = ctx.where
        declared = frozenset(name for name, _ in ctx.params)
        for name, value in bound.arguments.items():
            if tensor_like(value) and name not in declared:
                raise frontend_error(
                    f"argument '{name}' of '{self.fn.__name__}' is a tensor but the body never "
                    f"declares it; add `{name}: T.Tensor(shape, dtype)`"
                )
        return where, declared

    @staticmethod
    def _find_dim(ctx, var):
        """(param name, dim, "shape" or "stride", elements per byte of a packed sub-byte
        parameter's tensor, else 1)."""
        for name, buf in ctx.params:
            if name in ctx.outputs or not isinstance(buf, Buffer):
                continue
            for dim, extent in enumerate(buf.handle.shape):
                if extent.same_as(var):
                    return name, dim, "shape", _per_byte(buf)
        # A T.const may also be a stride of a StridedTensor parameter.
        for name, buf in ctx.params:
            if name in ctx.outputs or not isinstance(buf, Buffer):
                continue
            for dim, stride in enumerate(buf.handle.strides):
                if stride.same_as(var):
                    return name, dim, "stride", _per_byte(buf)
        return None

    def _trace_prim_func(self, bound, const_values):
        """The traced PrimFunc of a specialization (nothing compiled) and its trace."""
        ctx = self._context("eager", const_values)
        run_traced(ctx, self.fn, bound.args, bound.kwargs, self._prologue(bound))
        try:
            check_all_made(ctx, f"'{self.fn.__name__}'")
        except TileLangError as err:
            raise err.with_traceback(None) from None
        return PrimFunc(finish(ctx), self.fn, func_attrs(ctx)), ctx

    def _trace(self, bound, const_values):
        prim_func, ctx = self._trace_prim_func(bound, const_values)
        kernel = JITKernel(prim_func, out_idx=self._out_idx(ctx), **self.options)
        return self._specialization(kernel, ctx)

    @staticmethod
    def _out_idx(ctx):
        names = [name for name, _ in ctx.params]
        return [names.index(n) for n in ctx.outputs]

    def _specialization(self, kernel, ctx):
        inputs = [name for name, _ in ctx.params if name not in ctx.outputs]
        return Specialization(kernel, inputs, self._returned(ctx))

    def _returned(self, ctx):
        value = ctx.returned
        if value is None:
            return None
        bufs = [b for _, b in ctx.params]

        def index(v):
            for i, b in enumerate(bufs):
                if v is b:
                    return i
            raise frontend_error(
                f"'{self.fn.__name__}' must return tensors it declared (T.empty outputs or "
                f"parameters), got {v!r}"
            )

        if isinstance(value, (tuple, list)):
            return tuple(index(v) for v in value)
        return index(value)

    @staticmethod
    def _spec_key(bound, declared, const_values):
        config = tuple((n, freeze(v)) for n, v in bound.arguments.items() if n not in declared)
        return (config, tuple(sorted(const_values.items())))

    def _specialize(self, bound, declared, const_values):
        """The compiled variant for these config arguments and const values."""
        key = self._spec_key(bound, declared, const_values)
        spec = self._kernels.get(key)
        if spec is None:
            self._log_specialization(bound, declared, const_values)
            spec = self._kernels[key] = self._trace(bound, const_values)
        return spec

    def _log_specialization(self, bound, declared, const_values):
        if not log.logger.isEnabledFor(log.logging.DEBUG):
            return
        values = {}
        for name, value in bound.arguments.items():
            if name in declared:
                if is_tensor(value):
                    values[name] = log.Described(f"{value.dtype}[{len(value.shape)}d]")
            else:
                values[name] = value
        values.update(const_values)
        log.logger.debug(
            "new specialization #%d of '%s': %s",
            self._kernels.made + 1,
            self.__name__,
            log.describe_arguments(values, self._last_spec),
        )
        self._last_spec = values

    # ---- public API
    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        bound, spec = self._spec_for_call(args, kwargs)
        return spec.call(bound.arguments)

    def _spec_for_call(self, args, kwargs):
        bound = self._bind(args, kwargs)
        plan_key = tuple((n, freeze(v)) for n, v in bound.arguments.items())
        plan = self._const_maps.get(plan_key)
        if plan is None:
            plan = self._const_maps[plan_key] = self._discover(bound)
        where, declared = plan
        const_values = self._bind_consts(where, bound.arguments)
        return bound, self._specialize(bound, declared, const_values)

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source of the kernel these arguments select: the call's
        arguments (tensors and config values; nothing runs), or with keywords only,
        config values and T.const values as compile() takes them."""
        if args:
            return self._spec_for_call(args, kwargs)[1].kernel.get_kernel_source()
        return self.compile(**kwargs).get_kernel_source()

    def _bind_consts(self, where, values):
        out = {}
        for name, place in where.items():
            if place is None:
                raise frontend_error(
                    f"T.const '{name}' of '{self.fn.__name__}' is not a dimension of any tensor "
                    f"argument; give it with {self.fn.__name__}.compile({name}=...)"
                )
            value = values[place[0]]
            if isinstance(value, TensorAnnotation):
                out[name] = _annotated_size(value, *place[1:3], name, self.fn.__name__)
                continue
            out[name] = const_from_tensor(value, place)
        return out

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """Compiles without running and returns the JITKernel: for a call's arguments
        (`f.compile(q, kv, indices, heads)`: tensors, or `T.Tensor(shape, dtype)` in their
        place, and config values, as TileLang's `compile(*args)` takes them), or with
        keywords only, for config values and T.const values."""
        if args:
            return self._spec_for_call(args, kwargs)[1].kernel
        bound, declared, consts = self._compile_plan(kwargs)
        return self._specialize(bound, declared, consts).kernel

    def _compile_plan(self, kwargs):
        config = {k: v for k, v in kwargs.items() if k in self.signature.parameters}
        consts = {k: int(v) for k, v in kwargs.items() if k not in config}
        bound = self._bind((), config, partial=True)
        where, declared = self._discover(bound)
        unknown = sorted(set(consts) - set(where))
        missing = sorted(set(where) - set(consts))
        if unknown or missing:
            raise TypeError(
                f"{self.fn.__name__}.compile() got unknown names {unknown} and lacks T.const "
                f"values {missing}; the function declares T.const {sorted(where)}"
            )
        return bound, declared, consts

    def get_tir(self, *args: Any, **kwargs: Any) -> Any:
        """The traced T.prim_func (nothing compiled) for a call's arguments, where a
        `T.Tensor(shape, dtype)` may stand for a tensor, or with keywords only, for
        config values and T.const values as compile() takes them."""
        bound, declared, consts = self._plan(args, kwargs)
        spec = self._kernels.get(self._spec_key(bound, declared, consts))
        if spec is not None:
            return spec.kernel.prim_func
        return self._trace_prim_func(bound, consts)[0]

    def _plan(self, args, kwargs):
        """(bound arguments, declared names, T.const values) of get_tir's arguments."""
        if args or any(tensor_like(v) for v in kwargs.values()):
            bound = self._bind(args, kwargs)
            where, declared = self._discover(bound)
            return bound, declared, self._bind_consts(where, bound.arguments)
        return self._compile_plan(kwargs)

    def par_compile(
        self,
        configs: Iterable[tuple | dict],
        num_workers: int | None = None,
        ignore_error: bool = False,
    ) -> list[Any]:
        """Compiles the kernels of `configs` on `num_workers` threads, each config a tuple
        of positional arguments or a dict of keywords as get_tir takes them (tensors or
        `T.Tensor(shape, dtype)` standing for them, config values, T.const values);
        returns the JITKernels in order, and later calls that select those kernels reuse
        them. With ignore_error a config that fails gives None (and a warning)."""
        from . import _as_call, _compile_in_threads

        keys, funcs, out_idxs, traces = [], [], [], []
        for cfg in configs:
            args, kwargs = _as_call(cfg)
            try:  # tracing runs on this thread
                bound, declared, consts = self._plan(args, kwargs)
                key = self._spec_key(bound, declared, consts)
                spec = self._kernels.get(key)
                if spec is None:
                    prim_func, ctx = self._trace_prim_func(bound, consts)
                    out_idx = self._out_idx(ctx)
                else:
                    prim_func, ctx, out_idx = None, None, None
            except Exception as err:
                if not ignore_error:
                    raise
                log.logger.warning("par_compile: config %r failed: %s", cfg, err)
                key, spec, prim_func, ctx, out_idx = None, None, None, None, None
            keys.append(key)
            funcs.append(prim_func)
            out_idxs.append(out_idx)
            traces.append(ctx if spec is None else spec)
        label = f"par_compile {self.__name__}"
        kernels = _compile_in_threads(
            funcs, self.options, num_workers, ignore_error, label, out_idxs
        )
        out = []
        for key, kernel, trace in zip(keys, kernels, traces):
            if isinstance(trace, Specialization):
                out.append(trace.kernel)
                continue
            if kernel is not None:
                self._kernels[key] = self._specialization(kernel, trace)
            out.append(kernel)
        return out


def _signature_types(func, signature):
    """{name: annotation} of the parameters the signature annotates with a tensor type or
    a dtype (an eager function may declare them there instead of in the body)."""
    from tilelang.language.dtypes import dtype as DType
    from tilelang.language.prim_func import _resolve_annotation

    out = {}
    for p in signature.parameters.values():
        if p.annotation is inspect.Parameter.empty:
            continue
        annotation = _readable_annotation(func, p, _resolve_annotation)
        if isinstance(annotation, (TensorAnnotation, DType, PointerType)):
            out[p.name] = annotation
    return out


def _readable_annotation(func, param, resolve):
    """The parameter's annotation, or None for a postponed type hint naming what the
    frontend cannot see (`x: "SomeClass"`)."""
    try:
        return resolve(func, param.name, param.annotation)
    except (NameError, AttributeError, SyntaxError, TypeError):
        return None


def _annotated_size(annotation, dim, kind, const_name, func_name):
    """A T.const's value from a `T.Tensor(shape, dtype)` standing for an argument."""
    if kind == "shape":
        value = annotation.shape[dim]
    elif annotation.strides is not None:
        value = annotation.strides[dim]
    else:  # compact row-major
        value = 1
        for extent in annotation.shape[dim + 1 :]:
            value *= extent if isinstance(extent, int) else 0
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise frontend_error(
            f"T.const '{const_name}' of '{func_name}' takes {kind} {dim} of {annotation!r}, "
            f"which is not a positive integer"
        )
    return value


def _per_byte(buf):
    """Elements a byte holds in the tensor of a packed sub-byte parameter (int4,
    float4_e2m1fn: 2), else 1."""
    bits = buf.dtype.bits * buf.dtype.lanes
    return 8 // bits if bits < 8 and buf.dtype != "bool" else 1


def const_from_tensor(tensor, place, symbolic=False):
    """A T.const's value from the tensor argument at `place` (`_find_dim`). A packed
    sub-byte parameter's tensor holds bytes: its last dimension holds `per_byte` elements
    a byte and its other strides count `per_byte` elements a byte (the kernel's runtime
    reads it so), so a (256, 256) uint8 tensor binds `T.Tensor((M, K), float4_e2m1fn)` as
    M = 256, K = 512. With `symbolic`, a torch SymInt size or stride (FakeTensor tracing
    under torch.compile or torch.export) stays symbolic instead of being specialized to
    its traced value by int()."""
    _, dim, kind, per_byte = place
    exact = (lambda v: v) if symbolic else int
    if kind == "shape":
        value = exact(tensor.shape[dim])
        return value * per_byte if dim == len(tensor.shape) - 1 else value
    value = _element_stride(tensor, dim, exact)
    return value * per_byte if dim != len(tensor.shape) - 1 else value


def _element_stride(tensor, dim, exact=int):
    """Stride of `dim` in elements (numpy counts bytes, torch counts elements)."""
    stride = (
        tensor.stride(dim) if callable(getattr(tensor, "stride", None)) else tensor.strides[dim]
    )
    if hasattr(tensor, "itemsize") and not callable(getattr(tensor, "stride", None)):
        stride //= tensor.itemsize
    return exact(stride)
