"""`@tilelang.autotune` and `AutoTuner`: pick the fastest config of a kernel.

A run (1) looks the problem up in the result cache, (2) compiles every config in worker
processes (compile_pool), each within `timeout` seconds, (3) in this process loads each
compiled config back from the disk kernel cache, checks it against `ref_prog` and times
it with the kernel's profiler in rounds interleaved with the other configs, (4)
publishes the best config in the result cache. A config that fails at any step is
logged in one line and skipped."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import multiprocessing
import os
import pickle
import socket
import sys
import time
from typing import TYPE_CHECKING, Any, Callable, NoReturn

from tilelang.env import is_cache_enabled
from tilelang.jit import LazyJIT, is_eager
from tilelang.jit.eager import EagerFunction
from tilelang.jit.kernel import prepare_host_compiler
from tilelang.progress import Progress
from tilelang.utils.target import determine_target

from . import _worker, bench_pool, compile_pool, devices, ray_executor, result_cache, result_store
from . import devices as _devices_module  # where a parameter is named devices
from ._worker import TensorStandIn, first_line
from .capture import get_autotune_inputs

if TYPE_CHECKING:
    from tilelang.jit.kernel import JITKernel

logger = logging.getLogger("tilelang")

_UNSET = object()
_COMPILE_DEFAULTS = {
    "out_idx": None,
    "target": "auto",
    "target_host": None,
    "execution_backend": "auto",
    "verbose": False,
    "pass_configs": None,
    "compile_flags": None,
}
_PROFILE_DEFAULTS = {
    "warmup": 25,
    "rep": 100,
    "timeout": 100,
    "supply_type": None,
    "ref_prog": None,
    "supply_prog": None,
    "rtol": 1e-2,
    "atol": 1e-2,
    "max_mismatched_ratio": 0.01,
    "skip_check": False,
    "manual_check_prog": None,
    "cache_input_tensors": False,
    "early_stop_ratio": 10.0,
    "backend": "event",
}
# The profile arguments that are programs: a result tuned with them is cached on disk
# only when each has a persistent identity (see _callback_identity).
_CALLBACKS = ("ref_prog", "supply_prog", "manual_check_prog")


def _early_stop_ratio(early_stop, early_stop_factor):
    """TileLang's early_stop / early_stop_factor as the early_stop_ratio profile argument:
    True stops timing a config whose first estimate exceeds factor x the best so far,
    False times every config fully (None). Raises for a factor below 1, as TileLang."""
    if not early_stop:
        return None
    if early_stop_factor < 1.0:
        raise ValueError(f"early_stop_factor must be >= 1.0, got {early_stop_factor}")
    return float(early_stop_factor)


def _tilelang_error():
    from tilelang import _native

    return _native.load().TileLangError


class AutoTuneError(_tilelang_error()):  # type: ignore[misc]
    """No config of a tuning run compiled, passed the check and ran."""


# TileLang's private helpers of its on-disk tuning result (tilelang/autotuner/param.py
# of 0.1.15 and of a35008a): refused by name, on the class and its instances.
_TILELANG_RESULT_HELPERS = frozenset(
    (
        "_get_complete_result_files", "_get_kernel_lib_file", "_get_missing_complete_result_files",
        "_get_required_kernel_files", "_is_complete_result_dir", "_is_rename_collision",
        "_load_binary", "_load_kernel_from_disk", "_remove_incomplete_result_dir",
        "_safe_write_executable", "_safe_write_file", "_save_kernel_to_disk",
    )
)  # fmt: skip


class _ResultClass(type):
    """AutotuneResult's class: TileLang's private helpers of its on-disk result
    (`AutotuneResult._save_kernel_to_disk`, `_safe_write_file` ...) are refused by name."""

    def __getattr__(cls, name):
        if name in _TILELANG_RESULT_HELPERS:
            _refuse_result_internal(name)
        raise AttributeError(f"type object 'AutotuneResult' has no attribute '{name}'")


def _refuse_result_internal(name: str) -> NoReturn:
    from tilelang._compat import out_of_scope

    out_of_scope(
        f"tilelang.autotuner.param.AutotuneResult.{name}",
        "a tuning result is a JSON decision under <cache dir>/autotuner/ whose kernel stays in "
        "the kernel cache, written atomically by the tuner (user guide, 'Result cache')",
        kind="a TileLang internal",
    )


class AutotuneResult(metaclass=_ResultClass):
    """The outcome of a tuning run: `config` (dict), `latency` (ms), `ref_latency` (ms of
    ref_prog, or None), `kernel` (the JITKernel of the best config), `func` (its
    prim_func), `libcode` (its source), `from_cache` (True when taken from the result
    cache), `failures` ({config text: one-line reason}), `timings` ({config text: ms, its
    fastest timing round}; a config stopped early has the time of one call),
    `measurements` ({config text: the device it was timed on and the min / median / max
    ms of its rounds}), `device` (name and clock of the device the pick was timed on) and
    `cache_path`. `tuned` is False when the call gave tuned parameters and nothing was
    tuned: `config` then holds the values the kernel was built with, `latency` is None.
    Made as TileLang's is, `AutotuneResult(latency, config, ref_latency, libcode, func,
    kernel)`, every field optional; TileLang's `save_to_disk` / `load_from_disk` (its
    on-disk result format) are not here."""

    timings: dict[str, float]  # set by the run that made the result
    measurements: dict[str, Any]  # set by the run that made the result too
    device: Any

    def __init__(
        self,
        latency: float | None = None,
        config: dict[str, Any] | None = None,
        ref_latency: float | None = None,
        libcode: str | None = None,
        func: Any = None,
        kernel: JITKernel | None = None,
        *,
        from_cache: bool = False,
        failures: Any = None,
        cache_path: str | None = None,
    ) -> None:
        self.config, self.latency, self.ref_latency = config, latency, ref_latency
        self.kernel, self.from_cache = kernel, from_cache
        self.failures = {} if failures is None else failures
        self.cache_path = cache_path
        self._func, self._libcode = func, libcode
        self.timings, self.measurements, self.device = {}, {}, None
        self.tuned = True
        self._call = None

    def __getattr__(self, name):
        if name in _TILELANG_RESULT_HELPERS:
            _refuse_result_internal(name)
        raise AttributeError(f"'AutotuneResult' object has no attribute '{name}'")

    @property
    def func(self) -> Any:
        if self._func is not None:
            return self._func
        return self.kernel.prim_func if self.kernel is not None else None

    @property
    def libcode(self) -> str | None:
        if self._libcode is not None:
            return self._libcode
        return self.kernel.get_kernel_source() if self.kernel is not None else None

    def save_to_disk(self, path: Any, verbose: bool = False) -> None:
        _refuse_result_internal("save_to_disk")

    @classmethod
    def load_from_disk(cls, path: Any, compile_args: Any) -> AutotuneResult:
        _refuse_result_internal("load_from_disk")

    def __repr__(self):
        if not self.tuned:
            return f"AutotuneResult(config={self.config!r}, not tuned: given in the call)"
        source = ", from cache" if self.from_cache else ""
        return f"AutotuneResult(config={self.config!r}, latency={self.latency:.4g} ms{source})"


def unwrap_function(obj):
    """(python function, "lazy" | "eager", jit options) behind a tuned/jit object."""
    options, kind = {}, None
    while True:
        if isinstance(obj, AutoTuneFunction):
            obj = obj.target
        elif isinstance(obj, LazyJIT):
            options, kind, obj = dict(obj.options), "lazy", obj.factory
        elif isinstance(obj, EagerFunction):
            options, kind, obj = dict(obj.options), "eager", obj.fn
        else:
            break
    if not inspect.isfunction(obj):
        raise TypeError(
            f"autotune needs a Python function (a @tilelang.jit kernel or a factory returning a "
            f"T.prim_func), got {type(obj).__name__}"
        )
    if kind is None:
        kind = "eager" if is_eager(obj) else "lazy"
    return obj, kind, options


class _Phase:
    """A phase of a run (compiling, timing) on a progress bar (tilelang.progress; shown
    when stderr is a terminal) that also counts the configs by outcome for the summary."""

    def __init__(self, desc, total, unit="config"):
        self.counts = {}
        self.best = ""
        self.bar = Progress(desc, total, unit)

    def count(self, what):
        self.counts[what] = self.counts.get(what, 0) + 1

    def step(self, what, steps=1):
        """Counts a config's outcome `what` (None: no outcome yet) and moves the bar."""
        if what is not None:
            self.count(what)
        self.bar.advance(steps)
        self._note()

    def set_best(self, text):
        self.best = text
        self._note()

    def describe(self, desc):
        self.bar.describe(desc)

    def _note(self):
        shown = (k for k in self.counts if k not in ("compiled", "timed"))  # those: the count
        counts = ", ".join(f"{self.counts[k]} {k}" for k in shown)
        self.bar.note("; ".join(t for t in (self.best, counts) if t))

    def close(self):
        self.bar.close()


class _Inputs:
    """Inputs and reference outputs shared by all configs (cache_input_tensors=True)."""

    def __init__(self):
        self.inputs = None
        self.ref_out = None
        self.ref_latency = None


class AutoTuner:
    """`AutoTuner.from_kernel(fn, configs).set_compile_args(...).set_profile_args(...)
    .run(*args)`: tunes `fn` (a @tilelang.jit function or a plain factory) over
    `configs` (a list of dicts of keyword arguments, or a callable taking the non-config
    arguments and returning that list); `run` takes the non-config arguments."""

    def __init__(
        self,
        fn: Callable[..., Any],
        configs: Any,
        do_not_specialize: Any = None,
        result_dir: Any = None,
        devices: Any = None,
        executor: Any = None,
        ray_options: Any = None,
    ) -> None:
        self.fn, self.kind, self._jit_options = unwrap_function(fn)
        # The devices to benchmark on, one worker process each: "all", a list of indices,
        # or None (this process's device); checked against the target when a run starts.
        self.devices = _devices_module.check_form(devices, self.fn.__name__)
        # Where configs compile and are timed: None / "local" (this machine) or "ray".
        self.executor: str | None = None
        self.ray_options: dict | None = None
        self.set_executor(executor, ray_options)
        # A shared result directory (result_store); None: TILELANG_AUTOTUNE_RESULT_DIR.
        self.result_dir = result_dir
        self.name = self.fn.__name__
        self.signature = inspect.signature(self.fn)
        if configs is None:
            raise TypeError(
                f"autotune of '{self.name}' needs configs=[{{...}}, ...] (or a callable)"
            )
        self.configs = configs
        self._compile_given: dict[str, Any] = {}
        self._profile: dict[str, Any] = dict(_PROFILE_DEFAULTS)
        names = [do_not_specialize] if isinstance(do_not_specialize, str) else do_not_specialize
        self.do_not_specialize = tuple(names or ())
        unknown = [n for n in self.do_not_specialize if n not in self.signature.parameters]
        if unknown:
            raise TypeError(
                f"do_not_specialize names {unknown}, which are not parameters of "
                f"{self.name}{self.signature}"
            )
        self._decisions: dict = {}
        self._jits: dict = {}
        self._source_cache = None

    @classmethod
    def from_kernel(cls, kernel: Any, configs: Any, **kwargs: Any) -> AutoTuner:
        return cls(kernel, configs, **kwargs)

    def set_executor(self, executor: Any, ray_options: Any = None) -> AutoTuner:
        """Where configs compile and are timed: None or "local" (this machine: compile
        worker processes, then this process or the `devices` workers), or "ray" (Ray
        tasks: compiles on CPU workers, benchmarks on GPU workers; `ray_options`:
        {"compile": {...}, "bench": {...}} Ray task options, default {"num_cpus": 1} and
        {"num_gpus": 1}, {"num_cpus": 1} for a target without a GPU)."""
        where = f"autotune of '{self.fn.__name__}': "
        if executor not in (None, "local", "ray"):
            raise ValueError(
                f'{where}executor={executor!r}: expected "local" or "ray", given {executor!r}'
            )
        if ray_options is not None and (executor != "ray" or not isinstance(ray_options, dict)):
            raise TypeError(
                f"{where}ray_options={ray_options!r}: expected a dict of Ray task options "
                f'for executor="ray", given {type(ray_options).__name__} with executor='
                f"{executor!r}"
            )
        if executor == "ray" and self.devices is not None:
            raise ValueError(
                f'{where}devices={self.devices!r} with executor="ray": expected one of them, '
                "given both (Ray assigns each benchmark task its GPU; devices= is for this "
                "machine's)"
            )
        self.executor = None if executor == "local" else executor
        self.ray_options = ray_options
        return self

    def set_devices(self, devices: Any) -> AutoTuner:
        """Benchmarks on `devices` ("all", or a list of device indices: CUDA GPUs, CPU
        cores for the cpu target) in parallel, one worker process pinned to each; None
        benchmarks in this process, as by default."""
        devices = _devices_module.check_form(devices, self.name)
        if devices is not None and self.executor == "ray":
            raise ValueError(
                f"autotune of '{self.name}': devices={devices!r} with executor=\"ray\": "
                "expected one of them, given both (Ray assigns each benchmark task its GPU; "
                "devices= is for this machine's)"
            )
        self.devices = devices
        return self

    @property
    def compile_args(self) -> Any:
        """The compile settings of every config as a CompileArgs (the @tilelang.jit
        options overlaid with set_compile_args'). Assigning a CompileArgs (or a dict of
        its fields) replaces what set_compile_args gave."""
        from .param import CompileArgs

        fields = {f.name for f in dataclasses.fields(CompileArgs)}
        return CompileArgs(**{k: v for k, v in self._options().items() if k in fields})

    @compile_args.setter
    def compile_args(self, args):
        given = dataclasses.asdict(args) if dataclasses.is_dataclass(args) else dict(args)
        self._compile_given = {}
        self.set_compile_args(**given)

    @property
    def profile_args(self) -> Any:
        """How each config is checked and timed, as a ProfileArgs. Assigning a
        ProfileArgs (or a dict of its fields) sets all of them."""
        from .param import ProfileArgs

        return ProfileArgs(**self._profile)

    @profile_args.setter
    def profile_args(self, args):
        given = dataclasses.asdict(args) if dataclasses.is_dataclass(args) else dict(args)
        self._profile = dict(_PROFILE_DEFAULTS)
        self.set_profile_args(**given)

    def set_compile_args(
        self,
        out_idx: Any = _UNSET,
        target: Any = _UNSET,
        execution_backend: Any = _UNSET,
        target_host: Any = _UNSET,
        verbose: Any = _UNSET,
        pass_configs: Any = _UNSET,
        compile_flags: Any = _UNSET,
    ) -> AutoTuner:
        """Compile options for every config; those not given keep the @tilelang.jit ones."""
        given = {
            "out_idx": out_idx,
            "target": target,
            "execution_backend": execution_backend,
            "target_host": target_host,
            "verbose": verbose,
            "pass_configs": pass_configs,
            "compile_flags": compile_flags,
        }
        given = {k: v for k, v in given.items() if v is not _UNSET}
        if self.kind == "eager" and given.get("out_idx") is not None:
            raise ValueError(
                f"out_idx cannot be used with the eager function '{self.name}'; its outputs are "
                "the T.empty tensors it returns"
            )
        self._compile_given.update(given)
        return self

    def set_profile_args(self, **kwargs: Any) -> AutoTuner:
        """warmup, rep (ms budgets of the profiler per config; rep is split over the
        timing rounds), timeout (s per config compile),
        supply_type, ref_prog, supply_prog, rtol, atol, max_mismatched_ratio,
        skip_check, manual_check_prog (`check(outputs, ref_outputs)` in place of the
        allclose check of ref_prog's outputs), cache_input_tensors, early_stop_ratio
        (None: time every config), backend (the profiler's timing method)."""
        unknown = sorted(set(kwargs) - set(_PROFILE_DEFAULTS))
        if unknown:
            raise TypeError(
                f"set_profile_args() got unknown argument(s) {unknown}; valid: "
                f"{sorted(_PROFILE_DEFAULTS)}"
            )
        self._profile.update(kwargs)
        return self

    # ---- pieces of a run
    def _options(self):
        options = dict(_COMPILE_DEFAULTS)
        if self.kind == "eager":
            del options["out_idx"]
        options.update(self._jit_options)
        options.update(self._compile_given)
        return options

    def _jit(self, options):
        key = repr(sorted(options.items()))
        jit = self._jits.get(key)
        if jit is None:
            if self.kind == "lazy":
                jit = LazyJIT(self.fn, options)
            else:
                jit = EagerFunction(self.fn, options)
            self._jits[key] = jit
        return jit

    def _resolve_configs(self, args, kwargs):
        """The list of configs for this call, checked against the function's signature."""
        if callable(self.configs):
            cargs, ckwargs = _fit_call(self.configs, args, kwargs)
            configs = self.configs(*cargs, **ckwargs)
        else:
            configs = self.configs
        try:
            configs = list(configs)
        except TypeError:
            raise TypeError(
                f"configs of '{self.name}' must be a list of dicts, got {type(configs).__name__}"
            ) from None
        if not configs:
            raise ValueError(f"autotune of '{self.name}': the list of configs is empty")
        params = self.signature.parameters
        var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
        for c in configs:
            if not isinstance(c, dict):
                raise TypeError(
                    f"each config of '{self.name}' must be a dict of keyword arguments, got {c!r}"
                )
            extra = c.get(_worker.PASS_CONFIGS_KEY)
            if extra is not None and not isinstance(extra, dict):
                raise TypeError(
                    f"config {c!r} of '{self.name}': '{_worker.PASS_CONFIGS_KEY}' must be a dict "
                    f"of pass configs for that config's compile, got {type(extra).__name__}"
                )
            unknown = [k for k in c if k not in params and k != _worker.PASS_CONFIGS_KEY]
            if unknown and not var_kw:
                raise TypeError(
                    f"config {c!r} names {unknown}, which are not parameters of "
                    f"{self.name}{self.signature}"
                )
        return configs

    def _given_tuned(self, tuned, args, kwargs):
        """{name: value} of the tuned parameters the call gives, positionally or by keyword."""
        try:
            bound = self.signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{self.name}{self.signature}: {exc}") from None
        given = {}
        for name, value in bound.arguments.items():
            param = self.signature.parameters[name]
            if param.kind is param.VAR_KEYWORD:
                given.update((k, v) for k, v in value.items() if k in tuned)
            elif name in tuned:
                given[name] = value
        return given

    def _explicit_config(self, tuned, given, configs):
        """The values the kernel is built with when the call gives tuned parameters: the
        given ones, the function's defaults for the others (a tuned parameter that only a
        `**kwargs` takes is left to the function)."""
        config = {}
        for name in tuned:
            if name in given:
                config[name] = given[name]
                continue
            param = self.signature.parameters.get(name)
            if param is None or param.kind is param.VAR_KEYWORD:
                continue
            if param.default is param.empty:
                tried = []
                for c in configs:
                    if name in c and c[name] not in tried:
                        tried.append(c[name])
                shown = ", ".join(f"{k}={v!r}" for k, v in given.items())
                raise TypeError(
                    f"autotune of '{self.name}': the call gives {shown}, so tuning is skipped "
                    f"and every tuned parameter needs a value, but '{name}' has no default: "
                    f"expected a value for '{name}' (the configs try "
                    f"{', '.join(repr(v) for v in tried)}), given none. Give all of {tuned} "
                    "to compile that one config, or none of them to tune"
                )
            config[name] = param.default
        return config

    def _const_keywords(self, args, kwargs):
        """The keywords of an eager function's compile() that are no parameters of it:
        the values of its T.const sizes (`f.compile(M=1024, N=512)`), which the kernel is
        built for in place of the tensors a call would take them from."""
        params = self.signature.parameters
        if self.kind != "eager" or any(p.kind is p.VAR_KEYWORD for p in params.values()):
            return {}
        consts = {k: v for k, v in kwargs.items() if k not in params}
        if consts and args:
            raise TypeError(
                f"{self.name}{self.signature}: got T.const values {sorted(consts)} beside "
                f"{len(args)} positional argument(s); give the T.const values alone, as "
                "keywords (with config values), to compile without tensors"
            )
        return consts

    def _untuned_arguments(self, args, kwargs, configs, consts):
        """The call's arguments that key the result cache (none of them tuned); with T.const
        values instead of tensors, those values and the parameters given."""
        keys = {k for c in configs for k in c if k != _worker.PASS_CONFIGS_KEY}
        try:
            bind = self.signature.bind_partial if consts else self.signature.bind
            bound = bind(*args, **kwargs, **_worker.split_pass_configs(configs[0])[0])
        except TypeError as exc:
            raise TypeError(
                f"{self.name}{self.signature}: {exc}; call the tuned function with the "
                f"arguments that are not tuned (the configs set {sorted(keys)})"
            ) from None
        arguments = {
            n: v
            for n, v in bound.arguments.items()
            if n not in keys and n not in self.do_not_specialize
        }
        arguments.update((f"T.const {k}", v) for k, v in sorted(consts.items()))
        return arguments

    def _result_key(self, arguments, configs, target, options, profile_key):
        """The result cache's key of a tuning problem, or None when a profile callback
        has no persistent identity (then the result is neither cached nor reused)."""
        if profile_key is None:
            return None
        return result_cache.make_key(
            self.fn, self.kind, arguments, configs, target, options, profile_key
        )

    def generate_cache_key(
        self, parameters: dict[str, Any], extra_parameters: dict[str, Any]
    ) -> Any:
        """TileLang's key of this tuner's result, the one run() publishes under: the
        function's default arguments (`parameters`: an inspect signature's parameters)
        overlaid with `extra_parameters` ({name: value}), less the tuned and the
        do_not_specialize ones, with the configs, the compile_args and the profile_args. None when ref_prog, supply_prog or manual_check_prog has no
        persistent identity (a closure, a callable object): such a result is not
        cached."""
        configs = self.configs
        if callable(configs):
            configs = [result_cache.function_source(configs)]
        tuned = {k for c in configs if isinstance(c, dict) for k in c}
        arguments = {
            name: p.default
            for name, p in parameters.items()
            if p.default is not inspect.Parameter.empty
        }
        arguments.update(extra_parameters or {})
        skipped = tuned | set(self.do_not_specialize)
        arguments = {k: v for k, v in arguments.items() if k not in skipped}
        options = self._options()
        target = determine_target(options.get("target", "auto"))
        return self._result_key(
            arguments, list(configs), target, options, _profile_key(self._profile, None)
        )

    def _recipe(self, options):
        """How a fresh interpreter finds the function, or None when it cannot."""
        fn = self.fn
        if "<" in fn.__qualname__:  # <locals>, <lambda>
            return None
        module = sys.modules.get(fn.__module__)
        path = getattr(module, "__file__", None)
        if not path or not path.endswith(".py") or not os.path.exists(path):
            return None
        try:
            obj = module
            for part in fn.__qualname__.split("."):
                obj = getattr(obj, part)
            if unwrap_function(obj)[0] is not fn:
                return None
        except Exception:  # noqa: BLE001  (not reachable by name: use another way)
            return None
        recipe = {
            "sys_path": [p for p in sys.path if isinstance(p, str)],
            "cwd": os.getcwd(),
            "module": fn.__module__,
            "file": os.path.abspath(path),
            "qualname": fn.__qualname__,
            "line": fn.__code__.co_firstlineno,
            "kind": self.kind,
            "options": options,
            "cache_enabled": is_cache_enabled(),
        }
        try:
            pickle.dumps(recipe)
        except Exception:  # noqa: BLE001  (pickling can raise anything)
            return None
        return recipe

    def _compile_configs(self, args, rest, configs, options, timeout, on_done, indices=None):
        """Compiles the configs (those at `indices`, default all) in worker processes (or
        here when that is impossible)."""
        # The host compiler's prelude entry is built once, here, before the compiles
        # are timed: its first build (1.6 s for the cpu target's precompiled header,
        # 7 s for the emulators' runtime) would count against a config's limit.
        took = prepare_host_compiler(options.get("target", "auto"), options.get("compile_flags"))
        if took > 0.5:
            logger.info(
                "autotune '%s': built the host compiler's prelude entry in %.1f s (once per "
                "compiler and flag set)",
                self.name,
                took,
            )
        if self.kind == "eager":
            wargs = [_stand_in(a) for a in args]
            wrest = {k: _stand_in(v) for k, v in rest.items()}
        else:
            wargs, wrest = list(args), dict(rest)
        tasks = [
            (i, wargs, wrest, c) for i, c in enumerate(configs) if indices is None or i in indices
        ]
        done = set()

        def record(index, outcome):
            done.add(index)
            on_done(index, outcome)

        try:
            pickle.dumps(tasks)
            picklable = True
        except Exception:  # noqa: BLE001  (pickling can raise anything)
            picklable = False
        n = compile_pool.worker_count(len(tasks))
        modes = []
        if picklable:
            recipe = self._recipe(options)
            if recipe is not None:
                modes.append(("subprocess", recipe))
            if "fork" in multiprocessing.get_all_start_methods():
                modes.append(("fork", None))
        for mode, recipe in modes:
            logger.info(
                "autotune '%s': compiling %d config(s) in %d worker process(es) (%s), %g s limit each",
                self.name,
                len(tasks),
                n,
                mode,
                timeout,
            )
            try:
                left = [t for t in tasks if t[0] not in done]
                live = (self.kind, self.fn, options)
                compile_pool.compile_all(mode, recipe, live, left, timeout, n, record)
                return
            except compile_pool.WorkerStartError as exc:
                logger.info(
                    "autotune '%s': %s workers could not start (%s)",
                    self.name,
                    mode,
                    first_line(exc),
                )
        logger.warning(
            "autotune '%s': compiling the configs in this process, one at a time, without a time "
            "limit (the arguments cannot be sent to worker processes)",
            self.name,
        )
        jit = self._jit(options)
        for i, _, _, config in tasks:
            if i in done:
                continue
            start = time.monotonic()
            try:
                kernel = self._build(jit, args, rest, config)[0]
                outcome = compile_pool.Outcome("ok", cache_key=kernel.cache_key)
            except Exception as exc:  # noqa: BLE001  (a config's failure is reported)
                outcome = compile_pool.Outcome("error", first_line(exc))
            outcome.seconds = time.monotonic() - start
            record(i, outcome)

    def _build(self, jit, args, rest, config):
        """(JITKernel, runner) of one config in this process (a disk-cache hit once a worker
        compiled it); runner() runs an eager kernel on the call's tensors."""
        config, extra = _worker.split_pass_configs(config)
        if extra:
            jit = self._jit(_worker.with_pass_configs(self._options(), extra))
        if self.kind == "lazy":
            return jit(*args, **rest, **config), None
        kernel, made = _worker.build("eager", self.fn, None, args, rest, config, jit)
        if made is None:  # compiled for T.const values: no tensors to run it on
            return kernel, None
        spec, bound = made
        return kernel, functools.partial(spec.call, bound.arguments)

    def _check(self, kernel, prof, shared, best):
        """check_config (a method for the callers that know the tuner)."""
        return check_config(kernel, prof, shared, best)

    def _require_tensor_inputs(self, jit, args, rest, config):
        """Raises, as TileLang does before tuning, when the kernel takes a scalar input:
        the tuner generates tensors only, so such inputs come from set_autotune_inputs
        (or supply_prog)."""
        kernel = self._build(jit, args, rest, config)[0]
        for i, p in enumerate(kernel.params):
            if i not in kernel.out_idx and not p.is_tensor:
                raise ValueError(
                    f"autotune of '{self.name}': kernel '{kernel.name}' takes the scalar "
                    f"'{p.name}' ({p.dtype}), which the tuner cannot generate; give the "
                    "kernel's inputs with `with set_autotune_inputs(...)` (or supply_prog)"
                )

    @staticmethod
    def _time_round(entry, prof, first):
        return time_round(entry, prof, first)

    def _tune(
        self, jit, args, rest, configs, prof, options, indices=None, best_known=None, partial=False
    ):
        """Compiles, checks and times the configs (those at `indices`, default all), a
        config far slower than the best so far (or `best_known` ms, measured elsewhere)
        stopped early. Returns (best or None, ref_latency, failures, timings, outcomes,
        measurements): best (latency, index, kernel, runner); outcomes {index: ("ok" |
        "early", ms) or ("failed", reason)}. Raises AutoTuneError when none ran, unless
        `partial`."""
        name = self.name
        n = len(configs) if indices is None else len(indices)
        failures = {}
        compiled = []
        errors = []  # configs whose compile raised (not timed out, not crashed)

        def fail(index, reason):
            text = result_cache.describe(configs[index])
            failures[text] = reason
            logger.warning("autotune '%s': config %s skipped: %s", name, text, reason)

        if self.executor == "ray":
            target = determine_target(options.get("target", "auto"))
            start = time.monotonic()
            bar = _Phase(f"autotune {name}: on Ray", n * _TIMING_ROUNDS, "round")
            race = _Race(configs, best_known, bar)
            try:
                wanted = list(range(len(configs))) if indices is None else list(indices)
                ray_executor.run(
                    self.ray_options,
                    self,
                    args,
                    rest,
                    configs,
                    wanted,
                    prof,
                    options,
                    target,
                    race,
                    fail,
                )
            finally:
                bar.close()
            logger.info(
                "autotune '%s': compiled, checked and timed %d config(s) on Ray (%d failed) "
                "in %.1f s",
                name,
                n,
                len(failures),
                time.monotonic() - start,
            )
            return self._settle(configs, indices, race, failures, partial, n)

        start = time.monotonic()
        bar = _Phase(f"autotune {name}: compiling", n)

        def on_done(index, outcome):
            if outcome.status == "error":
                errors.append(index)
            if outcome.status == "ok":
                compiled.append(index)
                bar.step("compiled")
            elif outcome.status == "timeout":
                fail(index, f"compile {outcome.message}")
                bar.step("timed out")
            else:
                fail(index, f"compile error: {outcome.message}")
                bar.step("failed")

        try:
            self._compile_configs(args, rest, configs, options, prof["timeout"], on_done, indices)
        finally:
            bar.close()
        counts = bar.counts
        logger.info(
            "autotune '%s': compiled %d/%d config(s) (%d failed, %d timed out) in %.1f s",
            name,
            counts.get("compiled", 0),
            n,
            counts.get("failed", 0),
            counts.get("timed out", 0),
            time.monotonic() - start,
        )
        if n == 1 and errors and not partial:
            # Nothing to choose from: the config's own error, raised here at the kernel's
            # line with its traceback, says more than the summary below.
            self._build(jit, args, rest, configs[errors[0]])

        start = time.monotonic()
        target = determine_target(options.get("target", "auto"))
        here = devices.describe(target, devices.current(target))
        # One step per timing round of each config; a config out of the race (wrong,
        # failed, stopped early) takes its remaining rounds' steps at once.
        desc = f"autotune {name}: timing round 1/{_TIMING_ROUNDS}"
        bar = _Phase(desc, len(compiled) * _TIMING_ROUNDS, "round")
        race = _Race(configs, best_known, bar)

        if prof["supply_prog"] is None and compiled:
            self._require_tensor_inputs(jit, args, rest, configs[min(compiled)])
        device_list = self._devices_for(target)
        try:
            left = sorted(compiled)
            if device_list is not None and left:
                done = self._time_on_devices(
                    args, rest, configs, prof, options, left, device_list, target, race, fail
                )
                left = [i for i in left if i not in done]
            if left:
                self._time_here(jit, args, rest, configs, prof, left, here, race, fail)
            if device_list is not None and race.timed:
                self._retime_best(jit, args, rest, configs, prof, here, race, fail)
            for entry in race.timed:
                text = result_cache.describe(configs[entry.index])
                race.timings[text] = entry.latency
                bar.count("timed")
                logger.debug(
                    "autotune '%s': config %s: %.4g ms (rounds: %s)",
                    name,
                    text,
                    entry.latency,
                    ", ".join(f"{t:.4g}" for t in entry.times),
                )
        finally:
            bar.close()
        counts = bar.counts
        verb = "timed" if prof["ref_prog"] is None or prof["skip_check"] else "checked and timed"
        logger.info(
            "autotune '%s': %s %d config(s) (%d wrong, %d failed, %d stopped early) in %.1f s%s",
            name,
            verb,
            counts.get("timed", 0) + counts.get("stopped early", 0),
            counts.get("wrong", 0),
            counts.get("failed", 0),
            counts.get("stopped early", 0),
            time.monotonic() - start,
            "" if device_list is None else f" on {len(device_list)} device(s)",
        )
        return self._settle(configs, indices, race, failures, partial, n)

    def _settle(self, configs, indices, race, failures, partial, n):
        """_tune's result from the timing phase's `race`."""
        name = self.name
        timed, timings, ref_latency = race.timed, race.timings, race.ref_latency
        for entry in timed:
            timings[result_cache.describe(configs[entry.index])] = entry.latency
        best = min(race.pick_from or timed, key=lambda e: e.latency, default=None)
        if best is None and not partial:
            lines = "\n".join(f"  {c}: {r}" for c, r in failures.items())
            raise AutoTuneError(f"autotune of '{name}': all {n} config(s) failed:\n{lines}")
        outcomes = {}
        measured = {}
        for index in range(len(configs)) if indices is None else indices:
            text = result_cache.describe(configs[index])
            if text in failures:
                outcomes[index] = ("failed", failures[text])
            elif any(e.index == index for e in timed):
                outcomes[index] = ("ok", timings[text])
            elif text in timings:
                outcomes[index] = ("early", timings[text])
        for entry in timed:
            measured[result_cache.describe(configs[entry.index])] = entry.record()
        chosen = None if best is None else (best.latency, best.index, best.kernel, best.runner)
        return chosen, ref_latency, failures, timings, outcomes, measured

    def _devices_for(self, target):
        """The devices to benchmark on in worker processes, or None to benchmark in this
        process (devices=None, or one device that is this process's own)."""
        device_list = devices.resolve(self.devices, target, self.name)
        if device_list is None or len(device_list) != 1:
            return device_list
        mine = devices.current(target)
        return None if mine is None or device_list[0] == mine else device_list

    def _time_here(self, jit, args, rest, configs, prof, indices, here, race, fail):
        """Checks and times the configs at `indices` in this process: round 1 checks each,
        stops the far slower ones early and times the rest once; later rounds time every
        contender again in alternating order; a config whose rounds spread beyond the
        limit is measured once more. Every check and round holds the device lock."""
        name, bar = self.name, race.bar
        shared = _Inputs()
        tensors = {}  # kernel signature -> the tensors its configs are timed on
        lock = here["lock"]
        timed = []
        for index in indices:
            try:
                kernel, runner = self._build(jit, args, rest, configs[index])
                with devices.DeviceLock(lock):
                    status, value, ref_ms = self._check(kernel, prof, shared, race.fastest())
                    if status == "ok":
                        timing_tensors = tensors.setdefault(_signature(kernel), value)
                        entry = _Timed(index, kernel, runner, timing_tensors)
                        entry.add(self._time_round(entry, prof, first=True))
            except Exception as exc:  # noqa: BLE001  (a config's failure is reported)
                fail(index, f"benchmark failed: {first_line(exc)}")
                bar.step("failed", _TIMING_ROUNDS)
                continue
            if race.settle(index, status, value, ref_ms, fail):
                entry.device = here
                timed.append(entry)
                race.add(entry)
        # Later rounds time every contender again, in alternating order, and a config's
        # time is its fastest round: a burst of load (other processes compiling, a
        # descheduled thread) that lands on one config's timing then does not decide
        # the pick. None is skipped for being slow so far: its one round may be the one
        # the burst hit.
        for rnd in range(1, _TIMING_ROUNDS):
            bar.describe(f"autotune {name}: timing round {rnd + 1}/{_TIMING_ROUNDS}")
            for entry in list(reversed(timed) if rnd % 2 else timed):
                try:
                    with devices.DeviceLock(lock):
                        entry.add(self._time_round(entry, prof, first=False))
                except Exception as exc:  # noqa: BLE001  (a config's failure is reported)
                    fail(entry.index, f"benchmark failed: {first_line(exc)}")
                    timed.remove(entry)
                    race.drop(entry)
                    bar.step("failed", _TIMING_ROUNDS - rnd)
                else:
                    bar.step(None)
                race.show_best()
        for entry in list(timed):
            if not devices.disturbed(entry.times):
                continue
            entry.first = devices.spread(entry.times)
            try:
                with devices.DeviceLock(lock):
                    again = [self._time_round(entry, prof, first=False) for _ in entry.times]
            except Exception as exc:  # noqa: BLE001
                fail(entry.index, f"benchmark failed: {first_line(exc)}")
                timed.remove(entry)
                race.drop(entry)
                continue
            entry.times, entry.latency = again, min(again)
            _log_disturbed(name, configs[entry.index], entry.first, again)
        race.show_best()

    def _time_on_devices(
        self, args, rest, configs, prof, options, indices, device_list, target, race, fail
    ):
        """Checks and times the configs at `indices` in one worker process per device of
        `device_list` (bench_pool). Returns the indices it settled (all, unless no worker
        could start: the rest are timed in this process)."""
        name, bar = self.name, race.bar
        if self.kind == "eager":
            wargs = [_stand_in(a) for a in args]
            wrest = {k: _stand_in(v) for k, v in rest.items()}
        else:
            wargs, wrest = list(args), dict(rest)
        tasks = [(i, wargs, wrest, configs[i]) for i in indices]
        done = set()
        modes = []
        portable, why = bench_pool.portable_profile(prof)
        try:
            pickle.dumps(tasks)
        except Exception:  # noqa: BLE001  (pickling can raise anything)
            why = "the kernel's arguments cannot be sent to a worker process"
        else:
            recipe = self._recipe(options) if portable is not None else None
            if recipe is not None:
                modes.append(("subprocess", recipe))
            elif portable is not None:
                why = f"'{name}' cannot be found by name in a fresh interpreter"
            if bench_pool.fork_allowed(target):
                modes.append(("fork", None))
        if not modes:
            logger.warning(
                "autotune '%s': benchmarking in this process instead of on devices %s: %s "
                "(a CUDA GPU's workers are fresh interpreters, which find the kernel and its "
                "callbacks by module and name)",
                name,
                device_list,
                why,
            )
            return done

        def on_done(index, status, payload, info):
            done.add(index)
            if status == "ok":
                entry = _Timed(index, None, None, None)
                entry.times = list(payload["times"] or ())
                entry.latency = min(entry.times) if entry.times else None
                entry.device, entry.first = info, payload.get("disturbed")
                if race.settle(index, payload["status"], payload["value"], payload["ref"], fail):
                    race.add(entry)
                    bar.step(None, _TIMING_ROUNDS - 1)
                    if entry.first is not None:
                        _log_disturbed(name, configs[index], entry.first, entry.times)
            elif status == "error":
                fail(index, f"benchmark failed: {payload[0]}")
                bar.step("failed", _TIMING_ROUNDS)
            else:
                fail(index, payload)
                bar.step("failed" if status == "crash" else "timed out", _TIMING_ROUNDS)
            race.show_best()

        setup = {"target": target, "prof": None, "user_module": None}
        for mode, recipe in modes:
            left = [t for t in tasks if t[0] not in done]
            if mode == "subprocess":
                setup = dict(setup, prof=portable, user_module=recipe["module"])
            else:
                setup = dict(setup, prof=prof)
            logger.info(
                "autotune '%s': benchmarking %d config(s) on %d device(s) %s, one %s worker each",
                name,
                len(left),
                len(device_list),
                device_list,
                mode,
            )
            try:
                bench_pool.bench_all(
                    mode,
                    recipe,
                    (self.kind, self.fn, options),
                    device_list,
                    setup,
                    left,
                    prof["timeout"],
                    race.fastest,
                    on_done,
                )
                return done
            except compile_pool.WorkerStartError as exc:
                logger.info(
                    "autotune '%s': %s benchmark workers could not start (%s)",
                    name,
                    mode,
                    first_line(exc),
                )
        logger.warning(
            "autotune '%s': benchmarking in this process instead: no benchmark worker started",
            name,
        )
        return done

    def _retime_best(self, jit, args, rest, configs, prof, here, race, fail):
        """Times the fastest configs measured by the device workers (up to _RETIMED) again
        here, on the device the kernel will run on, in interleaved rounds; the pick is the
        fastest of them by these times."""
        name = self.name
        shared = _Inputs()
        tensors = {}
        contenders = sorted((e for e in race.timed if e.kernel is None), key=lambda e: e.latency)[
            :_RETIMED
        ]
        if not contenders:
            return
        retimed = []
        for entry in contenders:
            try:
                kernel, runner = self._build(jit, args, rest, configs[entry.index])
                with devices.DeviceLock(here["lock"]):
                    status, value, _ = self._check(kernel, prof, shared, None)
            except Exception as exc:  # noqa: BLE001
                status, value = "failed", first_line(exc)
            if status != "ok":
                why = (
                    f"wrong result here: {value}" if status == "wrong" else f"failed here: {value}"
                )
                fail(entry.index, f"benchmark {why}")
                race.drop(entry)
                continue
            entry.kernel, entry.runner = kernel, runner
            entry.tensors = tensors.setdefault(_signature(kernel), value)
            entry.remote = (entry.device, entry.times, entry.first)
            entry.times, entry.first, entry.device = [], None, here
            retimed.append(entry)
        for rnd in range(_TIMING_ROUNDS):
            for entry in list(reversed(retimed) if rnd % 2 else retimed):
                try:
                    with devices.DeviceLock(here["lock"]):
                        entry.add(self._time_round(entry, prof, first=rnd == 0))
                except Exception as exc:  # noqa: BLE001
                    fail(entry.index, f"benchmark failed here: {first_line(exc)}")
                    retimed.remove(entry)
                    race.drop(entry)
        if retimed:
            best = min(retimed, key=lambda e: e.latency)
            logger.info(
                "autotune '%s': the %d fastest config(s) timed again on %s; best %s: %.4g ms",
                name,
                len(retimed),
                here["device"],
                result_cache.describe(configs[best.index]),
                best.latency,
            )
        # The pick is among the configs timed here: the others' times came from other
        # devices and stay in the timings only.
        race.pick_from = retimed or None
        race.show_best()

    def _tune_shared(self, jit, args, rest, configs, prof, options, run):
        """_tune with the configs' measurements shared through a result directory
        (result_store.SharedRun `run`): this tuner claims and measures configs no one has
        measured or is measuring, a batch at a time, waits for those others measure and
        reuses their outcomes; the pick is over all outcomes, so every tuner of the
        directory picks the same config."""
        name = self.name
        mine = None  # (latency, index, kernel, runner) of the best config measured here
        ref_latency = None
        announced = False
        try:
            while True:
                outcomes = run.outcomes()
                missing = [i for i in range(len(configs)) if i not in outcomes]
                if not missing:
                    break
                batch = run.claim(missing, compile_pool.worker_count(len(missing)))
                if not batch:
                    if not announced:
                        logger.info(
                            "autotune '%s': waiting for %d config(s) measured by other tuners "
                            "of %s",
                            name,
                            len(missing),
                            run.directory,
                        )
                        announced = True
                    run.wait()
                    continue
                known = [r["latency"] for r in outcomes.values() if r["status"] == "ok"]
                try:
                    best, ref_ms, _, _, measured, details = self._tune(
                        jit,
                        args,
                        rest,
                        configs,
                        prof,
                        options,
                        indices=batch,
                        best_known=min(known, default=None),
                        partial=True,
                    )
                    for index in batch:
                        status, value = measured.get(index, ("failed", "not measured"))
                        detail = details.get(result_cache.describe(configs[index]))
                        run.publish_outcome(index, status, value, detail)
                finally:
                    run.release(batch)
                ref_latency = ref_latency if ref_ms is None else ref_ms
                if best is not None and (mine is None or best[0] < mine[0]):
                    mine = best
        finally:
            run.close()
        failures, timings, details = {}, {}, {}
        for index, record in sorted(outcomes.items()):
            text = result_cache.describe(configs[index])
            if record["status"] == "failed":
                failures[text] = record.get("reason", "failed")
            else:
                timings[text] = record["latency"]
            if isinstance(record.get("measurement"), dict):
                details[text] = dict(record["measurement"], host=record.get("host"))
        ok = [(r["latency"], i) for i, r in outcomes.items() if r["status"] == "ok"]
        if not ok:
            lines = "\n".join(f"  {c}: {r}" for c, r in failures.items())
            raise AutoTuneError(
                f"autotune of '{name}': all {len(configs)} config(s) failed:\n{lines}"
            )
        latency, index = min(ok)
        kernel = runner = None
        if mine is not None and mine[1] == index:
            kernel, runner = mine[2], mine[3]
        return (latency, index, kernel, runner), ref_latency, failures, timings, details

    # ---- the entry point
    def run(
        self,
        *args: Any,
        warmup: int | None = None,
        rep: int | None = None,
        timeout: int | None = None,
        use_pipeline: bool = False,
        enable_grouped_compile: bool = False,
        group_compile_size: int | None = None,
        early_stop: Any = None,
        early_stop_factor: Any = 2.0,
        benchmark_devices: Any = None,
        benchmark_multi_gpu: bool = False,
        **kwargs: Any,
    ) -> Any:
        """Tunes for the given non-config arguments; returns an AutotuneResult. A call that
        gives any tuned parameter (a key of the configs) is not tuned: see _run_explicit.
        TileLang's use_pipeline / enable_grouped_compile / group_compile_size schedule its
        compiles; here configs always compile in parallel worker processes while earlier
        ones are timed, so they change nothing. early_stop (TileLang's switch, off there
        by default) and early_stop_factor set early_stop_ratio for this run; TileLang's
        benchmark_multi_gpu=True benchmarks this run on `benchmark_devices` (default
        "all"), as devices= does; left None,
        the profile argument stands."""
        del use_pipeline, enable_grouped_compile, group_compile_size
        if _worker.LOADING:  # a worker importing the user's module: stop before tuning
            raise _worker.StopLoading()
        if benchmark_multi_gpu:
            saved = self.devices
            self.devices = _devices_module.check_form(
                "all" if benchmark_devices is None else benchmark_devices, self.name
            )
            try:
                return self.run(
                    *args,
                    warmup=warmup,
                    rep=rep,
                    timeout=timeout,
                    early_stop=early_stop,
                    early_stop_factor=early_stop_factor,
                    **kwargs,
                )
            finally:
                self.devices = saved
        prof = dict(self._profile)
        for k, v in (("warmup", warmup), ("rep", rep), ("timeout", timeout)):
            if v is not None:
                prof[k] = v
        if early_stop is not None:
            prof["early_stop_ratio"] = _early_stop_ratio(early_stop, early_stop_factor)
        captured = get_autotune_inputs()
        profile_key = _profile_key(prof, captured)
        if captured is not None and prof["supply_prog"] is None:
            prof["supply_prog"] = bench_pool.Captured(captured)
        consts = self._const_keywords(args, kwargs)
        params = {k: v for k, v in kwargs.items() if k not in consts}
        configs = self._resolve_configs(args, params)
        keys = dict.fromkeys(k for c in configs for k in c)
        tuned = [k for k in keys if k != _worker.PASS_CONFIGS_KEY]
        given = self._given_tuned(tuned, args, params)
        options = self._options()
        jit = self._jit(options)
        if given:
            return self._run_explicit(jit, args, kwargs, tuned, given, configs, consts)
        rest = kwargs
        arguments = self._untuned_arguments(args, params, configs, consts)
        target = determine_target(options.get("target", "auto"))
        devices.resolve(self.devices, target, self.name)  # a bad index fails before any work
        devices.spread_limit()  # so does a malformed TILELANG_AUTOTUNE_SPREAD_LIMIT
        key = self._result_key(arguments, configs, target, options, profile_key)
        use_cache = result_cache.enabled() and key is not None
        path = result_cache.path_for(key) if use_cache else None
        shared = result_store.shared_dir(self.result_dir) if use_cache else None
        shared_run = result_store.SharedRun(shared, key, configs) if shared else None

        kernel = runner = None
        decision = self._decisions.get(key) if key is not None else None
        from_cache = decision is not None
        if decision is None and use_cache:
            decision = result_cache.load(path, configs)
            from_cache = decision is not None
            if decision is not None:
                logger.info(
                    "autotune '%s': config %s (%.4g ms) from the result cache %s; no benchmarking",
                    self.name,
                    decision["config"],
                    decision["latency"],
                    path,
                )
        if decision is None and shared_run is not None:
            decision = result_cache.load(shared_run.final_path, configs)
            from_cache = decision is not None
            if decision is not None:
                logger.info(
                    "autotune '%s': config %s (%.4g ms) from the shared result directory %s; "
                    "no benchmarking",
                    self.name,
                    decision["config"],
                    decision["latency"],
                    shared_run.final_path,
                )
                result_cache.store(path, decision, configs)
        if decision is None:
            if shared_run is not None:
                (latency, index, kernel, runner), ref_latency, failures, timings, details = (
                    self._tune_shared(jit, args, rest, configs, prof, options, shared_run)
                )
            else:
                (latency, index, kernel, runner), ref_latency, failures, timings, _, details = (
                    self._tune(jit, args, rest, configs, prof, options)
                )
            here = devices.describe(target, devices.current(target))
            decision = {
                "format": result_cache.FORMAT,
                "function": self.name,
                "index": index,
                "config": result_cache.describe(configs[index]),
                "latency": latency,
                "ref_latency": ref_latency,
                "target": target,
                "configs": len(configs),
                "failures": failures,
                "timings": timings,
                "measurements": details,
                "device": {k: v for k, v in here.items() if k != "lock"},
                "tuned_at": time.time(),
                "host": socket.gethostname(),
            }
            logger.info(
                "autotune '%s': best config %s: %.4g ms%s",
                self.name,
                decision["config"],
                latency,
                "" if ref_latency is None else f" (ref_prog {ref_latency:.4g} ms)",
            )
            if shared_run is not None:
                decision = result_cache.store(shared_run.final_path, decision, configs, shared=True)
            if use_cache:
                published = result_cache.store(path, decision, configs)
                if published["index"] != index:
                    logger.info(
                        "autotune '%s': another process published config %s first; using it",
                        self.name,
                        published["config"],
                    )
                    decision, from_cache, kernel = published, True, None
        if kernel is None:
            kernel, runner = self._build(jit, args, rest, configs[decision["index"]])
        if key is not None:
            self._decisions[key] = decision
        config = dict(configs[decision["index"]])
        kernel.config, kernel.latency = config, decision["latency"]
        result = AutotuneResult(
            decision["latency"],
            config,
            decision.get("ref_latency"),
            kernel=kernel,
            from_cache=from_cache,
            failures=dict(decision.get("failures") or {}),
            cache_path=path,
        )
        result.timings = dict(decision.get("timings") or {})
        result.measurements = dict(decision.get("measurements") or {})
        result.device = decision.get("device")
        result._call = runner
        return result

    def run_config(self, config: Any, tuned_kernel: Any, args: Any, kwargs: Any) -> Any:
        """The AutotuneResult of a call whose best config is known already (`config`, tuned
        for a call that differs at most in do_not_specialize parameters; `tuned_kernel`,
        the JITKernel built then): compiles that config for this call's arguments, without
        tuning (a call that gives tuned parameters keeps its values)."""
        consts = self._const_keywords(args, kwargs)
        params = {k: v for k, v in kwargs.items() if k not in consts}
        given = self._given_tuned(list(config), args, params)
        build = {k: v for k, v in config.items() if k not in given}
        options = self._options()
        kernel, runner = self._build(self._jit(options), args, kwargs, build)
        latency = getattr(tuned_kernel, "latency", None)
        kernel.config, kernel.latency = dict(config), latency
        result = AutotuneResult(latency, dict(config), kernel=kernel, from_cache=True)
        result.timings = {}
        result.tuned = latency is not None
        result._call = runner
        return result

    def _run_explicit(self, jit, args, kwargs, tuned, given, configs, consts):
        """The call gives tuned parameters (as TileLang's examples do on their path that does
        not tune): compile the call as it is, with the function's defaults for the tuned
        parameters not given. Nothing is benchmarked, and the result cache is neither read
        (its best config would override the caller's values) nor written (nothing was
        measured)."""
        config = self._explicit_config(tuned, given, configs)
        if not consts:  # with T.const values, compile() checks the names it gets
            try:
                self.signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"{self.name}{self.signature}: {exc}") from None
        defaulted = [k for k in config if k not in given]
        logger.info(
            "autotune '%s': the call gives %s; compiling config %s without tuning%s",
            self.name,
            ", ".join(f"{k}={v!r}" for k, v in given.items()),
            result_cache.describe(config),
            f" ({', '.join(defaulted)}: the function's defaults)" if defaulted else "",
        )
        kernel, runner = self._build(jit, args, kwargs, {})
        kernel.config = dict(config)
        result = AutotuneResult(None, dict(config), kernel=kernel)
        result.timings = {}
        result.tuned = False
        result._call = runner
        return result


# The fastest configs of a search on several devices timed again on this process's
# device before the pick.
_RETIMED = 3

# Each config is timed in this many rounds (round 1 of all configs, then round 2, ...),
# each the median of its calls within rep / _TIMING_ROUNDS ms; its time is the fastest
# round. One window per config let a moment of load on a shared machine (a single
# timed call, when a cache flush takes most of a small budget) pick a 50x slower one.
# Three rounds still did once in CI (2 cores, four tuning processes beside the test
# workers: a 4096x slower config won, so every timed call of the fast ones had been
# preempted); with five, each config's best round must be hit five times over.
_TIMING_ROUNDS = 5


class _Timed:
    """A config that passed the check: its kernel, the tensors it is timed on and the
    times (ms) of its rounds so far."""

    __slots__ = (
        "device",
        "first",
        "index",
        "kernel",
        "latency",
        "remote",
        "runner",
        "tensors",
        "times",
    )

    def __init__(self, index, kernel, runner, tensors):
        self.index, self.kernel, self.runner, self.tensors = index, kernel, runner, tensors
        self.times = []
        self.latency = None
        self.device = None  # devices.describe of where it was timed
        self.first = None  # the spread of rounds that were measured again
        self.remote = None  # (device, times, first) of a device worker, when timed again here

    def add(self, ms):
        self.times.append(ms)
        self.latency = min(self.times)

    def record(self):
        """What the result records of its measurement: the device, the spread of its
        rounds (ms), the spread that made it measured again, the device worker's."""
        rec = {"device": _device_text(self.device), **devices.spread(self.times)}
        if self.first is not None:
            rec["disturbed"] = self.first
        if self.remote is not None:
            device, times, first = self.remote
            rec["worker"] = {"device": _device_text(device), **devices.spread(times)}
            if first is not None:
                rec["worker"]["disturbed"] = first
        return rec


def time_round(entry, prof, first):
    """One timing round of a config (a _Timed): the median ms of its calls within rep /
    _TIMING_ROUNDS ms (the first round warms up too)."""
    return entry.kernel.get_profiler().do_bench(
        warmup=prof["warmup"] if first else 0,
        rep=prof["rep"] / _TIMING_ROUNDS,
        input_tensors=entry.tensors,
        return_mode="median",
        backend=prof["backend"],
    )


def measure_config(kernel, prof, shared, best, lock):
    """A benchmark worker's measurement of one config, holding the device lock `lock`:
    check_config, then _TIMING_ROUNDS rounds, all again once when their spread is beyond
    the limit. {"status": "ok" | "early" | "wrong", "value" (early: ms; wrong: why),
    "ref" (ms of ref_prog, when timed), "times" (the rounds' ms), "disturbed" (the
    spread of the first rounds, when they were measured again)}."""
    with devices.DeviceLock(lock):
        status, value, ref_ms = check_config(kernel, prof, shared, best)
        if status != "ok":
            return {"status": status, "value": value, "ref": None, "times": None, "disturbed": None}
        entry = _Timed(None, kernel, None, value)
        for rnd in range(_TIMING_ROUNDS):
            entry.add(time_round(entry, prof, first=rnd == 0))
        first = None
        if devices.disturbed(entry.times):
            first = devices.spread(entry.times)
            entry.times = [time_round(entry, prof, first=False) for _ in range(_TIMING_ROUNDS)]
    return {"status": "ok", "value": None, "ref": ref_ms, "times": entry.times, "disturbed": first}


def _device_text(info):
    if not info:
        return "unknown"
    clock = f", {info['clock_mhz']:g} MHz" if info.get("clock_mhz") else ""
    return f"{info['device']} ({info['name']}{clock})"


def _log_disturbed(name, config, first, again):
    logger.info(
        "autotune '%s': config %s: its rounds spread %.4g..%.4g ms, beyond the %g%% limit "
        "(%s): measured again: %.4g..%.4g ms",
        name,
        result_cache.describe(config),
        first["min"],
        first["max"],
        devices.spread_limit() * 100,
        devices.ENV_SPREAD,
        min(again),
        max(again),
    )


class _Race:
    """The configs of a run's timing phase so far, whichever way they are timed: those
    timed (_Timed), the times of those stopped early, ref_prog's time."""

    def __init__(self, configs, best_known, bar):
        self.configs, self.best_known, self.bar = configs, best_known, bar
        self.timed = []
        self.timings = {}
        self.ref_latency = None
        self.pick_from = None  # the configs the pick is among (None: all timed)

    def fastest(self):
        known = [e.latency for e in self.timed]
        if self.best_known is not None:
            known.append(self.best_known)
        return min(known, default=None)

    def show_best(self):
        best = min(self.timed, key=lambda e: e.latency, default=None)
        text = ""
        if best is not None:
            text = f"best {best.latency:.4g} ms {result_cache.describe(self.configs[best.index])}"
        self.bar.set_best(text)

    def add(self, entry):
        self.timed.append(entry)
        self.show_best()

    def drop(self, entry):
        if entry in self.timed:
            self.timed.remove(entry)

    def settle(self, index, status, value, ref_ms, fail):
        """Takes a config's check outcome; True when the config is timed ("ok")."""
        if status == "wrong":
            fail(index, f"wrong result: {value}")
            self.bar.step("wrong", _TIMING_ROUNDS)
            return False
        if status == "early":
            text = result_cache.describe(self.configs[index])
            self.timings[text] = value
            logger.debug("autotune: config %s: %.4g ms (stopped early)", text, value)
            self.bar.step("stopped early", _TIMING_ROUNDS)
            return False
        if ref_ms is not None:
            self.ref_latency = ref_ms
        self.bar.step(None)
        return True


def check_config(kernel, prof, shared, best):
    """Checks one kernel against ref_prog and, when it is far slower than `best`
    (ms), stops it early: ("ok", tensors to time it on, ref_latency),
    ("early", ms of one call, None) or ("wrong", message, None)."""
    from tilelang.profiler import TensorSupplyType

    profiler = kernel.get_profiler(prof["supply_type"] or TensorSupplyType.Auto)
    inputs = shared.inputs if prof["cache_input_tensors"] and _fits(kernel, shared.inputs) else None
    if inputs is None:
        if prof["supply_prog"] is not None:
            inputs = list(prof["supply_prog"]([kernel.params[i] for i in kernel._inputs]))
        else:
            inputs = profiler._get_inputs()
        if prof["cache_input_tensors"]:
            shared.inputs, shared.ref_out = inputs, None
    ref_prog = prof["ref_prog"]
    if ref_prog is not None and not prof["skip_check"]:
        reference = ref_prog
        if prof["cache_input_tensors"]:
            if shared.ref_out is None:
                shared.ref_out = ref_prog(*inputs)
            reference = lambda *_: shared.ref_out
        try:
            if prof["manual_check_prog"] is not None:
                profiler.manual_assert_close(
                    reference, input_tensors=inputs, manual_check_prog=prof["manual_check_prog"]
                )
            else:
                profiler.assert_allclose(
                    reference,
                    input_tensors=inputs,
                    atol=prof["atol"],
                    rtol=prof["rtol"],
                    max_mismatched_ratio=prof["max_mismatched_ratio"],
                )
        except AssertionError as exc:
            return "wrong", first_line(exc).replace("AssertionError: ", ""), None
    full = kernel.run(list(inputs))
    ratio = prof["early_stop_ratio"]
    if best is not None and ratio:
        once = _time_once(lambda: kernel.run(full))
        if once > ratio * best:
            return "early", once, None
    ref_latency = None
    if ref_prog is not None and shared.ref_latency is None:
        shared.ref_latency = profiler.do_bench(
            ref_prog, warmup=prof["warmup"], rep=prof["rep"], input_tensors=inputs
        )
        ref_latency = shared.ref_latency
    return "ok", full, ref_latency


def _signature(kernel):
    """Configs whose kernels take the same parameters are timed on one set of tensors
    (the first such config's), so the rounds keep one set alive, not one per config."""
    return tuple((p.name, p.dtype, tuple(p.shape), p.is_tensor) for p in kernel.params)


def _callback_identity(fn):
    """A text that names a profile callback across processes: a plain function without
    captured variables, by its module, name and source. None for a closure, a bound
    method or a callable object, whose behaviour can hang on state no text shows."""
    if not inspect.isfunction(fn) or fn.__closure__:
        return None
    return f"{fn.__module__}.{fn.__qualname__}: {result_cache.function_source(fn)}"


def _profile_key(prof, captured):
    """The texts of the profile settings that decide a tuning result (how configs are
    fed, checked and timed), or None when a callback has no persistent identity. The
    tensors of a set_autotune_inputs scope count by their shapes and dtypes."""
    key = {}
    for name, value in sorted(prof.items()):
        if name in _CALLBACKS:
            if value is None:
                continue
            text = _callback_identity(value)
            if text is None:
                return None
            key[name] = text
        else:
            key[name] = result_cache.describe(value)
    if captured is not None:
        key["set_autotune_inputs"] = result_cache.describe(list(captured))
    return key


def _fit_call(fn, args, kwargs):
    """The part of a call's arguments that `fn` (a callable `configs`) accepts: it may
    take fewer parameters than the tuned function, e.g. only the problem sizes."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return args, kwargs
    if not any(p.kind is p.VAR_POSITIONAL for p in params):
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        args = args[: len(positional)]
    if not any(p.kind is p.VAR_KEYWORD for p in params):
        taken = {p.name for p in params if p.kind is not p.POSITIONAL_ONLY}
        kwargs = {k: v for k, v in kwargs.items() if k in taken}
    return args, kwargs


def _stand_in(value):
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, (int, float)):
        return TensorStandIn(shape, str(dtype).replace("torch.", ""))
    return value


def _fits(kernel, inputs):
    if inputs is None or len(inputs) != len(kernel._inputs):
        return False
    for i, t in zip(kernel._inputs, inputs):
        shape = kernel.params[i].shape
        if all(isinstance(d, int) for d in shape) and list(t.shape) != list(shape):
            return False
    return True


def _time_once(fn):
    """The faster of two calls, in ms (the first may touch memory for the first time)."""
    times = []
    for _ in range(2):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return min(times)


class AutoTuneFunction:
    """What `@tilelang.autotune(...)` returns. Calling a lazy kernel with its non-config
    arguments returns the best JITKernel; calling an eager kernel runs the best one
    (`__return_kernel=True` among the keywords: returns its JITKernel instead, as
    compile() does). `last_result` holds the AutotuneResult of the latest call.

    `_tuner_cache` ({call key: (best JITKernel, its config)}, TileLang's name) is the
    in-memory cache of tuned calls: a call whose arguments, the do_not_specialize ones
    left out, match an entry compiles the entry's config for its own arguments without
    tuning; clearing it makes the next call tune again (or read the disk result
    cache)."""

    __test__ = False  # never collected by pytest, as the jit objects (jit/__init__.py LazyJIT)

    def __init__(self, target: str, tuner: Any) -> None:
        self.target = target
        self.tuner = tuner
        self.last_result = None
        self._tuner_cache: dict = {}
        functools.update_wrapper(self, tuner.fn, updated=())

    def _call_key(self, args, kwargs):
        """The key of a call in _tuner_cache: its arguments bound to the parameters with
        the defaults applied, the do_not_specialize ones left out, as hashable texts."""
        tuner = self.tuner
        consts = tuner._const_keywords(args, kwargs)  # an eager function's T.const values
        kwargs = {k: v for k, v in kwargs.items() if k not in consts}
        try:
            bound = tuner.signature.bind_partial(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{tuner.name}{tuner.signature}: {exc}") from None
        # A tuned parameter the call gives (tuning skipped, its value compiled as given)
        # never shares an entry with a call that leaves it to the tuner, even when the
        # value equals the default; with configs from a function, any given name counts.
        configs = tuner.configs
        if callable(configs) or not configs:
            tuned_names = None
        else:
            tuned_names = {k for c in configs if isinstance(c, dict) for k in c}
        given = tuple(sorted(n for n in bound.arguments if tuned_names is None or n in tuned_names))
        bound.apply_defaults()
        items = []
        for name, value in bound.arguments.items():
            param = tuner.signature.parameters[name]
            if param.kind is param.VAR_KEYWORD:
                items.extend((k, v) for k, v in sorted(value.items()))
            elif param.kind is param.VAR_POSITIONAL:
                items.append((name, tuple(value)))
            else:
                items.append((name, value))
        items.extend((f"T.const {k}", v) for k, v in sorted(consts.items()))
        items.append(("given", given))
        return tuple(
            (name, result_cache.describe(value))
            for name, value in items
            if name not in tuner.do_not_specialize
        )

    def _result(self, args, kwargs):
        key = self._call_key(args, kwargs)
        hit = self._tuner_cache.get(key)
        if hit is None:
            result = self.tuner.run(*args, **kwargs)
            self._tuner_cache[key] = (result.kernel, result.config)
        else:
            result = self.tuner.run_config(hit[1], hit[0], args, kwargs)
        self.last_result = result
        return result

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return_kernel = kwargs.pop("__return_kernel", False)
        result = self._result(args, kwargs)
        if self.tuner.kind == "lazy" or return_kernel:
            return result.kernel
        if result._call is None:
            raise TypeError(
                f"{self.tuner.name}() was given T.const values instead of tensors, so there is "
                f"nothing to run; use {self.tuner.name}.compile(...) for the kernel"
            )
        return result._call()

    def compile(self, *args: Any, **kwargs: Any) -> Any:
        """The best JITKernel for these arguments (tuning, or from the caches), for a
        lazy or an eager kernel alike (an eager one's T.const values as keywords)."""
        return self._result(args, kwargs).kernel

    def get_tuner_result(self, *args: Any, **kwargs: Any) -> Any:
        """The AutotuneResult for these arguments (tuning, or from the caches)."""
        return self._result(args, kwargs)


def autotune(
    func: Callable[..., Any] | None = None,
    *,
    configs: Any = None,
    warmup: int = 25,
    rep: int = 100,
    timeout: int = 100,
    supply_type: Any = None,
    ref_prog: Callable[..., Any] | None = None,
    supply_prog: Callable[..., Any] | None = None,
    rtol: float = 1e-2,
    atol: float = 1e-2,
    max_mismatched_ratio: float = 0.01,
    skip_check: bool = False,
    manual_check_prog: Callable[..., Any] | None = None,
    cache_input_tensors: bool = False,
    do_not_specialize: Any = None,
    early_stop: Any = None,
    early_stop_factor: Any = 2.0,
    result_dir: Any = None,
    devices: Any = None,
    executor: Any = None,
    ray_options: Any = None,
) -> Any:
    """`@tilelang.autotune(configs=[...], ...)` above `@tilelang.jit` (see AutoTuner).
    early_stop / early_stop_factor as in AutoTuner.run (None: the default ratio).
    result_dir: a tuning result directory shared with other tuners, other machines too
    (default: TILELANG_AUTOTUNE_RESULT_DIR, if set): each config is measured by one of
    them and all pick the same config (result_store).
    devices: "all" or a list of device indices (CUDA GPUs; CPU cores for the cpu target)
    to benchmark on in parallel, one worker process pinned to each, the fastest configs
    timed again on this process's device before the pick (None: benchmark here).
    executor: "ray" compiles and benchmarks as tasks of a Ray cluster (ray_options: the
    tasks' Ray options, see AutoTuner.set_executor)."""
    profile = {
        "warmup": warmup,
        "rep": rep,
        "timeout": timeout,
        "supply_type": supply_type,
        "ref_prog": ref_prog,
        "supply_prog": supply_prog,
        "rtol": rtol,
        "atol": atol,
        "max_mismatched_ratio": max_mismatched_ratio,
        "skip_check": skip_check,
        "manual_check_prog": manual_check_prog,
        "cache_input_tensors": cache_input_tensors,
    }
    if early_stop is not None:
        profile["early_stop_ratio"] = _early_stop_ratio(early_stop, early_stop_factor)

    def decorate(fn):
        tuner = AutoTuner(
            fn,
            configs,
            do_not_specialize=do_not_specialize,
            result_dir=result_dir,
            devices=devices,
            executor=executor,
            ray_options=ray_options,
        )
        tuner.set_profile_args(**profile)
        return AutoTuneFunction(fn, tuner)

    return decorate if func is None else decorate(func)
