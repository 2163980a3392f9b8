"""The compile worker of the autotuner: a separate process that builds one config at a
time and reports the kernel's cache key (the kernel itself lands in the disk cache, so
the parent process loads it back without compiling).

Two ways to start one: a fresh interpreter (`python -c ...`, the default) that re-loads
the user's module from its file to find the kernel function, or a fork of the parent for
functions that cannot be found by name (closures, functions typed at a prompt)."""

import importlib.util
import os
import sys
import traceback

# True while a fresh worker executes the user's module: a tuning call at the module's top
# level then stops the loading (everything defined above it stays usable).
LOADING = False


class StopLoading(BaseException):
    """Raised by a tuning call made while a worker loads the user's module."""


class TensorStandIn:
    """Shape and dtype of a tensor argument of an eager kernel (the worker only traces)."""

    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        self.dtype = dtype

    def make(self):
        import numpy as np

        from tilelang.language.dtypes import dtype as DType

        return np.empty(self.shape, dtype=DType(self.dtype).as_numpy())


def first_line(exc):
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}".rstrip(": ")


# A config's key that is no argument of the function: pass configs for that config's
# compile, merged over the compile's own (TileLang's autotuner reserves the same name).
PASS_CONFIGS_KEY = "pass_configs"


def split_pass_configs(config):
    """(the config's function arguments, its pass configs or None)."""
    if PASS_CONFIGS_KEY not in config:
        return config, None
    rest = {k: v for k, v in config.items() if k != PASS_CONFIGS_KEY}
    return rest, config[PASS_CONFIGS_KEY]


def with_pass_configs(options, extra):
    """Compile options with a config's pass configs merged over theirs."""
    return dict(options, pass_configs={**(options.get("pass_configs") or {}), **extra})


def build(kind, fn, options, args, kwargs, config, eager_cache=None):
    """Compiles one config; returns the JITKernel (and the eager specialization)."""
    from tilelang.jit.eager import EagerFunction
    from tilelang.jit.kernel import JITKernel
    from tilelang.language.prim_func import PrimFunc

    config, extra = split_pass_configs(config)
    if extra:
        options, eager_cache = with_pass_configs(options, extra), None
    call_kwargs = {**kwargs, **config}
    if kind == "lazy":
        func = fn(*args, **call_kwargs)
        if not isinstance(func, PrimFunc):
            raise TypeError(
                f"'{fn.__name__}' returned {type(func).__name__} for config {config!r}; a "
                "tuned factory must return a @T.prim_func"
            )
        return JITKernel(func, **options), None
    eager = eager_cache if eager_cache is not None else EagerFunction(fn, options)
    if not args and any(k not in eager.signature.parameters for k in call_kwargs):
        # T.const values instead of tensors: nothing to run the kernel on afterwards.
        return eager.compile(**call_kwargs), None
    args = [a.make() if isinstance(a, TensorStandIn) else a for a in args]
    call_kwargs = {
        k: v.make() if isinstance(v, TensorStandIn) else v for k, v in call_kwargs.items()
    }
    bound = eager._bind(args, call_kwargs)
    where, declared = eager._discover(bound)
    consts = eager._bind_consts(where, bound.arguments)
    spec = eager._specialize(bound, declared, consts)
    return spec.kernel, (spec, bound)


def _serve(conn_in, conn_out, kind, fn, options):
    eager = None
    if kind == "eager":
        from tilelang.jit.eager import EagerFunction

        eager = EagerFunction(fn, options)
    conn_out.send(("ready", None, None))
    while True:
        try:
            task = conn_in.recv()
        except EOFError:
            return
        if task is None:
            return
        index, args, kwargs, config = task
        try:
            kernel, _ = build(kind, fn, options, args, kwargs, config, eager)
            conn_out.send(("ok", index, kernel.cache_key))
        except Exception as exc:  # noqa: BLE001  (a config's failure is reported, never fatal)
            conn_out.send(("error", index, (first_line(exc), traceback.format_exc())))


def _load_module(module_name, path):
    global LOADING
    name = "__tilelang_autotune_main__" if module_name == "__main__" else module_name
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    LOADING = True
    try:
        spec.loader.exec_module(module)
    except StopLoading:
        pass
    finally:
        LOADING = False
    return module


def _find(module, qualname):
    from .tuner import unwrap_function

    obj = module
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return unwrap_function(obj)[0]


def subprocess_main(fd_in, fd_out):
    """Entry of a fresh worker interpreter: reads the recipe, loads the function, serves."""
    from multiprocessing.connection import Connection

    conn_in = Connection(fd_in, writable=False)
    conn_out = Connection(fd_out, readable=False)
    recipe = conn_in.recv()
    try:
        for entry in reversed(recipe["sys_path"]):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        if recipe["cwd"] and os.path.isdir(recipe["cwd"]):
            os.chdir(recipe["cwd"])
        import tilelang

        if not recipe["cache_enabled"]:
            tilelang.disable_cache()
        module = _load_module(recipe["module"], recipe["file"])
        fn = _find(module, recipe["qualname"])
        if getattr(fn, "__code__", None) is None or fn.__code__.co_firstlineno != recipe["line"]:
            raise RuntimeError(
                f"'{recipe['qualname']}' in {recipe['file']} is not the function being tuned "
                "(was the file edited?)"
            )
        setup = recipe.get("bench")
        if setup is not None:
            from . import bench_pool

            setup = bench_pool.resolve_setup(setup, module)
    except BaseException as exc:  # noqa: BLE001  (reported; the parent falls back)
        conn_out.send(("init_error", None, (first_line(exc), traceback.format_exc())))
        return
    if setup is not None:
        from . import bench_pool

        bench_pool.serve(conn_in, conn_out, recipe["kind"], fn, recipe["options"], setup)
        return
    _serve(conn_in, conn_out, recipe["kind"], fn, recipe["options"])


def fork_main(conn, kind, fn, options, setup=None):
    """Entry of a forked worker: the function is already in memory (`setup`: a
    benchmark worker's, see bench_pool)."""
    try:
        if setup is not None:
            from . import bench_pool

            bench_pool.serve(conn, conn, kind, fn, options, setup)
        else:
            _serve(conn, conn, kind, fn, options)
    finally:
        os._exit(0)  # skip the parent's atexit handlers and finalizers
