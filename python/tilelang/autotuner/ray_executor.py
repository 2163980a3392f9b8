"""`executor="ray"`: a tuning run's compiles and benchmarks as Ray tasks, on the CPU and
GPU workers of a Ray cluster (or of a local Ray instance).

A compile task builds one config and returns its kernel in the export format
(JITKernel.export_library: the directory's files as bytes); a benchmark task, which asks
for the benchmark resources (a GPU by default), loads that kernel (tilelang.jit.
load_kernel, nothing compiled), checks it against ref_prog and times it in rounds
holding the device lock, as a local benchmark worker does. The tasks of at most as many
configs as the cluster has room for are in flight at once, each with the run's time
limit from its start; a task whose worker dies is retried once by Ray (elsewhere when
the cluster can), and a config whose tasks fail, die twice or overrun is marked failed
with the reason, never lost. Ctrl-C cancels every task in flight.

The kernel function and the profile callbacks travel by Ray's pickling (cloudpickle):
a script's (`__main__`) functions by value, a module's by reference, so such a module
must be importable on the workers. The driver compiles the picked config once, for its
kernel object."""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections import deque
from typing import Any

from . import _worker, devices

logger = logging.getLogger("tilelang")

_START_SLACK_S = 60.0  # a task's time limit also covers its worker's start


def require_ray():
    try:
        import ray
    except ImportError:
        raise ImportError(
            "autotune executor='ray' needs Ray, an optional dependency: "
            "pip install 'tilelang-cpp[ray]' (or pip install ray)"
        ) from None
    return ray


def _pack(path):
    files = {}
    for name in sorted(os.listdir(path)):
        with open(os.path.join(path, name), "rb") as f:
            files[name] = f.read()
    return files


def _unpack(files, path):
    os.makedirs(path, exist_ok=True)
    for name, data in files.items():
        if os.path.basename(name) != name:
            raise ValueError(f"an exported kernel's file name {name!r} is not a plain name")
        with open(os.path.join(path, name), "wb") as f:
            f.write(data)


def compile_task(kind, fn, options, args, kwargs, config):
    """On a CPU worker: builds one config; returns its exported kernel's files."""
    kernel, _ = _worker.build(kind, fn, options, args, kwargs, config)
    with tempfile.TemporaryDirectory(prefix="tilelang-autotune-") as tmp:
        out = os.path.join(tmp, "kernel")
        kernel.export_library(out)
        return _pack(out)


def bench_task(files, prof, best, target):
    """On a benchmark worker: loads the exported kernel and measures it
    (tuner.measure_config); returns the measurement with the device's description."""
    import socket

    from tilelang.jit.export import load_kernel

    from .bench_pool import WORKER_ENV
    from .tuner import _Inputs, measure_config

    os.environ[WORKER_ENV] = "ray"
    with tempfile.TemporaryDirectory(prefix="tilelang-autotune-") as tmp:
        path = os.path.join(tmp, "kernel")
        _unpack(files, path)
        kernel = load_kernel(path)
        # Ray gives a GPU task CUDA_VISIBLE_DEVICES of its GPU(s): ordinal 0 is its own.
        gpu = devices.is_gpu(target)
        info = devices.describe(target, 0 if gpu else None, pinned=gpu)
        result = measure_config(kernel, prof, _Inputs(), best, info["lock"])
    info = {k: v for k, v in info.items() if k != "lock"}
    info["device"] = f"{socket.gethostname()} {info['device']}"
    return result, info


def _slots(ray, options, what):
    """How many tasks of `options` (Ray resource requests) the cluster runs at once."""
    total = ray.cluster_resources()
    wanted = {}
    if options.get("num_cpus", 1 if "num_gpus" not in options else 0):
        wanted["CPU"] = options.get("num_cpus", 1)
    if options.get("num_gpus"):
        wanted["GPU"] = options["num_gpus"]
    for name, amount in (options.get("resources") or {}).items():
        wanted[name] = amount
    if not wanted:
        return max(1, int(total.get("CPU", 1)))
    counts = [int(total.get(name, 0) // amount) for name, amount in wanted.items() if amount]
    n = min(counts) if counts else 1
    if n < 1:
        raise ValueError(
            f"autotune executor='ray': the cluster has no room for a {what} task: it asks "
            f"for {wanted}, the cluster has {dict(sorted(total.items()))}; give "
            f"ray_options={{'{what}': {{...}}}} resources the cluster has"
        )
    return n


def default_options(target):
    """Ray resource requests of the two kinds of task for `target`."""
    bench = {"num_gpus": 1} if devices.is_gpu(target) else {"num_cpus": 1}
    return {"compile": {"num_cpus": 1}, "bench": bench}


def run(ray_options, tuner, args, rest, configs, indices, prof, options, target, race, fail):
    """Compiles and benchmarks the configs at `indices` as Ray tasks, settling each into
    `race` (timed, stopped early, wrong) or `fail`. Returns the indices compiled."""
    ray = require_ray()
    if not ray.is_initialized():
        ray.init()  # RAY_ADDRESS, if set, names a cluster; else a local instance
    given = ray_options or {}
    unknown = sorted(set(given) - {"compile", "bench"})
    if unknown:
        raise ValueError(
            f"autotune of '{tuner.name}': ray_options has {unknown}: expected the keys "
            "'compile' and 'bench' (each a dict of Ray task options, e.g. "
            "{'bench': {'num_gpus': 1}})"
        )
    opts = default_options(target)
    for what in ("compile", "bench"):
        if what in given:
            opts[what] = dict(given[what])
    compile_fn = ray.remote(compile_task).options(max_retries=1, **opts["compile"])
    bench_fn = ray.remote(bench_task).options(max_retries=1, **opts["bench"])
    c_slots = _slots(ray, opts["compile"], "compile")
    b_slots = _slots(ray, opts["bench"], "bench")
    name, bar = tuner.name, race.bar
    from .tuner import _TIMING_ROUNDS, _log_disturbed, _stand_in, _Timed

    if tuner.kind == "eager":
        wargs = [_stand_in(a) for a in args]
        wrest = {k: _stand_in(v) for k, v in rest.items()}
    else:
        wargs, wrest = list(args), dict(rest)
    logger.info(
        "autotune '%s': compiling and benchmarking %d config(s) on Ray (%d compile and %d "
        "benchmark task(s) at once)",
        name,
        len(indices),
        c_slots,
        b_slots,
    )
    limit = float(prof["timeout"]) + _START_SLACK_S
    to_compile = deque(indices)
    to_bench = deque()
    artifacts: dict[int, Any] = {}
    running: dict[Any, tuple[str, int, float]] = {}  # ref -> (kind, index, deadline)
    compiled = set()
    prof_ref = ray.put(prof)

    def settle_bench(index, payload):
        result, info = payload
        if result["status"] == "ok":
            entry = _Timed(index, None, None, None)
            entry.times = list(result["times"])
            entry.latency = min(entry.times)
            entry.device, entry.first = info, result.get("disturbed")
        if race.settle(index, result["status"], result["value"], result["ref"], fail):
            race.add(entry)
            bar.step(None, _TIMING_ROUNDS - 1)
            if entry.first is not None:
                _log_disturbed(name, configs[index], entry.first, entry.times)

    def why(exc):
        cause = getattr(exc, "cause", None)
        if isinstance(cause, BaseException):
            return _worker.first_line(cause)
        text = _worker.first_line(exc)
        return text.splitlines()[0]

    try:
        while to_compile or to_bench or running:
            now = time.monotonic()
            n_compile = sum(1 for k, _, _ in running.values() if k == "compile")
            while to_compile and n_compile < c_slots:
                index = to_compile.popleft()
                ref = compile_fn.remote(tuner.kind, tuner.fn, options, wargs, wrest, configs[index])
                running[ref] = ("compile", index, now + limit)
                n_compile += 1
            n_bench = sum(1 for k, _, _ in running.values() if k == "bench")
            while to_bench and n_bench < b_slots:
                index = to_bench.popleft()
                files = artifacts.pop(index)
                ref = bench_fn.remote(files, prof_ref, race.fastest(), target)
                running[ref] = ("bench", index, now + limit)
                n_bench += 1
            wait_s = max(0.0, min(d for _, _, d in running.values()) - now)
            ready, _ = ray.wait(list(running), num_returns=1, timeout=wait_s)
            for ref in ready:
                kind, index, _ = running.pop(ref)
                try:
                    payload = ray.get(ref)
                except ray.exceptions.RayTaskError as exc:
                    stage = "compile error" if kind == "compile" else "benchmark failed"
                    fail(index, f"{stage}: {why(exc)}")
                    bar.step("failed", _TIMING_ROUNDS if kind == "bench" else 0)
                    continue
                except ray.exceptions.RayError as exc:
                    stage = "compiling" if kind == "compile" else "measuring"
                    fail(
                        index,
                        f"the Ray worker {stage} it died twice (the task was retried once): "
                        f"{type(exc).__name__}: {why(exc)}",
                    )
                    bar.step("failed", _TIMING_ROUNDS if kind == "bench" else 0)
                    continue
                if kind == "compile":
                    compiled.add(index)
                    artifacts[index] = payload
                    to_bench.append(index)
                else:
                    settle_bench(index, payload)
                race.show_best()
            now = time.monotonic()
            for ref, (kind, index, deadline) in list(running.items()):
                if now >= deadline:
                    with contextlib.suppress(Exception):
                        ray.cancel(ref, force=True)
                    del running[ref]
                    stage = "compile" if kind == "compile" else "measurement"
                    fail(index, f"its Ray {stage} task timed out after {limit:g} s")
                    bar.step("timed out", _TIMING_ROUNDS if kind == "bench" else 0)
    except BaseException:  # Ctrl-C (or an error here): nothing keeps running
        for ref in running:
            with contextlib.suppress(Exception):
                ray.cancel(ref, force=True)
        raise
    return compiled
