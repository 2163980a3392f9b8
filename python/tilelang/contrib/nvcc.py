"""Compute capabilities of CUDA targets and GPUs, under the names TileLang scripts use
(`from tilelang.contrib import nvcc; nvcc.get_target_compute_version()`).

A compute version is the string "major.minor" ("9.0" for an H100 / H200 or the target
"cuda -arch=sm_90a"). Our kernels compile with NVRTC, not nvcc, so nothing here runs
a compiler."""

import re

from tilelang._compat import forwarding_getattr
from tilelang.utils.target import cuda_device_attribute, determine_target

_ARCH = re.compile(r"(?:-arch=)?sm_(\d+)([a-z]?)\b")
# CUdevice_attribute numbers of the compute capability (CUDA driver API).
_CC_MAJOR, _CC_MINOR = 75, 76


def _arch_of(target):
    """(digits, suffix) of the sm_XY[a] a target names, or None."""
    if target is None:
        return None
    text = target if isinstance(target, str) else str(getattr(target, "arch", None) or target)
    m = _ARCH.search(text)
    return (m.group(1), m.group(2)) if m else None


def get_target_compute_version(target=None):
    """The compute version "major.minor" of `target` (a target string such as
    "cuda -arch=sm_90a" or "sm_80", or an object whose str() or `.arch` names one);
    without one named there, that of GPU 0, as the default target would compile for."""
    arch = _arch_of(target)
    if arch is None and (target is None or str(target).split()[0] in ("auto", "cuda")):
        arch = _arch_of(determine_target("auto") if target is None else target)
        if arch is None:
            major, minor = cuda_device_attribute(_CC_MAJOR), cuda_device_attribute(_CC_MINOR)
            if major is not None and minor is not None:
                return f"{major}.{minor}"
    if arch is None:
        raise ValueError(
            "get_target_compute_version: no compute capability in target "
            f"{target!r} (expected a CUDA target such as 'cuda -arch=sm_90a'), and no CUDA "
            "GPU to ask"
            if target is not None
            else "get_target_compute_version: no target given and no CUDA GPU to ask; pass "
            "a target such as 'cuda -arch=sm_90a'"
        )
    digits = arch[0]
    return f"{digits[:-1]}.{digits[-1]}"


def parse_compute_version(compute_version):
    """(major, minor) of a compute version string such as "9.0"."""
    m = re.fullmatch(r"\s*(\d+)\.(\d+)\s*", str(compute_version))
    if not m:
        raise ValueError(
            f"parse_compute_version: expected a compute version 'major.minor' such as "
            f"'9.0', got {compute_version!r}"
        )
    return int(m.group(1)), int(m.group(2))


def get_target_arch(compute_version):
    """The arch digits of a compute version ("9.0" -> "90"), as in sm_90; Hopper's and
    Blackwell's architecture-specific features take an "a" suffix (see
    get_target_arch_name)."""
    major, minor = parse_compute_version(compute_version)
    return f"{major}{minor}"


def get_target_arch_name(compute_version):
    """The sm_ name our CUDA target takes for a compute version: "sm_90a" for 9.0 (wgmma
    and the other sm_90a features), "sm_80" for 8.0."""
    major, minor = parse_compute_version(compute_version)
    return f"sm_{major}{minor}{'a' if major >= 9 else ''}"


def have_fp16(compute_version):
    """Whether GPUs of that compute version do float16 arithmetic (5.3 and later)."""
    return parse_compute_version(compute_version) >= (5, 3)


def have_int8(compute_version):
    """Whether they have the 8-bit integer dot products (dp4a: 6.1 and later)."""
    return parse_compute_version(compute_version) >= (6, 1)


def have_bf16(compute_version):
    """Whether they do bfloat16 on tensor cores (8.0 and later)."""
    return parse_compute_version(compute_version) >= (8, 0)


def have_tensorcore(compute_version=None, target=None):
    """Whether they have tensor cores (7.0 and later); the version comes from `target`
    (or GPU 0) when not given."""
    if compute_version is None:
        compute_version = get_target_compute_version(target)
    return parse_compute_version(compute_version) >= (7, 0)


def have_fp8(compute_version):
    """Whether they have float8 tensor cores (8.9 and later)."""
    return parse_compute_version(compute_version) >= (8, 9)


def have_tma(compute_version):
    """Whether they have the tensor memory accelerator (9.0 and later)."""
    return parse_compute_version(compute_version) >= (9, 0)


# TileLang's nvcc driver (tilelang/contrib/nvcc.py of 0.1.15 and a35008a): it runs nvcc
# as a subprocess, with a compile timeout and gencode lists. Kernels here compile with
# NVRTC inside the process, so these import and raise when used.
_NVCC_DRIVER = (
    "env", "subprocess", "compile_cuda", "get_nvcc_compiler", "get_nvcc_subprocess_env",
    "_get_compile_timeout_seconds", "_resolve_artifact_paths", "get_target_arch_and_code",
    "get_target_code_list", "format_target_code_for_gencode", "default_compile_options",
    "get_ptx_from_source", "get_sass_from_source", "find_cuda_path", "get_cuda_library_dirs",
    "get_cuda_version",
)  # fmt: skip


__getattr__ = forwarding_getattr(
    __name__, internal=_NVCC_DRIVER,
    instead="kernels compile with NVRTC in the process (no nvcc subprocess); the generated "
    "source is kernel.get_kernel_source() and tilelang.lower(...).kernel_source",
)  # fmt: skip
