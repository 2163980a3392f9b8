"""Turns the `target=` argument users pass (a string, a dict, or "auto") into the one
canonical target string the C++ core understands."""

from __future__ import annotations

import functools
import json
import os
import re

_CPU_ALIASES = {"cpu", "c", "llvm"}
_KINDS = {"cpu", "cuda", "metal"}


# The CUDA driver is loaded and asked by the core (src/runtime/cuda/cuda_api.cpp), once
# per process, whether a kernel or these questions come first.


@functools.lru_cache(maxsize=1)
def has_cuda_device():
    """True when the CUDA driver loads and reports at least one device (no torch needed)."""
    from tilelang import _native

    return _native.load().cuda_device_count() > 0


def cuda_device_attribute(attribute, device=0):
    """The CUDA driver's value of attribute number `attribute` (a CUdevice_attribute)
    for GPU `device`, or None without a driver or that device."""
    from tilelang import _native

    return _native.load().cuda_device_attribute(int(attribute), int(device))


@functools.lru_cache(maxsize=1)
def has_mps_device():
    """True on macOS when torch is installed with a usable MPS device (imports torch
    only on macOS)."""
    import platform

    if platform.system() != "Darwin":
        return False
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.backends.mps.is_available())


def hopper_target():
    """The target for kernels that need Hopper's instructions (wgmma, TMA, mbarriers):
    "cuda -arch=sm_90a" when the default target is CUDA on a GPU of compute capability
    9.x, else the CUDA emulator of sm_90a ("cuda -arch=sm_90a -emulate"), which runs the
    same generated CUDA on the CPU."""
    # CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR (75) of device 0
    if determine_target("auto") == "cuda" and has_cuda_device() and cuda_device_attribute(75) == 9:
        return "cuda -arch=sm_90a"
    return "cuda -arch=sm_90a -emulate"


def available_targets():
    """Target kinds this build of the core can compile for."""
    from tilelang import _native

    query = getattr(_native.load(), "available_targets", None)
    return set(query()) if query else {"cpu"}


def _from_dict(spec):
    kind = spec.get("kind")
    if not isinstance(kind, str):
        raise TypeError(f"target dict needs a 'kind' string, got {spec!r}")
    parts = [kind]
    for key, value in spec.items():
        if key == "kind" or value is False or value is None:
            continue
        if value is True:
            parts.append(f"-{key}")
        elif isinstance(value, (list, tuple)):
            parts.append(f"-{key}={','.join(str(v) for v in value)}")
        else:
            parts.append(f"-{key}={value}")
    return " ".join(parts)


def _default_target():
    env = os.environ.get("TILELANG_DEFAULT_TARGET", "").strip()
    if env:
        if env.startswith("{"):
            return _from_dict(json.loads(env))
        return env
    # The best target this build can compile for: CUDA when a GPU answers (or when the
    # CUDA emulator is on), else the CPU.
    from tilelang.env import is_emulation_enabled

    if is_emulation_enabled() and "cuda" in available_targets():
        return "cuda"
    if has_cuda_device() and "cuda" in available_targets():
        return "cuda"
    if has_mps_device():
        return "metal"
    return "cpu"


def _canonical(target):
    text = " ".join(target.split())
    kind, _, rest = text.partition(" ")
    if kind in _CPU_ALIASES:
        return "cpu" if not rest else f"cpu {rest}"
    from tilelang.env import is_emulation_enabled

    words = rest.split()
    if kind in ("cuda", "metal") and is_emulation_enabled() and "-emulate" not in words:
        # TILELANG_EMULATE_ARCH names the GPU the emulator stands in for ("sm_90a").
        arch = os.environ.get("TILELANG_EMULATE_ARCH", "").strip()
        if arch and not re.fullmatch(r"sm_\d{2,3}[af]?", arch):
            raise ValueError(
                f"TILELANG_EMULATE_ARCH must be a CUDA arch such as sm_80 or sm_90a, got {arch!r}"
            )
        if kind == "cuda" and arch and not any(w.startswith("-arch") for w in words):
            words.insert(0, f"-arch={arch}")
        text = " ".join([kind, *words, "-emulate"])
    if kind not in _KINDS:
        raise ValueError(
            f"unknown target '{target}'; expected 'auto', 'cpu', 'cuda' (e.g. 'cuda -arch=sm_90') "
            "or 'metal' (e.g. 'metal -keys=metal4')"
        )
    return text


def scoped_target() -> str | None:
    """The target of the innermost `with tvm.target.Target(...)` of this thread, as a
    string, or None."""
    from tilelang.tvm.target import current_target

    current = current_target()
    return None if current is None else str(current)


def determine_target(target: str = "auto") -> str:
    """The canonical target string; "auto" is the target of an enclosing
    `with tvm.target.Target(...)`, else TILELANG_DEFAULT_TARGET, else the best available."""
    if type(target).__name__ == "Target" and hasattr(target, "attrs"):
        target = str(target)
    if target is None or target == "auto":
        target = scoped_target() or target
    if isinstance(target, str) and target.lstrip().startswith("{"):
        target = json.loads(target)
    if isinstance(target, dict):
        target = _from_dict(target)
    if target is None or target == "auto":
        target = _default_target()
    if not isinstance(target, str):
        raise TypeError(f"target must be a str or dict, got {type(target).__name__}")
    return _canonical(target)
