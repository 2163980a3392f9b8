"""The devices a tuning run benchmarks on (`@tilelang.autotune(devices="all" | [0, 2])`),
what each one is (name, clock) and the lock that keeps two measurements on one device
from overlapping, across processes too.

A device of a CUDA GPU target is a GPU ordinal as this process numbers them (after
CUDA_VISIBLE_DEVICES); its benchmark worker is started with CUDA_VISIBLE_DEVICES naming
that GPU alone, so CUDA initialises in it with the one device. For the cpu target, the
emulators and every other target a device is a CPU core this process may run on (the
n-th of its affinity set); its worker is pinned to that core."""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import sys
import time

from tilelang.env import cache_dir, is_emulation_enabled

logger = logging.getLogger("tilelang")
_UNLOCKABLE = set()

ENV_SPREAD = "TILELANG_AUTOTUNE_SPREAD_LIMIT"
DEFAULT_SPREAD = 0.25

# CUdevice_attribute values (cuda.h) read through the core's driver binding.
_CLOCK_RATE_KHZ = 13
_PCI_BUS_ID, _PCI_DEVICE_ID, _PCI_DOMAIN_ID = 33, 34, 50


def is_gpu(target):
    """True when `target` runs kernels on a CUDA GPU (not the cpu target or an emulator)."""
    text = str(target)
    if not text.startswith("cuda"):
        return False
    return "-emulate" not in text and not is_emulation_enabled()


def _cpu_cores():
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


def available(target):
    """The number of devices of `target` this process can benchmark on."""
    if is_gpu(target):
        from tilelang import _native

        return _native.load().cuda_device_count()
    return len(_cpu_cores())


def _what(target):
    return "CUDA GPU" if is_gpu(target) else "CPU core (the cpu target's device)"


def check_form(devices, name):
    """Raises, naming the argument, unless `devices` is None, "all" or a non-empty list of
    distinct integer indices; returns it (a list as a list)."""
    where = f"autotune of '{name}': devices="
    if devices is None:
        return None
    if isinstance(devices, str):
        if devices != "all":
            raise ValueError(
                f'{where}{devices!r}: expected "all" or a list of device indices, given the '
                f"string {devices!r}"
            )
        return devices
    if isinstance(devices, (int, bool)) or not isinstance(devices, (list, tuple, range)):
        hint = f" (for device {devices} alone write [{devices}])" if type(devices) is int else ""
        raise TypeError(
            f'{where}{devices!r}: expected "all" or a list of device indices, given '
            f"{type(devices).__name__}{hint}"
        )
    devices = list(devices)
    if not devices:
        raise ValueError(
            f'{where}[]: expected "all" or a non-empty list of device indices, given an empty list'
        )
    for d in devices:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(
                f"{where}{devices!r}: expected integer device indices, given {d!r} "
                f"({type(d).__name__})"
            )
    repeated = sorted({d for d in devices if devices.count(d) > 1})
    if repeated:
        raise ValueError(
            f"{where}{devices!r}: expected each device once, given {repeated} more than once"
        )
    return devices


def resolve(devices, target, name):
    """The device indices of `devices` (`"all"` or a list of indices) for `target`, or None
    for None (benchmark here, on the current device). Raises, naming the argument, for
    anything else, an index out of range included."""
    devices = check_form(devices, name)
    if devices is None:
        return None
    count = available(target)
    where = f"autotune of '{name}': devices="
    if devices == "all":
        if count == 0:
            raise ValueError(
                f'{where}"all": expected at least one {_what(target)} for target {target}, '
                "found none"
            )
        return list(range(count))
    if count == 0:
        raise ValueError(
            f"{where}{devices!r}: expected indices of the {_what(target)}s of target {target}, "
            "found none"
        )
    for d in devices:
        if not 0 <= d < count:
            raise ValueError(
                f"{where}{devices!r}: device {d} is out of range: expected an index of the "
                f"{count} {_what(target)}(s) of target {target} (0..{count - 1}), given {d}"
            )
    return devices


def current(target):
    """The device this process runs kernels on: the current CUDA device, or None on the
    CPU (this process is not pinned to a core)."""
    if not is_gpu(target):
        return None
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            if torch.cuda.is_initialized():
                return torch.cuda.current_device()
    return 0


def worker_env(target, device):
    """The environment changes of the benchmark worker of `device`: CUDA_VISIBLE_DEVICES
    naming its GPU alone (an ordinal of ours mapped through our own CUDA_VISIBLE_DEVICES);
    on a CPU core, one thread for the kernels' blocks and for OpenMP."""
    if not is_gpu(target):
        return {"TILELANG_CPU_THREADS": "1", "OMP_NUM_THREADS": "1"}
    visible = [t.strip() for t in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")]
    visible = [t for t in visible if t]
    physical = visible[device] if device < len(visible) else str(device)
    return {"CUDA_VISIBLE_DEVICES": physical}


def pin_here(target, device):
    """Pins this (worker) process to `device`'s CPU core on a non-GPU target; a GPU worker
    was pinned by its environment before it started."""
    if not is_gpu(target):
        cores = _cpu_cores()
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setaffinity(0, {cores[device]})


def _cpuinfo():
    """{core: (model, MHz or None)} from /proc/cpuinfo."""
    found, core, model = {}, None, None
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as f:
        for line in f:
            key, _, value = line.partition(":")
            key, value = key.strip(), value.strip()
            if key == "processor":
                core = int(value) if value.isdigit() else None
            elif key == "model name":
                model = value
            elif key == "cpu MHz" and core is not None:
                with contextlib.suppress(ValueError):
                    found[core] = (model, float(value))
            if core is not None and core not in found and model is not None:
                found[core] = (model, None)
    return found


def _nvml_clock(pci):
    """The current SM clock (MHz) of the GPU at PCI address `pci` through NVML (pynvml),
    or None when NVML is not installed or fails."""
    try:
        import pynvml  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci.encode())
            return float(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001  (NVML's errors: no clock, nothing worse)
        return None


def describe(target, device, pinned=False):
    """{"device", "name", "clock_mhz", "clock", "lock"} of `device` (None: this process's
    current device; on the CPU, every core this process may use). `lock` names the
    device for the measurement lock, the same in every process of this machine.
    `pinned`: this is `device`'s benchmark worker (a GPU worker sees its GPU as 0)."""
    if is_gpu(target):
        from tilelang import _native

        C = _native.load()
        ordinal = 0 if device is None else device
        # A worker sees its GPU as ordinal 0 (CUDA_VISIBLE_DEVICES names it alone).
        local = 0 if pinned else ordinal
        attr = functools.partial(C.cuda_device_attribute, device=local)
        bus, dev, domain = attr(_PCI_BUS_ID), attr(_PCI_DEVICE_ID), attr(_PCI_DOMAIN_ID)
        pci = f"{domain or 0:08x}:{bus or 0:02x}:{dev or 0:02x}.0"
        name = None
        torch = sys.modules.get("torch")
        if torch is not None:
            with contextlib.suppress(Exception):
                name = torch.cuda.get_device_name(local)
        name = name or f"GPU {C.present_gpu_arch() or '?'}"
        clock = _nvml_clock(pci)
        source = "nvml current SM clock"
        if clock is None:
            khz = attr(_CLOCK_RATE_KHZ)
            clock = khz / 1000.0 if khz else None
            source = "driver maximum SM clock"
        return {
            "device": f"cuda:{ordinal}",
            "name": name,
            "clock_mhz": clock,
            "clock": source if clock is not None else "unknown",
            "lock": f"gpu-{pci}",
        }
    cores = _cpu_cores()
    info = _cpuinfo()
    if device is None:
        chosen = cores
    elif pinned:  # the worker's affinity is its one core already
        chosen = [cores[0]] if len(cores) == 1 else [cores[device]]
    else:
        chosen = [cores[device]]
    model = next((info[c][0] for c in chosen if c in info), None)
    clocks = [info[c][1] for c in chosen if c in info and info[c][1] is not None]
    return {
        "device": "cpu" if device is None else f"cpu core {chosen[0]}",
        "name": model or "cpu",
        "clock_mhz": round(sum(clocks) / len(clocks), 1) if clocks else None,
        "clock": "/proc/cpuinfo cpu MHz" if clocks else "unknown",
        "lock": [f"cpu-{c}" for c in chosen] if device is None else f"cpu-{chosen[0]}",
    }


def spread_limit():
    """The relative spread of a config's rounds, (max - min) / min, beyond which its
    measurement counts as disturbed and is measured again once."""
    text = os.environ.get(ENV_SPREAD, "").strip()
    if not text:
        return DEFAULT_SPREAD
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if value < 0:
        raise ValueError(f"{ENV_SPREAD} must be a number >= 0 (a fraction), got {text!r}")
    return value


def spread(times):
    """{"min", "median", "max", "rounds"} (ms) of a config's rounds."""
    ordered = sorted(times)
    n = len(ordered)
    median = ordered[n // 2] if n % 2 else (ordered[n // 2 - 1] + ordered[n // 2]) / 2
    return {"min": ordered[0], "median": median, "max": ordered[-1], "rounds": n}


def disturbed(times, limit=None):
    limit = spread_limit() if limit is None else limit
    return len(times) > 1 and min(times) > 0 and (max(times) - min(times)) / min(times) > limit


class DeviceLock:
    """An exclusive lock on a device (or, for a list, on each, taken in name order) held
    while a config is checked and timed there: a file lock under the cache directory, so
    tuners in other processes of this machine wait for it too. Released when the holder
    exits, however it exits."""

    def __init__(self, names):
        names = [names] if isinstance(names, str) else sorted(names)
        directory = os.path.join(cache_dir(), "autotune-locks")
        self.paths = [os.path.join(directory, f"{n}.lock") for n in names]
        self._files = []
        self.waited = 0.0

    def __enter__(self):
        start = time.monotonic()
        try:
            for path in self.paths:
                try:
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    f = open(path, "a+")  # closed in __exit__
                except OSError as exc:
                    if path not in _UNLOCKABLE:
                        _UNLOCKABLE.add(path)
                        logger.warning(
                            "autotune: cannot use the device lock %s (%s); measurements on "
                            "this device are not kept apart from other tuners'",
                            path,
                            exc,
                        )
                    continue
                self._files.append(f)
                fcntl.flock(f.fileno(), fcntl.LOCK_EX)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        self.waited = time.monotonic() - start
        return self

    def __exit__(self, *exc):
        for f in reversed(self._files):
            with contextlib.suppress(OSError):
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            f.close()
        self._files = []
