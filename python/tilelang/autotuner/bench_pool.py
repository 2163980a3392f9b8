"""Benchmarks compiled configs on several devices at once: one worker process per device
(devices), pinned to it, checking and timing one config at a time (the kernel is a disk
cache hit: the compile workers built it). A worker that dies or overruns its time limit
takes only its config down: that config is reported failed with the reason, the worker is
replaced, and the others go on.

A worker is a fresh interpreter that loads the kernel's module, as a compile worker does
(the only kind for a CUDA GPU: CUDA must initialise in the worker with its one device),
or, on other targets, a fork of the tuning process. The profile settings travel with it:
the callbacks (ref_prog, supply_prog, manual_check_prog) of a fresh interpreter by their
module and name, so they must be module-level functions there."""

from __future__ import annotations

import importlib
import inspect
import os
import pickle
import sys
import time
import traceback
from collections import deque

from . import _worker, devices
from .compile_pool import _STARTUP_TIMEOUT_S, WorkerStartError, _poll, _Worker, dispatch_and_wait

_REF = "__tilelang_function__"
# Set in a benchmark worker to the index of its device (the kernel's code can tell).
WORKER_ENV = "TILELANG_AUTOTUNE_WORKER"
CALLBACKS = ("ref_prog", "supply_prog", "manual_check_prog")


class Captured:
    """The supply_prog of a set_autotune_inputs scope, picklable (its tensors)."""

    def __init__(self, tensors):
        self.tensors = list(tensors)

    def __call__(self, params):
        del params
        return list(self.tensors)


def _reference(fn):
    """(marker, module, qualname, file) naming a module-level function, or None (the
    file: where a fresh interpreter loads a script's `__main__` from)."""
    if not inspect.isfunction(fn) or "<" in fn.__qualname__ or fn.__closure__:
        return None
    module = sys.modules.get(fn.__module__)
    if module is None:
        return None
    obj = module
    try:
        for part in fn.__qualname__.split("."):
            obj = getattr(obj, part)
    except AttributeError:
        return None
    if obj is not fn:
        return None
    return (_REF, fn.__module__, fn.__qualname__, getattr(module, "__file__", None))


def portable_profile(prof):
    """The profile settings as a fresh interpreter can take them (callbacks by name), or
    (None, why) when a callback cannot travel so (a lambda, a closure, an object)."""
    out = dict(prof)
    for name in CALLBACKS:
        fn = prof.get(name)
        if fn is None:
            continue
        ref = _reference(fn)
        if ref is not None:
            out[name] = ref
            continue
        try:
            pickle.dumps(fn)
        except Exception:  # noqa: BLE001  (pickling can raise anything)
            return None, f"{name} is not a module-level function"
        if inspect.isfunction(fn):  # a lambda pickles by a name no other process has
            return None, f"{name} is not a module-level function"
    try:
        pickle.dumps(out)
    except Exception as exc:  # noqa: BLE001
        return None, f"the profile settings cannot be sent to a worker ({_worker.first_line(exc)})"
    return out, None


def resolve_setup(setup, user_module):
    """In a fresh worker: the setup with its callbacks looked up by name (the user's module
    is the one the worker loaded)."""
    prof = dict(setup["prof"])
    scripts = {}
    for name in CALLBACKS:
        ref = prof.get(name)
        if not (isinstance(ref, tuple) and len(ref) == 4 and ref[0] == _REF):
            continue
        _, module_name, qualname, path = ref
        if module_name == setup["user_module"]:
            obj = user_module
        elif module_name == "__main__":  # the tuning script, beside the kernel's module
            if path not in scripts:
                scripts[path] = _worker._load_module("__main__", path)
            obj = scripts[path]
        else:
            obj = sys.modules.get(module_name) or importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        prof[name] = obj
    return dict(setup, prof=prof)


def serve(conn_in, conn_out, kind, fn, options, setup):
    """A benchmark worker's loop: pins itself to its device, says what the device is, then
    checks and times each config it is sent: (index, args, kwargs, config, best ms or
    None) -> ("ok", index, measurement) or ("error", index, (line, traceback))."""
    from .tuner import _Inputs, measure_config

    target, device = setup["target"], setup["device"]
    os.environ[WORKER_ENV] = str(device)
    devices.pin_here(target, device)
    if not devices.is_gpu(target):
        # One core: one thread. torch's OpenMP pool, if the parent of a forked worker
        # used it, would also hang this process's first parallel operation otherwise.
        os.environ.update(devices.worker_env(target, device))
        torch = sys.modules.get("torch")
        if torch is not None:
            torch.set_num_threads(1)
    info = devices.describe(target, device, pinned=True)
    eager = None
    if kind == "eager":
        from tilelang.jit.eager import EagerFunction

        eager = EagerFunction(fn, options)
    shared = _Inputs()
    conn_out.send(("ready", None, info))
    while True:
        try:
            task = conn_in.recv()
        except EOFError:
            return
        if task is None:
            return
        index, args, kwargs, config, best = task
        try:
            kernel, _ = _worker.build(kind, fn, options, args, kwargs, config, eager)
            result = measure_config(kernel, setup["prof"], shared, best, info["lock"])
            conn_out.send(("ok", index, result))
        except Exception as exc:  # noqa: BLE001  (a config's failure is reported, never fatal)
            conn_out.send(("error", index, (_worker.first_line(exc), traceback.format_exc())))


def bench_all(mode, recipe, live, device_list, setup, tasks, timeout, best, on_done):
    """Checks and times `tasks` [(index, args, kwargs, config)] on `device_list`, one
    worker each. `mode` and `recipe` / `live` as compile_pool.compile_all; `setup` the
    benchmark settings ({"target", "prof", "user_module"}); best() the fastest ms so far
    (for stopping slow configs early). Calls on_done(index, status, payload, device info)
    with status "ok" (payload: measure_config's dict), "error" ((line, traceback)),
    "crash" or "timeout" (a reason). Raises WorkerStartError when no worker starts."""
    pending = deque(tasks)

    def start(device):
        d_setup = dict(setup, device=device)
        if mode == "subprocess":
            d_recipe = dict(recipe, bench=d_setup, env=devices.worker_env(setup["target"], device))
            w = _Worker(mode, d_recipe, None)
        else:
            w = _Worker(mode, None, (*live, d_setup))
        w.device = device
        return w

    workers = [start(d) for d in device_list[: len(pending)]]
    started_any = False
    try:
        while pending or any(w.task is not None for w in workers):
            dispatch_and_wait(workers, pending, timeout, lambda task: (*task, best()))
            now = time.monotonic()
            for i, w in enumerate(workers):
                replace = False
                message = _poll(w)
                where = w.info["device"] if w.info else f"device {w.device}"
                if message is not None:
                    kind, index, payload = message
                    if kind == "ready":
                        w.ready, w.info, started_any = True, payload, True
                    elif kind == "init_error":
                        if started_any:  # another worker of this kind started: a fluke
                            replace = True
                        else:
                            raise WorkerStartError(payload[0] + "\n" + payload[1])
                    else:
                        on_done(index, kind, payload, w.info)
                        w.task = None
                elif w.exit_code() is not None:
                    if not w.ready and not started_any:
                        raise WorkerStartError(
                            f"a benchmark worker exited with code {w.exit_code()} while "
                            f"starting: {w.log_tail()}"
                        )
                    if w.task is not None:
                        tail = w.log_tail()
                        reason = (
                            f"the benchmark worker on {where} died (exit code {w.exit_code()}) "
                            "while measuring it" + (f": {tail}" if tail else "")
                        )
                        on_done(w.task[0], "crash", reason, w.info)
                        w.task = None
                    replace = True
                elif w.task is not None and now - w.started >= timeout:
                    on_done(
                        w.task[0],
                        "timeout",
                        f"its measurement on {where} timed out after {timeout:g} s",
                        w.info,
                    )
                    w.task = None
                    replace = True
                elif not w.ready and now - w.launched >= _STARTUP_TIMEOUT_S:
                    if not started_any:
                        raise WorkerStartError(
                            f"a benchmark worker did not start within {_STARTUP_TIMEOUT_S:g} s"
                        )
                    replace = True
                if replace:
                    w.stop(kill=True)
                    workers[i] = start(w.device) if pending else None
            workers = [w for w in workers if w is not None]
            if pending and not workers:
                workers.append(start(device_list[0]))
    finally:
        for w in workers:
            w.stop(kill=w.task is not None or not w.ready)


def fork_allowed(target):
    """A forked worker inherits this process's CUDA state, which CUDA does not allow to
    be used: forks serve other targets only."""
    return not devices.is_gpu(target) and "fork" in _start_methods()


def _start_methods():
    import multiprocessing

    return multiprocessing.get_all_start_methods()


__all__ = ["Captured", "bench_all", "fork_allowed", "portable_profile", "resolve_setup", "serve"]
