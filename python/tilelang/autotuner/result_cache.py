"""The autotuner's result cache: one JSON file per tuning problem under
`<cache dir>/autotuner/<sha256>.json`. The key covers the kernel function's source, its
non-config arguments, the configs, the target, the compile options, the compiler (the
tilelang version and the native core's content) and the driver (the CUDA driver, NVRTC
and GPU name; on the CPU target and the emulators, the host C++ compiler and the CPU
model), none of them paths, so equal installations on other machines compute equal keys
and can share results (result_store). The first process to finish a tuning run
publishes its result (a hard link of a complete temporary file, so readers never see
half a file) and later finishers adopt it, so concurrent processes tuning the same
kernel all end with the same config."""

import contextlib
import functools
import hashlib
import inspect
import json
import logging
import os
import platform
import sys
import tempfile

from tilelang import _native
from tilelang.env import cache_dir, env_flag, is_emulation_enabled

FORMAT = 1
logger = logging.getLogger("tilelang")


def enabled():
    return not env_flag("TILELANG_AUTO_TUNING_DISABLE_CACHE")


@functools.cache
def _core_digest(path, size, mtime_ns):
    del size, mtime_ns  # part of the memo's key only
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def compiler_identity():
    """The tilelang version, the core's version and the SHA-256 of the native core: equal
    on every machine with the same build, whatever its install path."""
    import tilelang

    C = _native.load()
    path = getattr(C, "__file__", "") or ""
    try:
        st = os.stat(path)
        digest = _core_digest(path, st.st_size, st.st_mtime_ns)
    except OSError:
        digest = "unreadable core"
    return f"tilelang {tilelang.__version__}, core {C.core_version()}, {digest}"


@functools.cache
def _host_identity():
    """The host C++ compiler (version, flags, its hash; not its path) and the CPU model."""
    try:
        parts = _native.load().host_compiler_id().split(" | ")
        compiler = " | ".join(parts[1:]) or parts[0]
    except (RuntimeError, ValueError) as exc:
        compiler = f"none ({first_line_of(exc)})"
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    return f"host compiler {compiler}; cpu {model}"


def first_line_of(exc):
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


@functools.cache
def _cuda_identity():
    C = _native.load()
    gpu = None
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_available():
                gpu = torch.cuda.get_device_name(torch.cuda.current_device())
    if gpu is None:
        gpu = C.present_gpu_arch() or "none"
    return f"CUDA driver {C.cuda_driver_version()}, NVRTC {C.nvrtc_version()}, GPU {gpu}"


def driver_identity(target):
    """What runs the kernels of `target` here: the CUDA driver, NVRTC and GPU name for a
    CUDA GPU; the host compiler and CPU model for the CPU target and the emulators."""
    text = str(target)
    emulated = "-emulate" in text or (text.startswith("cuda") and is_emulation_enabled())
    if text.startswith("cuda") and not emulated:
        return _cuda_identity()
    if text.startswith("metal") and not emulated:
        return f"metal {platform.mac_ver()[0]} {platform.machine()}"
    if text.startswith(("hip", "rocm")):
        return f"hip {platform.machine()}"
    return _host_identity()


def describe(value):
    """A stable text for one argument (tensors by shape and dtype)."""
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and not isinstance(value, (int, float)):
        return f"tensor{tuple(int(s) for s in shape)}:{str(dtype).replace('torch.', '')}"
    if isinstance(value, (list, tuple)):
        inner = ", ".join(describe(v) for v in value)
        return f"[{inner}]" if isinstance(value, list) else f"({inner})"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k!r}: {describe(v)}" for k, v in sorted(value.items())) + "}"
    return repr(value)


def function_source(fn):
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        code = getattr(fn, "__code__", None)
        return repr(code.co_code) if code is not None else repr(fn)


def make_key(fn, kind, arguments, configs, target, options, profile=None):
    """SHA-256 of everything that decides the result of a tuning run. `profile`: the
    texts of the profile settings (how configs are checked, fed and timed)."""
    import tilelang

    material = {
        "profile": profile or {},
        "format": FORMAT,
        "function": f"{fn.__module__}.{fn.__qualname__}",
        "kind": kind,
        "source": function_source(fn),
        "arguments": {name: describe(v) for name, v in arguments.items()},
        "configs": [describe(c) for c in configs],
        "target": target,
        "options": {k: describe(v) for k, v in sorted(options.items()) if k != "verbose"},
        "tilelang": tilelang.__version__,
        "compiler": compiler_identity(),
        "driver": driver_identity(target),
    }
    text = json.dumps(material, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def results_dir():
    return os.path.join(cache_dir(), "autotuner")


def path_for(key):
    return os.path.join(results_dir(), f"{key}.json")


def valid_entry(entry):
    """True for a complete result entry (what a run publishes), whatever its configs."""
    latency = entry.get("latency") if isinstance(entry, dict) else None
    return (
        isinstance(entry, dict)
        and entry.get("format") == FORMAT
        and isinstance(entry.get("index"), int)
        and isinstance(entry.get("config"), str)
        and isinstance(latency, (int, float))
        and not isinstance(latency, bool)
    )


def read_json(path, what="result"):
    """The JSON of `path`, None when it is missing; a file that is not whole JSON (a
    half-copied or damaged entry) is ignored with a warning."""
    try:
        with open(path) as f:
            return json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.warning("autotune: ignoring the damaged %s file %s (%s)", what, path, exc)
        return None


def load(path, configs):
    """The cached entry if it is complete and names one of `configs`, else None (a
    damaged one with a warning)."""
    entry = read_json(path)
    if entry is None:
        return None
    if not valid_entry(entry):
        logger.warning("autotune: ignoring the incomplete result file %s", path)
        return None
    index = entry["index"]
    if not 0 <= index < len(configs) or entry["config"] != describe(configs[index]):
        logger.warning(
            "autotune: ignoring the result file %s: its config %s is not among this run's",
            path,
            entry["config"],
        )
        return None
    return entry


def _write_temp(directory, data, shared):
    """Writes `data` as JSON to a new temporary file in `directory` (made if missing),
    flushed to disk, and returns its path; removes it if the write fails. `shared`:
    readable by others (0644), else private."""
    os.makedirs(directory, mode=0o777 if shared else 0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    try:
        if shared:
            os.fchmod(fd, 0o644)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_atomic(path, data, shared=False):
    """Writes `data` as JSON to a temporary file beside `path` and renames it over
    `path`: a reader sees the old file or the whole new one, never a torn one (also on
    a network file system). `shared`: readable by others (0644), else private."""
    tmp = _write_temp(os.path.dirname(path), data, shared)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def store(path, entry, configs, shared=False):
    """Publishes `entry` unless another process already did; returns the entry in force
    (ours or the earlier one). Failures to write only cost the caching. `shared`: the
    directory is a shared result directory (files readable by others)."""
    try:
        tmp = _write_temp(os.path.dirname(path), entry, shared)
    except OSError:
        return entry
    try:
        try:
            os.link(tmp, path)  # fails when the file exists: the first finisher wins
            return entry
        except FileExistsError:
            existing = load(path, configs)
            if existing is not None:
                return existing
            os.replace(tmp, path)  # a damaged or foreign entry: overwrite it
            return entry
        except OSError:  # no hard links on this file system
            os.replace(tmp, path)
            return entry
    except OSError:
        return entry
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
