"""`tilelang.compile` and `@tilelang.jit`: the two ways user code turns a kernel into a
callable JITKernel. `jit` supports both frontend styles: a factory returning a
T.prim_func (lazy) and a function whose body declares its tensors (eager)."""

from __future__ import annotations

import ast
import functools
import inspect
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any, Callable

from tilelang.env import is_cache_enabled, is_emulation_enabled
from tilelang.language.ast_rewrite import _parse_function
from tilelang.language.prim_func import PrimFunc
from tilelang.progress import Progress
from tilelang.transform import (
    normalize_pass_configs,
    scoped_pass_configs,
    with_scoped_pass_configs,
)
from tilelang.types import PassConfigs, TargetLike
from tilelang.utils.target import determine_target, scoped_target

from . import log
from .binding import JITFunc, call_form
from .eager import EagerFunction
from .export import load_kernel
from .kernel import JITKernel
from .specializations import Specializations

__all__ = ["JITKernel", "compile", "jit", "load_kernel", "par_compile"]


def compile(
    func: PrimFunc,
    out_idx: int | list[int] | None = None,
    execution_backend: str = "auto",
    target: TargetLike = "auto",
    target_host: TargetLike | None = None,
    verbose: bool = False,
    pass_configs: PassConfigs | None = None,
    compile_flags: str | list[str] | None = None,
) -> JITKernel:
    """Compiles a T.prim_func into a JITKernel. Compiling the same PrimFunc object again
    with the same settings returns the same JITKernel (a dict lookup on the PrimFunc)."""
    if not isinstance(func, PrimFunc):
        raise TypeError(
            f"tilelang.compile expects a T.prim_func, got {type(func).__name__}; decorate the "
            "kernel with @T.prim_func"
        )
    options = {
        "out_idx": out_idx,
        "target": target,
        "execution_backend": execution_backend,
        "pass_configs": pass_configs,
        "compile_flags": compile_flags,
        "verbose": verbose,
        "target_host": target_host,
    }
    if not is_cache_enabled():
        return JITKernel(func, **options)
    key = _memo_key(out_idx, execution_backend, target, target_host, pass_configs, compile_flags)
    memo: Any = func.__dict__.get(_MEMO_ATTR)
    # The IR is immutable, so the same core object means the same kernel; a PrimFunc
    # whose core was replaced starts a fresh memo.
    if memo is None or memo[0] is not func.core:
        memo = (func.core, {})
        setattr(func, _MEMO_ATTR, memo)
    kernel = memo[1].get(key) if key is not None else None
    if kernel is None:
        kernel = JITKernel(func, **options)
        if key is not None:
            memo[1][key] = kernel
    elif verbose:
        print(f"tilelang: kernel '{kernel.name}' for {kernel.target} (in-process cache)")
    return kernel


# The attribute of a PrimFunc holding (core, {settings key: JITKernel}).
_MEMO_ATTR = "_tl_compiled"


def _frozen(value: Any) -> Any:
    """A hashable stand-in for a pass-config value or an option list."""
    if value is None or type(value) in _PLAIN:
        return value
    if isinstance(value, dict):
        return tuple(sorted((str(k), _frozen(v)) for k, v in value.items()))
    if isinstance(value, (list, tuple)):
        return tuple(_frozen(v) for v in value)
    hash(value)  # TypeError for what cannot enter a key
    return value


_PLAIN = frozenset([str, int, float, bool])

# Call forms a factory keeps (the cache that skips binding); beyond, it starts again.
_MAX_CALL_FORMS = 4096


# os.environ.get costs microseconds for an unset variable (it raises and catches a
# KeyError); the hit path reads the environment's own dict instead, where it has one.
_ENVIRON = getattr(os.environ, "_data", None)
if not isinstance(_ENVIRON, dict) or not all(isinstance(k, bytes) for k in _ENVIRON):
    _ENVIRON = None


def _getenv(name: str) -> Any:
    if _ENVIRON is not None:
        return _ENVIRON.get(name.encode())
    return os.environ.get(name)


def _environment_key(target: Any, execution_backend: str | None) -> tuple:
    """What decides a compile besides the arguments: for target="auto" and
    execution_backend="auto" the environment variables, the emulation switch and an
    enclosing `with tvm.target.Target(...)`; the configs of enclosing PassContexts."""
    auto = target in (None, "auto")
    return (
        _getenv("TILELANG_DEFAULT_TARGET") if auto else None,
        scoped_target() if auto else None,
        _frozen(scoped_pass_configs()),
        is_emulation_enabled(),
        _getenv("TILELANG_EXECUTION_BACKEND") if execution_backend in (None, "auto") else None,
    )


def _memo_key(
    out_idx: Any,
    execution_backend: str,
    target: Any,
    target_host: Any,
    pass_configs: PassConfigs | None,
    compile_flags: Any,
) -> tuple | None:
    """Everything besides the PrimFunc that decides the kernel tilelang.compile returns,
    including what resolves target="auto" and execution_backend="auto" (environment
    variables, the emulation switch). None when a setting cannot be hashed: that call
    is not memoized."""
    try:
        key = (
            _frozen(target),
            execution_backend,
            _environment_key(target, execution_backend),
            _frozen(out_idx),
            _frozen(pass_configs) if pass_configs else None,
            _frozen(compile_flags.split() if isinstance(compile_flags, str) else compile_flags),
            _frozen(target_host),
        )
        hash(key)
        return key
    except TypeError:
        return None


def _top_level_statements(fn_node: ast.FunctionDef) -> Iterator[ast.stmt]:
    """Statements of the function body, without descending into nested functions."""
    stack = list(fn_node.body)
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        stack.extend(c for c in ast.iter_child_nodes(node) if isinstance(c, ast.stmt))


def _as_call(config: tuple | dict) -> tuple[tuple, dict]:
    if isinstance(config, dict):
        return (), config
    if isinstance(config, tuple):
        return config, {}
    raise TypeError(
        f"par_compile: each config must be a tuple of arguments or a dict of keywords, got "
        f"{type(config).__name__} {config!r}"
    )


def par_compile(
    funcs: Iterable[PrimFunc | None],
    out_idx: int | list[int] | None = None,
    execution_backend: str = "auto",
    target: TargetLike = "auto",
    target_host: TargetLike | None = None,
    verbose: bool = False,
    pass_configs: PassConfigs | None = None,
    compile_flags: str | list[str] | None = None,
    num_workers: int | None = None,
    ignore_error: bool = False,
) -> list[JITKernel | None]:
    """Compiles T.prim_funcs on `num_workers` threads (default: one per CPU, at most one
    per function); returns their JITKernels in order. The enclosing Target and
    PassContext scopes apply to every compile. With ignore_error a function that fails
    gives None (and a warning) instead of raising; a None in `funcs` stays None."""
    options = {"out_idx": out_idx, "execution_backend": execution_backend, "target": target,
               "target_host": target_host, "verbose": verbose, "compile_flags": compile_flags,
               "pass_configs": pass_configs}  # fmt: skip
    return _compile_in_threads(list(funcs), options, num_workers, ignore_error, "par_compile")


def _compile_in_threads(
    funcs: list[PrimFunc | None],
    options: dict[str, Any],
    num_workers: int | None,
    ignore_error: bool,
    label: str,
    out_idxs: list[list[int] | None] | None = None,
) -> list[JITKernel | None]:
    """par_compile's work, with a progress bar (shown when stderr is a terminal) named
    `label` and a summary line at INFO. A failure raises once all compiles ended: the
    first failed function's error, in the order of `funcs`. `out_idxs`, where given,
    is each function's out_idx (an eager function's T.empty outputs)."""
    from concurrent.futures import ThreadPoolExecutor, as_completed

    # Resolve the thread's scopes here: the worker threads do not see them.
    options = dict(options)
    options["target"] = determine_target(options["target"])
    options["pass_configs"] = with_scoped_pass_configs(options["pass_configs"])
    start = time.monotonic()
    results: list[JITKernel | None] = [None] * len(funcs)
    errors: dict[int, Exception] = {}
    workers = num_workers or min(len(funcs), os.cpu_count() or 1) or 1
    bar = Progress(f"{label}: compiling", len(funcs), "kernel")
    with bar, ThreadPoolExecutor(workers) as pool:
        futures = {
            pool.submit(compile, f, **_options_of(options, out_idxs, i)): i
            for i, f in enumerate(funcs)
            if f is not None
        }
        bar.advance(len(funcs) - len(futures))  # the None entries
        for future in as_completed(futures):
            index = futures[future]
            try:
                results[index] = future.result()
            except Exception as err:  # noqa: BLE001  (raised below, or logged)
                errors[index] = err
                if ignore_error:
                    name = getattr(funcs[index], "name", funcs[index])
                    log.logger.warning("%s: '%s' failed: %s", label, name, err)
                bar.note(f"{len(errors)} failed")
            bar.advance()
    log.logger.info(
        "%s: compiled %d kernel(s) (%d failed) on %d thread(s) in %.1f s",
        label,
        len(futures) - len(errors),
        len(errors),
        workers,
        time.monotonic() - start,
    )
    if errors and not ignore_error:
        raise errors[min(errors)]
    return results


def _options_of(
    options: dict[str, Any], out_idxs: list[list[int] | None] | None, index: int
) -> dict[str, Any]:
    if out_idxs is None:
        return options
    return {**options, "out_idx": out_idxs[index]}


def _tensor_type_annotation(node: ast.expr) -> bool:
    """Whether an annotation's AST is `T.Tensor(...)` / `T.Tensor[...]` (or StridedTensor)."""
    target = node.func if isinstance(node, ast.Call) else getattr(node, "value", None)
    if not isinstance(node, (ast.Call, ast.Subscript)):
        return False
    name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
    return name in ("Tensor", "StridedTensor")


def is_eager(func: Callable[..., Any]) -> bool:
    """True when the body itself is a kernel (a T.Kernel block or declared parameters),
    or the signature annotates a parameter as a tensor."""
    fn_node = _parse_function(func).body[0]
    args = fn_node.args
    for arg in args.posonlyargs + args.args + args.kwonlyargs:
        if arg.annotation is not None and _tensor_type_annotation(arg.annotation):
            return True
    for node in _top_level_statements(fn_node):
        if isinstance(node, ast.With):
            return True
        if isinstance(node, ast.AnnAssign) and node.value is None:
            return True
    return False


class _Compiled:
    """The kernels a factory built in one environment: by the key of their call
    (binding.JITFunc.parse_args), and each call form seen to that key."""

    def __init__(self) -> None:
        self.kernels = Specializations()
        self.calls: dict = {}


class LazyJIT:
    """A factory of T.prim_funcs; calling it compiles (once per arguments) and returns the
    kernel. Calls that bind to the same arguments (defaults applied, positional or by
    keyword) share one kernel (binding.py); a call written as before skips the binding."""

    # Not a test even when named test_*: pytest follows `__wrapped__` to the factory and
    # would collect it (TileLang's jit object has no `__wrapped__` and pytest skips it).
    __test__ = False

    def __init__(self, factory: Callable[..., PrimFunc], options: dict[str, Any]) -> None:
        self.factory = factory
        self.options = options
        self.__name__ = factory.__name__
        self.__doc__ = factory.__doc__
        self.mode = "lazy"
        self._func = JITFunc(factory)
        self._compiled: dict[tuple, _Compiled] = {}  # environment key -> _Compiled
        self._last_args: dict[str, Any] | None = None

    def _state(self) -> _Compiled:
        # The environment is part of the key: a factory called again after
        # TILELANG_DEFAULT_TARGET or the emulation switch changed builds anew.
        env = _environment_key(self.options["target"], self.options["execution_backend"])
        state = self._compiled.get(env)
        if state is None:
            state = self._compiled[env] = _Compiled()
        return state

    @property
    def _kernel_cache(self) -> Specializations:
        """{call key: JITKernel} of the current environment (TileLang's name)."""
        return self._state().kernels

    @property
    def _call_form_cache(self) -> dict:
        """{call as written: call key} of the current environment (TileLang's name)."""
        return self._state().calls

    def __call__(self, *args: Any, **kwargs: Any) -> JITKernel:
        state = self._state()
        form = call_form(args, kwargs)
        key = state.calls.get(form) if form is not None else None
        if key is None:
            key = self._func.parse_args(*args, **kwargs)[0]
            if form is not None:
                if len(state.calls) >= _MAX_CALL_FORMS:
                    state.calls.clear()
                state.calls[form] = key
        kernel = state.kernels.get(key)
        if kernel is None:
            kernel = state.kernels[key] = self._build(args, kwargs, state.kernels.made)
        return kernel

    @property
    def func(self) -> JITFunc:
        """The decorated factory as TileLang's `.func` (a binding.JITFunc): calling it
        calls the factory; `parse_args(*args)` gives the key of a call's kernel."""
        return self._func

    def get_kernel_source(self, *args: Any, **kwargs: Any) -> str:
        """The generated source of the kernel for these arguments (compiling it)."""
        return self(*args, **kwargs).get_kernel_source()

    def par_compile(
        self,
        configs: Iterable[tuple | dict],
        num_workers: int | None = None,
        ignore_error: bool = False,
    ) -> list[JITKernel | None]:
        """Compiles the kernels of `configs` (each a tuple of positional arguments or a
        dict of keywords) on `num_workers` threads; returns them in order, and later
        calls with those arguments reuse them. With ignore_error a config that fails
        gives None (and a warning) instead of raising."""
        calls = [_as_call(cfg) for cfg in configs]
        funcs: list[PrimFunc | None] = []
        for args, kwargs in calls:  # tracing runs on this thread
            try:
                funcs.append(self.factory(*args, **kwargs))
            except Exception as err:
                if not ignore_error:
                    raise
                log.logger.warning("par_compile: config %r failed: %s", (args, kwargs), err)
                funcs.append(None)
        label = f"par_compile {self.__name__}"
        kernels = _compile_in_threads(funcs, self.options, num_workers, ignore_error, label)
        state = self._state()
        for (args, kwargs), kernel in zip(calls, kernels):
            if kernel is not None:
                state.kernels[self._func.parse_args(*args, **kwargs)[0]] = kernel
        return kernels

    def _build(self, args: tuple, kwargs: dict[str, Any], made: int = 0) -> JITKernel:
        if log.logger.isEnabledFor(log.logging.DEBUG):
            values = self._named(args, kwargs)
            log.logger.debug(
                "new specialization #%d of '%s': %s",
                made + 1,
                self.__name__,
                log.describe_arguments(values, self._last_args),
            )
            self._last_args = values
        func = self.factory(*args, **kwargs)
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"the @tilelang.jit function '{self.__name__}' returned {type(func).__name__}; "
                "a factory must return a @T.prim_func (or write the kernel in the body itself)"
            )
        return JITKernel(func, **self.options)

    def _named(self, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
        try:
            bound = inspect.signature(self.factory).bind(*args, **kwargs)
            bound.apply_defaults()
            return dict(bound.arguments)
        except (TypeError, ValueError):
            return {**{f"arg{i}": a for i, a in enumerate(args)}, **kwargs}

    compile = __call__

    def get_tir(self, *args: Any, **kwargs: Any) -> PrimFunc:
        return self.factory(*args, **kwargs)


def jit(
    func: Callable[..., Any] | PrimFunc | None = None,
    *,
    out_idx: int | list[int] | None = None,
    target: TargetLike = "auto",
    target_host: TargetLike | None = None,
    execution_backend: str = "auto",
    verbose: bool = False,
    pass_configs: PassConfigs | None = None,
    debug_root_path: str | None = None,
    compile_flags: str | list[str] | None = None,
) -> Any:
    """`@tilelang.jit` / `@tilelang.jit(out_idx=..., target=...)` on a factory or eager function.

    Returns, by what it decorates: for a factory returning a T.prim_func, a `LazyJIT`
    (calling it compiles once per arguments and returns the JITKernel); for a function
    whose body is the kernel, an eager function that compiles and runs it; for a
    T.prim_func, its JITKernel; without `func`, the decorator with these settings."""
    normalize_pass_configs(pass_configs)  # a misspelt key fails here, not at the first call
    options = {
        "target": target,
        "target_host": target_host,
        "execution_backend": execution_backend,
        "verbose": verbose,
        "pass_configs": pass_configs,
        "compile_flags": compile_flags,
    }
    if func is None:
        return functools.partial(
            jit,
            out_idx=out_idx,
            target=target,
            target_host=target_host,
            execution_backend=execution_backend,
            verbose=verbose,
            pass_configs=pass_configs,
            debug_root_path=debug_root_path,
            compile_flags=compile_flags,
        )
    if isinstance(func, PrimFunc):
        return JITKernel(func, out_idx=out_idx, **options)
    if is_eager(func):
        if out_idx is not None:
            raise ValueError(
                f"out_idx cannot be used with the eager @tilelang.jit function '{func.__name__}'; "
                "its outputs are the T.empty tensors it returns"
            )
        return functools.update_wrapper(EagerFunction(func, options), func, updated=())
    return functools.update_wrapper(LazyJIT(func, dict(options, out_idx=out_idx)), func, updated=())


# `tilelang.jit` is this decorator once the package is imported (it shadows the module),
# so the module's loader is reachable from it as `tilelang.jit.load_kernel` too.
jit.load_kernel = load_kernel  # type: ignore[attr-defined]
jit.JITKernel = JITKernel  # type: ignore[attr-defined]
