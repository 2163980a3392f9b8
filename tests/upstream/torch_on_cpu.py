"""A pytest plugin that lets TileLang's own tests run unchanged on a machine without a
GPU: torch's CUDA device becomes the CPU and CUDA kernels run in our emulator.

Loaded by tests/upstream/run.py with `-p torch_on_cpu` in every mode; in the emulated
modes (`sm80`, `sm90a`) it also moves torch onto the CPU: tensors the tests create on "cuda" are created on the CPU, `.cuda()`
and `.to("cuda")` keep them there, and `torch.cuda`'s queries answer as one GPU of the
emulated compute capability, so `tilelang.testing.requires_cuda*` gates open exactly as
on that GPU. Kernels compiled for "cuda" (or "auto") run in the emulator of the arch
named by TILELANG_EMULATE_ARCH. Nothing here changes a test's kernels or references;
where torch's CPU kernel computes a reference differently from its CUDA kernel
(torch.prod of float16 / bfloat16), it computes as on the GPU.
tests/upstream/examples_small.py calls emulate_cuda_on_cpu() directly in each process
that runs an example's main().
"""

import functools
import os
import sys
import time
import types

_ARCH = os.environ.get("TILELANG_EMULATE_ARCH", "sm_80")


def _capability(arch):
    digits = "".join(ch for ch in arch.split("_", 1)[-1] if ch.isdigit())
    return int(digits[:-1]), int(digits[-1])


def _is_cuda(device):
    if device is None:
        return False
    if isinstance(device, int):
        return True
    return str(device).startswith("cuda")


def _cpu_device(device):
    return "cpu" if _is_cuda(device) else device


def _move_device_kwarg(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if "device" in kwargs:
            kwargs["device"] = _cpu_device(kwargs["device"])
        return fn(*args, **kwargs)

    return wrapper


_FACTORIES = (
    "arange", "as_tensor", "empty", "empty_like", "empty_strided", "eye", "full", "full_like",
    "linspace", "logspace", "normal", "ones", "ones_like", "rand", "rand_like", "randint",
    "randint_like", "randn", "randn_like", "randperm", "range", "tensor", "zeros", "zeros_like",
)  # fmt: skip


class _Event:
    """torch.cuda.Event on the CPU: records host time (tests use it to time kernels)."""

    def __init__(self, enable_timing=False, **_):
        self._t = None

    def record(self, stream=None):
        self._t = time.perf_counter()

    def synchronize(self):
        pass

    def query(self):
        return True

    def elapsed_time(self, end):
        return (end._t - self._t) * 1e3


class _Stream:
    def __init__(self, *args, **kwargs):
        self.cuda_stream = 0

    def synchronize(self):
        pass

    def wait_stream(self, other):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _patch_torch(torch, arch):
    for name in _FACTORIES:
        if hasattr(torch, name):
            setattr(torch, name, _move_device_kwarg(getattr(torch, name)))

    tensor_to = torch.Tensor.to

    def to(self, *args, **kwargs):
        args = tuple(_cpu_device(a) if isinstance(a, (str, torch.device)) else a for a in args)
        if "device" in kwargs:
            kwargs["device"] = _cpu_device(kwargs["device"])
        return tensor_to(self, *args, **kwargs)

    torch.Tensor.to = to

    class Generator(torch.Generator):
        """torch.Generator(device="cuda") makes a CPU generator (a subclass: isinstance holds)."""

        def __new__(cls, device="cpu"):
            return super().__new__(cls, device=_cpu_device(device))

        def __init__(self, device="cpu"):
            pass

    torch.Generator = Generator
    torch.Tensor.cuda = lambda self, *a, **k: self
    _accumulate_half_products_in_float(torch)
    for name in ("new_empty", "new_zeros", "new_ones", "new_full", "new_tensor"):
        setattr(torch.Tensor, name, _move_device_kwarg(getattr(torch.Tensor, name)))

    major, minor = _capability(arch)
    props = types.SimpleNamespace(
        name=f"emulated {arch}", major=major, minor=minor, multi_processor_count=132,
        total_memory=80 * 2**30, max_shared_memory_per_block_optin=227 * 1024,
        shared_memory_per_block_optin=227 * 1024, regs_per_multiprocessor=65536,
        warp_size=32, L2_cache_size=50 * 2**20, gcnArchName="",
    )  # fmt: skip
    cuda = torch.cuda
    cuda.is_available = lambda: True
    cuda.device_count = lambda: 1
    cuda.current_device = lambda: 0
    cuda.set_device = lambda device: None
    cuda.synchronize = lambda device=None: None
    cuda.empty_cache = lambda: None
    cuda.get_device_capability = lambda device=None: (major, minor)
    cuda.get_device_name = lambda device=None: props.name
    cuda.get_device_properties = lambda device=None: props
    cuda.mem_get_info = lambda device=None: (64 * 2**30, 80 * 2**30)
    # torch.manual_seed calls these for the GPUs it believes in: the CPU seed is set already.
    cuda.manual_seed = lambda seed: None
    cuda.manual_seed_all = lambda seed: None
    cuda.Event = _Event
    cuda.Stream = _Stream
    cuda.stream = lambda stream=None: _Stream()
    cuda.current_stream = lambda device=None: _Stream()
    cuda.default_stream = lambda device=None: _Stream()
    cuda.device = lambda device=None: _Stream()
    if not hasattr(torch.cpu, "device"):  # fla enters `torch.<device>.device(index)`
        torch.cpu.device = lambda index=None: _Stream()


def _accumulate_half_products_in_float(torch):
    """torch.prod / Tensor.prod of float16 and bfloat16 as on the GPU: torch's CUDA
    reduction multiplies in float32 and rounds once, its CPU kernel rounds every product
    to the element type (8 bfloat16 values from 2 to 8: 241664 on the GPU, 242688 on the
    CPU), so a reference a test computes "on cuda" has the GPU's value."""
    halves = (torch.float16, torch.bfloat16)

    def wrap(prod):
        @functools.wraps(prod)
        def wrapper(input, *args, **kwargs):
            if input.dtype in halves and "dtype" not in kwargs and "out" not in kwargs:
                return prod(input.float(), *args, **kwargs).to(input.dtype)
            return prod(input, *args, **kwargs)

        return wrapper

    torch.prod = wrap(torch.prod)
    torch.Tensor.prod = wrap(torch.Tensor.prod)


def pytest_configure(config):
    # Upstream's tests import helpers as `examples.<dir>.<module>` from its repository's
    # root; the root goes last on the path, after this package is imported, so that a
    # checkout's own `tilelang/` directory never shadows it.
    import tilelang  # noqa: F401

    root = os.environ.get("TILELANG_UPSTREAM_SRC")
    if root:
        sys.path.append(root)
    if os.environ.get("TILELANG_UPSTREAM_MODE") in ("sm80", "sm90a"):
        emulate_cuda_on_cpu(_ARCH)


def emulate_cuda_on_cpu(arch):
    """From here on, CUDA kernels run in the emulator of `arch` ("sm_80", "sm_90a") and
    torch's CUDA device is the CPU, answering queries as one GPU of that arch."""
    os.environ["TILELANG_EMULATE"] = "1"
    os.environ["TILELANG_EMULATE_ARCH"] = arch
    # The Triton kernels that tests and examples compare with or benchmark (their own, or
    # fla's) run in Triton's interpreter on the CPU tensors.
    os.environ.setdefault("TRITON_INTERPRET", "1")
    from tilelang.env import set_emulation

    set_emulation(True)
    try:
        import torch
    except ImportError:
        return
    _patch_torch(torch, arch)
    _provide_cpu_packages()
    _interpret_triton()


def _interpret_triton():
    """Triton's autotuner times its configs with the GPU driver's benchmarker even when
    its kernels are interpreted: on the CPU it calls each once and reports that time."""
    try:
        from triton.runtime import autotuner
    except ImportError:
        return

    def cpu_bench(fn, quantiles=None, **_):
        start = time.perf_counter()
        fn()
        ms = (time.perf_counter() - start) * 1e3
        return [ms] * len(quantiles) if quantiles else ms

    autotuner.Autotuner.do_bench = property(lambda self: self._do_bench or cpu_bench)


def _provide_cpu_packages():
    """The GPU-only packages TileLang's tests and examples take their references from,
    computed with torch on the CPU (tests/upstream/cpu_packages), where the real
    package cannot be imported: flash_attn's flash_attn_varlen_func."""
    import importlib.util

    if importlib.util.find_spec("flash_attn") is None:
        sys.path.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpu_packages"))
