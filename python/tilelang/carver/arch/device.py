"""The devices of TileLang's `tilelang.carver.arch` (CUDA, CDNA, METAL, CPU): the
hardware a kernel author or the roller templates size tiles for. Limits the compiler
plans with (shared memory per block, threads per block, warp size, registers) come from
the core's Target; the part's other numbers (multiprocessors, shared memory per
multiprocessor, L2, bandwidth, peaks) from tilelang.tools.analyzer.ARCH_PEAKS. On a
machine with a CUDA GPU of the target's arch, the driver's values replace the table's."""

from __future__ import annotations

import os
import re
from typing import Any

from tilelang.tools.analyzer import ARCH_PEAKS
from tilelang.types import ShapeLike

__all__ = [
    "CDNA",
    "CPU",
    "CUDA",
    "METAL",
    "TensorInstruction",
    "TileDevice",
    "auto_infer_current_arch",
    "get_arch",
    "has_mma_support",
    "is_ampere_arch",
    "is_cdna_arch",
    "is_cpu_arch",
    "is_cuda_arch",
    "is_hopper_arch",
    "is_metal_arch",
]  # fmt: skip

# CUdevice_attribute numbers the driver is asked.
_ATTR_WARP_SIZE = 10
_ATTR_SM_COUNT = 16
_ATTR_L2_BYTES = 38
_ATTR_SHARED_PER_SM = 81
_ATTR_REGISTERS_PER_SM = 82
_ATTR_SHARED_PER_BLOCK_OPTIN = 97


class TensorInstruction:
    """A matrix instruction of the device: its name and the M x N tile one warp (or
    simdgroup) computes, which warp tiles are multiples of."""

    def __init__(self, name: str, shape: ShapeLike) -> None:
        self.name = name
        self.shape = list(shape)

    def __repr__(self):
        return f"TensorInstruction({self.name!r}, {self.shape})"


class TileDevice:
    """What TileLang's carver devices carry, under TileLang's field names (smem_cap,
    compute_max_core, reg_cap, ...) and plain ones (sm_count, ...):

    platform, name, target, compute_capability ("80", "90a" -> "90", "metal", "gfx942"),
    sm_count = compute_max_core (multiprocessors / compute units), warp_size,
    smem_cap = max_shared_memory_per_block (bytes one block may use),
    max_smem_usage = shared_memory_per_sm, reg_cap = registers_per_sm (32-bit),
    max_threads_per_block, l2_cache_size_bytes, bandwidth_gbps, peak_tflops (dict by
    math kind), sm_partition, transaction_size (bytes), bandwidth (TileLang's pair of
    relative shared/global bandwidths the roller weighs traffic with)."""

    available_tensor_instructions: list  # TensorInstruction, set by each device kind

    platform = "unknown"

    def __init__(
        self, target: str, arch_key: str, limits: dict[str, Any], live: dict[str, Any] | None = None
    ) -> None:
        row = ARCH_PEAKS.get(arch_key)
        if row is None:
            raise ValueError(
                f"tilelang.carver.arch has no table row for {arch_key!r}; the table "
                f"(tilelang.tools.analyzer.ARCH_PEAKS) has {', '.join(ARCH_PEAKS)}"
            )
        live = live or {}
        self.target = target
        self.arch_key = arch_key
        self.name = live.get("name", row.part)
        self.warp_size = int(live.get("warp_size") or limits["warp_size"])
        self.sm_count = int(live.get("sm_count") or row.sm_count)
        self.max_shared_memory_per_block = int(
            live.get("shared_per_block") or limits["max_shared_memory_per_block"]
        )
        self.shared_memory_per_sm = int(live.get("shared_per_sm") or row.shared_memory_per_sm)
        self.registers_per_sm = int(live.get("registers_per_sm") or limits["registers_per_sm"])
        self.max_threads_per_block = int(limits["max_threads_per_block"])
        self.l2_cache_size_bytes = int(live.get("l2_bytes") or row.l2_cache_bytes)
        self.bandwidth_gbps = row.bandwidth_gbps
        self.peak_tflops = dict(row.tflops)
        self.sm_partition = 4
        self.transaction_size = [32, 128]
        self.bandwidth = [750, 12080]

    # TileLang's names of the same numbers.
    @property
    def compute_max_core(self) -> Any:
        return self.sm_count

    @property
    def smem_cap(self) -> Any:
        return self.max_shared_memory_per_block

    @property
    def max_smem_usage(self) -> Any:
        return self.shared_memory_per_sm

    @property
    def reg_cap(self) -> Any:
        return self.registers_per_sm

    def get_avaliable_tensorintrin_shapes(self) -> Any:
        """The M x N tiles of the device's matrix instructions (TileLang's spelling)."""
        return [t.shape for t in self.available_tensor_instructions]

    def __repr__(self):
        return f"{type(self).__name__}({self.target})"


def _target_limits(target):
    from tilelang import _native

    return dict(_native.load().target_limits(target))


def _target_text(target):
    """The canonical target string of a string, a dict or a Target-like object."""
    from tilelang.utils.target import determine_target

    if not isinstance(target, (str, dict)) and hasattr(target, "kind"):
        target = str(target)
    return determine_target(target)


def _facade_target(text):
    from tilelang.tvm.target import Target

    return Target(text)


class CUDA(TileDevice):
    """An NVIDIA GPU: `CUDA("cuda")` (the GPU present, else sm_80), `CUDA("cuda
    -arch=sm_90a")`, `CUDA(tvm.target.Target("cuda"))`."""

    platform = "CUDA"

    def __init__(self, target: str = "cuda") -> None:
        text = _target_text(target)
        if not text.startswith("cuda"):
            raise ValueError(f"CUDA takes a cuda target such as 'cuda -arch=sm_80'; got {text!r}")
        limits = _target_limits(text)
        self.sm_version = int(limits["sm_version"])
        self.arch = limits["arch"]
        self.compute_capability = str(self.sm_version)
        key = f"sm_{self.sm_version}"
        if key not in ARCH_PEAKS:  # a part of the family the table has: sm_86/87 -> sm_80
            family = [k for k in ARCH_PEAKS if k.startswith(f"sm_{self.sm_version // 10}")]
            key = family[0] if family else key
        super().__init__(_facade_target(text), key, limits, _live_cuda(self.arch))
        self.available_tensor_instructions = [
            TensorInstruction("mma", [16, 16]),
            TensorInstruction("wmma", [16, 16]),
        ]


def _live_cuda(arch):
    """The driver's numbers of GPU 0 when it is of `arch` (same compute capability)."""
    from tilelang import _native
    from tilelang.utils.target import cuda_device_attribute, has_cuda_device

    if not has_cuda_device():
        return None
    present = _native.load().present_gpu_arch()
    if re.sub(r"[af]$", "", present) != re.sub(r"[af]$", "", arch):
        return None
    return {
        "warp_size": cuda_device_attribute(_ATTR_WARP_SIZE),
        "sm_count": cuda_device_attribute(_ATTR_SM_COUNT),
        "l2_bytes": cuda_device_attribute(_ATTR_L2_BYTES),
        "shared_per_sm": cuda_device_attribute(_ATTR_SHARED_PER_SM),
        "registers_per_sm": cuda_device_attribute(_ATTR_REGISTERS_PER_SM),
        "shared_per_block": cuda_device_attribute(_ATTR_SHARED_PER_BLOCK_OPTIN),
        "name": f"CUDA GPU {present}",
    }


class METAL(TileDevice):
    """An Apple GPU (`METAL("metal")`): simdgroups of 32 threads, 8x8 simdgroup
    matrices, 32 KB of threadgroup memory."""

    platform = "Metal"

    def __init__(self, target: str = "metal") -> None:
        text = _target_text(target)
        if not text.startswith("metal"):
            raise ValueError(f"METAL takes a metal target such as 'metal'; got {text!r}")
        limits = _target_limits(text)
        limits["max_shared_memory_per_block"] = ARCH_PEAKS["metal"].shared_memory_per_sm
        super().__init__(_facade_target(text), "metal", limits)
        self.compute_capability = "metal"
        self.available_tensor_instructions = [TensorInstruction("simdgroup_matrix", [8, 8])]


class CDNA(TileDevice):
    """An AMD Instinct GPU (`CDNA("hip")`, `CDNA("hip -mcpu=gfx942")`): wavefronts of
    64, 64 KB of LDS per compute unit. The numbers describe the part for tile sizing;
    this package compiles no HIP code."""

    platform = "CDNA"

    def __init__(self, target: str = "hip") -> None:
        text = str(target)
        m = re.search(r"gfx\d+\w*", text)
        key = m.group(0) if m else "gfx942"
        limits = {
            "warp_size": 64,
            "max_shared_memory_per_block": ARCH_PEAKS.get(
                key, ARCH_PEAKS["gfx942"]
            ).shared_memory_per_sm,
            "max_threads_per_block": 1024,
            "registers_per_sm": 131072,
        }
        super().__init__(text, key, limits)
        self.compute_capability = key
        self.available_tensor_instructions = [TensorInstruction("mfma", [16, 16])]


class CPU(TileDevice):
    """The host (`CPU("cpu")`, "llvm"): one core per hardware thread, a block runs on
    one core, no shared memory limit beyond its cache."""

    platform = "CPU"

    def __init__(self, target: str = "cpu") -> None:
        text = _target_text(target)
        self.target = _facade_target(text)
        self.arch_key = "cpu"
        self.name = "host CPU"
        self.compute_capability = "cpu"
        self.warp_size = 1
        self.sm_count = os.cpu_count() or 1
        self.max_shared_memory_per_block = 1 << 20  # a block's shared arrays live in the core's L2
        self.shared_memory_per_sm = self.max_shared_memory_per_block
        self.registers_per_sm = 0
        self.max_threads_per_block = 1024
        self.l2_cache_size_bytes = 0
        self.bandwidth_gbps = 0
        self.peak_tflops = {}
        self.sm_partition = 1
        self.transaction_size = [64, 64]
        self.bandwidth = [0, 0]
        self.available_tensor_instructions = []


def get_arch(target: str = "cuda") -> TileDevice:
    """The device of a target string or Target: CUDA, METAL, CDNA (hip) or CPU."""
    text = str(target).strip()
    kind = text.split()[0] if text else ""
    if kind in ("hip", "rocm"):
        return CDNA(text)
    text = _target_text(target)
    if text.startswith("cuda"):
        return CUDA(text)
    if text.startswith("metal"):
        return METAL(text)
    return CPU(text)


def auto_infer_current_arch() -> TileDevice:
    """The device of this machine's default target ("auto": a CUDA GPU, else Metal on
    macOS, else the CPU)."""
    return get_arch(_target_text("auto"))


def is_cpu_arch(arch: Any) -> bool:
    return isinstance(arch, CPU)


def is_cuda_arch(arch: Any) -> bool:
    return isinstance(arch, CUDA)


def is_metal_arch(arch: Any) -> bool:
    return isinstance(arch, METAL)


def is_cdna_arch(arch: Any) -> bool:
    return isinstance(arch, CDNA)


def is_ampere_arch(arch: Any) -> bool:
    return is_cuda_arch(arch) and 80 <= arch.sm_version < 89


def is_hopper_arch(arch: Any) -> bool:
    return is_cuda_arch(arch) and arch.sm_version == 90


def has_mma_support(arch: Any) -> bool:
    return is_cuda_arch(arch) and arch.sm_version >= 80
