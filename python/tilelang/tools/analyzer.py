"""`tilelang.tools.Analyzer`: a kernel's floating-point work and global-memory traffic,
counted from its IR before lowering (the core's kernel_cost), placed on a GPU's roofline
to say whether the kernel is compute- or memory-bound and how long it should take at
best. The peaks of every architecture are in ARCH_PEAKS, one row each."""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, Callable

logger = logging.getLogger("tilelang")


@dataclass(frozen=True)
class ArchPeaks:
    """One architecture's reference part: its dense peaks (memory bandwidth in GB/s and
    TFLOPS per kind of math: tensor-core kinds fp16 for float16/bfloat16 operands, fp8,
    tf32 for float32 operands, int8, fp64 rate T.gemm; fp32 rates the other float
    arithmetic) and the hardware that tilelang.carver.arch describes (multiprocessors,
    shared memory per multiprocessor, L2). Limits the compiler itself plans with (shared
    memory per block, threads, warp size) come from the core's Target, not from here."""

    part: str
    bandwidth_gbps: float
    tflops: dict
    sm_count: int = 0
    shared_memory_per_sm: int = 0  # bytes
    l2_cache_bytes: int = 0  # 0: not published


_KB, _MB = 1024, 1024 * 1024

# Dense (no sparsity) datasheet peaks at boost clock, and the parts' hardware. "metal"
# is an Apple M2 Max (38 GPU cores; its 32 KB of threadgroup memory per threadgroup is
# the Metal limit); "gfx942" an AMD MI300X (CDNA3, compute units in sm_count).
ARCH_PEAKS = {
    "sm_80": ArchPeaks("A100 SXM4 80GB", 2039,
                       {"fp16": 312, "tf32": 156, "int8": 624, "fp64": 19.5, "fp32": 19.5},
                       108, 164 * _KB, 40 * _MB),
    "sm_89": ArchPeaks("L40S", 864,
                       {"fp16": 362, "fp8": 733, "tf32": 183, "int8": 733, "fp64": 1.4, "fp32": 91.6},
                       142, 100 * _KB, 96 * _MB),
    "sm_90": ArchPeaks("H100 SXM5", 3350,
                       {"fp16": 989, "fp8": 1979, "tf32": 495, "int8": 1979, "fp64": 67, "fp32": 67},
                       132, 228 * _KB, 50 * _MB),
    "sm_100": ArchPeaks("B200", 8000,
                        {"fp16": 2250, "fp8": 4500, "tf32": 1100, "int8": 4500, "fp64": 40, "fp32": 80},
                        148, 228 * _KB, 126 * _MB),
    "metal": ArchPeaks("Apple M2 Max", 400, {"fp16": 13.6, "fp32": 13.6}, 38, 32 * _KB, 0),
    "gfx942": ArchPeaks("MI300X", 5300,
                        {"fp16": 1307, "fp8": 2615, "tf32": 654, "int8": 2615, "fp64": 163, "fp32": 163},
                        304, 64 * _KB, 4 * _MB),
}  # fmt: skip


def _gemm_kind(dtype):
    """The ARCH_PEAKS math kind that rates a T.gemm whose A operand is `dtype`."""
    if dtype in ("float16", "bfloat16"):
        return "fp16"
    if dtype.startswith("float8"):
        return "fp8"
    if dtype == "float32":
        return "tf32"
    if dtype == "float64":
        return "fp64"
    if dtype.startswith(("int", "uint")):
        return "int8"
    return "fp16"  # narrower floats (fp4, fp6) run on the fp16/fp8 units at least this fast


def _scalar_kind(dtype):
    return "fp64" if dtype == "float64" else "fp32"


@dataclass(frozen=True)
class AnalysisResult:
    """TileLang's fields (total_flops, total_global_bytes, estimated_time in seconds,
    expected_tflops, expected_bandwidth_GBps) and the roofline: the bound ("compute"
    or "memory"), the compute and memory times, the arithmetic intensity (FLOP per
    global byte) and where the counts come from. print() gives one line."""

    total_flops: int
    total_global_bytes: int
    estimated_time: float
    expected_tflops: float
    expected_bandwidth_GBps: float
    arch: str = ""
    part: str = ""
    bound: str = ""
    compute_time: float = 0.0
    memory_time: float = 0.0
    global_read_bytes: int = 0
    global_write_bytes: int = 0
    flops_by_kind: dict = field(default_factory=dict)
    name: str = ""

    @property
    def arithmetic_intensity(self) -> Any:
        return (
            self.total_flops / self.total_global_bytes if self.total_global_bytes else float("inf")
        )

    def __str__(self):
        where = f"{self.arch} ({self.part})" if self.part else self.arch
        return (
            f"{self.name or 'kernel'} on {where}: {self.total_flops / 1e9:.4g} GFLOP, "
            f"{self.total_global_bytes / 1e6:.4g} MB global, "
            f"{self.arithmetic_intensity:.4g} FLOP/B: {self.bound}-bound, expected "
            f"{self.estimated_time * 1e6:.4g} us (compute {self.compute_time * 1e6:.4g} us, "
            f"memory {self.memory_time * 1e6:.4g} us)"
        )


def _core_func(fn):
    """The core PrimFunc of what the user passed (a T.prim_func, a kernel's get_tir(),
    an IRModule of one function, a compiled kernel)."""
    from tilelang.language.prim_func import PrimFunc

    if isinstance(fn, PrimFunc):
        return fn.core
    if hasattr(fn, "cost") and hasattr(fn, "script"):
        return fn
    prim = getattr(fn, "prim_func", None)
    if isinstance(prim, PrimFunc):
        return prim.core
    if hasattr(fn, "items") and hasattr(fn, "get_global_vars"):  # tvm.IRModule
        funcs = [f for _, f in fn.items()]
        if len(funcs) == 1:
            return _core_func(funcs[0])
        raise ValueError(
            f"Analyzer takes an IRModule of one function; this one has {len(funcs)}: "
            "pass the function to analyze"
        )
    raise TypeError(
        "Analyzer takes a T.prim_func (or a @tilelang.jit kernel's get_tir(...), or a "
        f"compiled kernel); got {type(fn).__name__}"
    )


def arch_of(device):
    """'sm_80' ... of `device`: a target string ('cuda -arch=sm_80', 'sm_90a', 'auto'),
    a compute capability ('8.0', '80'), or an object with a compute_capability (such as
    TileLang's carver CUDA arch); "metal" for metal targets, None for cpu."""
    cc = getattr(device, "compute_capability", None)
    if cc is not None:
        device = str(cc)
    if device is None or device == "auto":
        from tilelang.utils.target import determine_target

        device = determine_target("auto")
    if not isinstance(device, str):
        raise TypeError(
            f"Analyzer's device must be a target string ('cuda -arch=sm_80'), an arch "
            f"('sm_90a') or an arch object with compute_capability; got {type(device).__name__}"
        )
    text = device.strip()
    m = re.search(r"sm_(\d+)[af]?\b", text) or re.fullmatch(r"(\d+)\.?(\d)[af]?", text)
    if m:
        return "sm_" + "".join(m.groups())
    if text.split()[0] == "metal":
        return "metal"
    if text.startswith("gfx"):  # an AMD arch (TileLang's carver CDNA)
        return text.split()[0]
    if text.split()[0] == "cuda":
        from tilelang import _native

        arch = _native.load().present_gpu_arch()
        if arch:
            return re.sub(r"[af]$", "", arch)
        raise ValueError(
            f"Analyzer: the target '{text}' names no arch and no GPU is present; pass one "
            "such as 'cuda -arch=sm_80'"
        )
    return None


class Analyzer:
    """`Analyzer.analysis(fn, device)` (TileLang's entry): the AnalysisResult of `fn` on
    `device`. peak_tflops= and bandwidth_gbps= replace the table's peaks (needed for a
    cpu target, or an arch the table lacks)."""

    def __init__(
        self,
        fn: Callable[..., Any],
        device: Any = None,
        peak_tflops: float | None = None,
        bandwidth_gbps: float | None = None,
    ) -> None:
        self.func = _core_func(fn)
        self.device = device
        self.peak_tflops = peak_tflops
        self.bandwidth_gbps = bandwidth_gbps
        self.cost: Any = None

    def ir_pass(self) -> Any:
        """Counts the FLOPs and global bytes of the function (all its blocks)."""
        self.cost = self.func.cost()
        return self

    def _peaks(self):
        arch = arch_of(self.device)
        row = ARCH_PEAKS.get(arch) if arch else None
        if row is None and (self.peak_tflops is None or self.bandwidth_gbps is None):
            raise ValueError(
                f"Analyzer has no peaks for {arch or self.device!r}; the table "
                f"(tilelang.tools.analyzer.ARCH_PEAKS) has {', '.join(ARCH_PEAKS)}. Pass "
                "peak_tflops= and bandwidth_gbps= for this device"
            )
        return arch or str(self.device), row

    def calculate(self) -> Any:
        """The AnalysisResult: the counts placed on the device's roofline."""
        if self.cost is None:
            self.ir_pass()
        arch, row = self._peaks()
        flops: dict[str, Any] = {}
        for dtype, n in self.cost["gemm_flops"].items():
            kind = _gemm_kind(dtype)
            flops[kind] = flops.get(kind, 0) + n
        for dtype, n in self.cost["scalar_flops"].items():
            kind = _scalar_kind(dtype)
            flops[kind] = flops.get(kind, 0) + n
        bandwidth = self.bandwidth_gbps if self.bandwidth_gbps is not None else row.bandwidth_gbps

        def peak(kind):
            if self.peak_tflops is not None:
                return self.peak_tflops
            # fp8 or int8 math on an arch without those units runs at the fp16 rate.
            return row.tflops.get(kind) or row.tflops["fp16"]

        compute_time = sum(n / (peak(kind) * 1e12) for kind, n in flops.items())
        total_bytes = self.cost["global_read_bytes"] + self.cost["global_write_bytes"]
        memory_time = total_bytes / (bandwidth * 1e9)
        main = max(flops, key=flops.__getitem__) if flops else "fp32"
        result = AnalysisResult(
            total_flops=sum(flops.values()),
            total_global_bytes=total_bytes,
            estimated_time=max(compute_time, memory_time),
            expected_tflops=peak(main),
            expected_bandwidth_GBps=bandwidth,
            arch=arch,
            part=row.part if row is not None and self.peak_tflops is None else "",
            bound="compute" if compute_time >= memory_time else "memory",
            compute_time=compute_time,
            memory_time=memory_time,
            global_read_bytes=self.cost["global_read_bytes"],
            global_write_bytes=self.cost["global_write_bytes"],
            flops_by_kind=flops,
            name=self.func.name,
        )
        logger.info("Analyzer: %s", result)
        return result

    @classmethod
    def analysis(
        cls,
        fn: Callable[..., Any],
        device: Any = None,
        peak_tflops: float | None = None,
        bandwidth_gbps: float | None = None,
    ) -> Any:
        """The AnalysisResult of `fn` on `device` (see the class)."""
        return cls(fn, device, peak_tflops, bandwidth_gbps).ir_pass().calculate()
