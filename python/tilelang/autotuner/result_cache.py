"""The autotuner's result cache: one JSON file per tuning problem under
`<cache dir>/autotuner/<sha256>.json`. The key covers the kernel function's source, its
non-config arguments, the configs, the target, the compile options and the compiler
build. The first process to finish a tuning run publishes its result (a hard link of a
complete temporary file, so readers never see half a file) and later finishers adopt it,
so concurrent processes tuning the same kernel all end with the same config."""

import contextlib
import hashlib
import inspect
import json
import os
import tempfile

from tilelang import _native
from tilelang.env import cache_dir, env_flag

FORMAT = 1


def enabled():
    return not env_flag("TILELANG_AUTO_TUNING_DISABLE_CACHE")


def _compiler_build():
    C = _native.load()
    path = getattr(C, "__file__", "") or ""
    try:
        st = os.stat(path)
        return f"{path}:{st.st_size}:{st.st_mtime_ns}"
    except OSError:
        return path


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
        "compiler": _compiler_build(),
    }
    text = json.dumps(material, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def path_for(key):
    return os.path.join(cache_dir(), "autotuner", f"{key}.json")


def load(path, configs):
    """The cached entry if it is complete and names one of `configs`, else None."""
    try:
        with open(path) as f:
            entry = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(entry, dict) or entry.get("format") != FORMAT:
        return None
    index = entry.get("index")
    if not isinstance(index, int) or not 0 <= index < len(configs):
        return None
    if entry.get("config") != describe(configs[index]):
        return None
    if not isinstance(entry.get("latency"), (int, float)):
        return None
    return entry


def store(path, entry, configs):
    """Publishes `entry` unless another process already did; returns the entry in force
    (ours or the earlier one). Failures to write only cost the caching."""
    directory = os.path.dirname(path)
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)  # private whatever the umask
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".tmp-", suffix=".json")
    except OSError:
        return entry
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(entry, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
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
