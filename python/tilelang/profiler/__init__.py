"""Measuring and checking kernels: `kernel.get_profiler()` returns a Profiler that makes
inputs (TensorSupplyType), compares the kernel with a reference program
(assert_allclose) and times it (do_bench); `do_bench(fn)` times any callable.

On the CPU target timing uses the wall clock (time.perf_counter) around each call,
after writing a buffer as large as the last-level cache so that every call starts
cold. On CUDA, backend="event" brackets each call with torch.cuda.Events on the
current stream after zeroing a 256 MB buffer (flushing L2), and backend="cudagraph"
captures the calls in a torch.cuda.CUDAGraph and times its replays. `warmup` and
`rep` are budgets in milliseconds, turned into iteration counts from a first
estimate, as in Triton and TileLang."""

from __future__ import annotations

import enum
import statistics
import sys
import threading
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

if TYPE_CHECKING:
    from tilelang.jit.kernel import JITKernel

__all__ = ["Profiler", "TensorSupplyType", "do_bench"]


class TensorSupplyType(enum.Enum):
    Integer = 1  # small random integers (-2..2 for floats; the full range for narrow ints)
    Uniform = 2  # uniform in [-1, 1)
    Normal = 3  # normal(0, 1)
    Randn = 4  # normal(0, 1)
    Zero = 5
    One = 6
    Auto = 7  # uniform(-1, 1) for floats, random integers for integer dtypes


_RETURN_MODES = ("min", "max", "mean", "median")
# On the CPU (the cpu target and the emulators) the only clock is the host's: every
# backend name TileLang accepts times wall-clock there, so that programs written for a
# GPU's "cupti" or "cudagraph" run unchanged.
_CPU_BACKENDS = ("event", "wall", "cupti", "cudagraph")
_CUDA_BACKENDS = ("event", "cudagraph", "cupti", "wall")
_L2_FLUSH_BYTES = 256 << 20
_MAX_GRAPH_CALLS = 5000  # calls captured in one graph (bounds capture time and memory)


# ---- timing


def _cache_bytes():
    """Size of the last-level cache, from sysfs; 32 MiB when unknown."""
    best = 0
    for index in range(8):
        try:
            with open(f"/sys/devices/system/cpu/cpu0/cache/index{index}/size") as f:
                text = f.read().strip()
        except OSError:
            break
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text[:-1] if text[-1:] in "KMG" else text
        if digits.isdigit():
            best = max(best, int(digits) * scale)
    return best or 32 << 20


_flush_buffer = None


def _flush_cache():
    global _flush_buffer
    if _flush_buffer is None:
        _flush_buffer = np.empty(min(_cache_bytes(), 32 << 20) // 8, dtype=np.int64)
    _flush_buffer.fill(0)


def _cuda_in_use():
    """True when this process already works with CUDA through torch (then a bare
    `do_bench(fn)` times the GPU; a process that never touched CUDA times the CPU)."""
    torch = sys.modules.get("torch")
    return torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized()


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        values = np.quantile(np.asarray(times), quantiles).tolist()
        return values[0] if len(values) == 1 else values
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "median":
        return statistics.median(times)
    return statistics.fmean(times)


class _EarlyStop(Exception):
    """The first estimate exceeded do_bench's early_stop_baseline."""

    def __init__(self, estimate_ms):
        super().__init__(estimate_ms)
        self.estimate_ms = estimate_ms


# Per-thread options of the do_bench call in progress (cache_size, early_stop_baseline).
_options = threading.local()


def _flush_bytes():
    return getattr(_options, "flush_bytes", _L2_FLUSH_BYTES)


def _counts(estimate_ms, warmup, rep, n_warmup, n_repeat):
    baseline = getattr(_options, "early_stop_baseline", None)
    if baseline is not None and estimate_ms > baseline:
        raise _EarlyStop(estimate_ms)
    estimate_ms = max(estimate_ms, 1e-6)
    return (
        n_warmup if n_warmup > 0 else max(1, int(warmup / estimate_ms)),
        n_repeat if n_repeat > 0 else max(1, int(rep / estimate_ms)),
    )


def _bench_cuda_event(fn, warmup, rep, n_warmup, n_repeat, fast_flush):
    import torch

    flush_buffer = None
    if fast_flush:
        flush_buffer = torch.empty(max(_flush_bytes() // 4, 1), dtype=torch.int32, device="cuda")
    fn()  # compile / module load outside the measurement
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        if flush_buffer is not None:
            flush_buffer.zero_()
        fn()
    end.record()
    torch.cuda.synchronize()
    n_warmup, n_repeat = _counts(start.elapsed_time(end) / 5, warmup, rep, n_warmup, n_repeat)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(n_repeat)]
    for _ in range(n_warmup):
        fn()
    for i in range(n_repeat):
        if flush_buffer is not None:
            flush_buffer.zero_()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def _bench_cuda_cupti(fn, warmup, rep, n_warmup, n_repeat, fast_flush):
    """Per-call ms of the GPU work `fn` launches, from CUPTI's kernel records (through
    torch.profiler): the sum of its kernels' durations, without the launch gaps between
    them. The cache flush before each call is profiled alone and its time taken off."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    flush_buffer = None
    if fast_flush:
        flush_buffer = torch.empty(max(_flush_bytes() // 4, 1), dtype=torch.int32, device="cuda")

    def flush():
        if flush_buffer is not None:
            flush_buffer.zero_()

    def kernels(body, calls):
        """(name, device µs) of each GPU activity `calls` calls of `body` launch."""
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                body()
            torch.cuda.synchronize()
        return [
            (e.name, e.device_time_total)
            for e in prof.events()
            if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
        ]

    fn()  # compile / module load outside the measurement
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        flush()
        fn()
    end.record()
    torch.cuda.synchronize()
    n_warmup, n_repeat = _counts(start.elapsed_time(end) / 5, warmup, rep, n_warmup, n_repeat)
    for _ in range(n_warmup):
        fn()

    def step():
        flush()
        fn()

    # The flush's own kernels are left out by name. Subtracting a separate measurement of
    # the flush instead left the noise of two flushes, far longer than a small kernel, and
    # could give 0. Only where `fn` launches a kernel of the same name is it subtracted.
    flush_names = {name for name, _ in kernels(flush, 2)} if flush_buffer is not None else set()
    timed = kernels(step, n_repeat)
    if flush_names and flush_names & {name for name, _ in kernels(fn, 1)}:
        total = sum(us for _, us in timed) - sum(us for _, us in kernels(flush, n_repeat))
    else:
        total = sum(us for name, us in timed if name not in flush_names)
    return [max(total, 0.0) / n_repeat / 1e3]


def _bench_wall(fn, warmup, rep, n_warmup, n_repeat, synchronize):
    """Per-call host ms of `fn`, each call between two synchronizations (launch and
    synchronization cost included, no cache flush)."""
    fn()
    synchronize()
    start = time.perf_counter()
    for _ in range(5):
        fn()
    synchronize()
    n_warmup, n_repeat = _counts(
        (time.perf_counter() - start) * 1e3 / 5, warmup, rep, n_warmup, n_repeat
    )
    for _ in range(n_warmup):
        fn()
    times = []
    for _ in range(n_repeat):
        synchronize()
        t0 = time.perf_counter()
        fn()
        synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def _bench_cuda_graph(fn, rep, n_repeat):
    """Per-call ms of `fn` replayed from a CUDA graph of many calls (no launch cost)."""
    import torch

    def capture(calls):
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(calls):
                fn()
        torch.cuda.synchronize()
        return graph

    def replay_ms(graph):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end)

    torch.cuda.synchronize()  # inputs made on the current stream are ready for the side one
    with torch.cuda.stream(torch.cuda.Stream()):
        fn()  # first call (module load, allocations) outside any capture
        torch.cuda.synchronize()
        graph = capture(5)
        replay_ms(graph)
        estimate = replay_ms(graph) / 5
        del graph
        calls = n_repeat if n_repeat > 0 else max(1, int(rep / max(estimate, 1e-6)))
        calls = min(calls, _MAX_GRAPH_CALLS)
        graph = capture(calls)
        replay_ms(graph)  # first replay uploads the graph
        times = [replay_ms(graph) / calls for _ in range(10)]
        del graph
    return times


def do_bench(
    fn: Callable[[], Any],
    warmup: float = 25,
    rep: float = 100,
    _n_warmup: int = 0,
    _n_repeat: int = 0,
    quantiles: Sequence[float] | None = None,
    fast_flush: bool = True,
    backend: str = "event",
    return_mode: str = "mean",
    device: Any = None,
    cache_size: int = 256,
    early_stop_baseline: float | None = None,
) -> float | list[float]:
    """Runtime of `fn()` in milliseconds. `warmup`/`rep` are time budgets in ms (the
    number of calls comes from a first estimate); `_n_warmup`/`_n_repeat` > 0 fix the
    counts instead. With `quantiles` a list of those quantiles is returned, else the
    `return_mode` statistic of the per-call times.

    `device` is "cuda" (or a CUDA device index or torch.device) or "cpu"; by default
    "cuda" once the process uses CUDA through torch, else "cpu". On CUDA, `backend` is
    "event" (CUDA events around each call, the L2 cache flushed before it: `cache_size`
    MB), "cudagraph" (many calls replayed from one CUDA graph), "cupti" (the durations
    of the kernels `fn` launches, from CUPTI through torch.profiler) or "wall" (host
    time between synchronizations). On the CPU every backend times the wall clock.
    `early_stop_baseline` (ms): when the first estimate exceeds it, that estimate is
    returned without the full measurement (for tuners skipping slow candidates)."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}"
        )
    device, cuda_index = _bench_device(device)
    if device is None:
        device = "cuda" if _cuda_in_use() else "cpu"
    if device not in ("cuda", "cpu"):
        raise ValueError(f"do_bench device must be 'cuda' or 'cpu', got {device!r}")
    known = _CUDA_BACKENDS if device == "cuda" else _CPU_BACKENDS
    if backend not in known:
        raise ValueError(
            f"unknown do_bench backend '{backend}'; use one of "
            f"{', '.join(repr(b) for b in known)}"
            + (" (on the CPU all time the wall clock)" if device == "cpu" else "")
        )
    _options.flush_bytes = int(cache_size * (1 << 20))
    _options.early_stop_baseline = early_stop_baseline
    try:
        if device == "cuda":
            import contextlib

            import torch

            scope = (
                torch.cuda.device(cuda_index)
                if cuda_index is not None
                else contextlib.nullcontext()
            )
            with scope:
                times = _bench_cuda(fn, warmup, rep, _n_warmup, _n_repeat, fast_flush, backend)
        else:
            times = _bench_cpu(fn, warmup, rep, _n_warmup, _n_repeat, fast_flush)
    except _EarlyStop as stop:
        if quantiles is not None:
            return stop.estimate_ms if len(quantiles) == 1 else [stop.estimate_ms] * len(quantiles)
        return stop.estimate_ms
    finally:
        _options.flush_bytes = _L2_FLUSH_BYTES
        _options.early_stop_baseline = None
    return _summarize(times, quantiles, return_mode)


def _bench_device(device):
    """(kind, CUDA index or None) of do_bench's `device`: None, "cuda", "cuda:N",
    "cpu", an int (a CUDA index) or a torch.device."""
    if device is None or device in ("cuda", "cpu"):
        return device, None
    if isinstance(device, int) and not isinstance(device, bool):
        return "cuda", device
    if isinstance(device, str) and device.startswith("cuda:") and device[5:].isdigit():
        return "cuda", int(device[5:])
    kind = getattr(device, "type", None)  # a torch.device
    if kind in ("cuda", "cpu"):
        return kind, getattr(device, "index", None) if kind == "cuda" else None
    raise ValueError(
        f"do_bench device must be 'cuda', 'cuda:N', a CUDA index or 'cpu', got {device!r}"
    )


def _bench_cuda(fn, warmup, rep, n_warmup, n_repeat, fast_flush, backend):
    if backend == "cudagraph":
        return _bench_cuda_graph(fn, rep, n_repeat)
    if backend == "cupti":
        return _bench_cuda_cupti(fn, warmup, rep, n_warmup, n_repeat, fast_flush)
    if backend == "wall":
        import torch

        return _bench_wall(fn, warmup, rep, n_warmup, n_repeat, torch.cuda.synchronize)
    return _bench_cuda_event(fn, warmup, rep, n_warmup, n_repeat, fast_flush)


def _bench_cpu(fn, warmup, rep, n_warmup, n_repeat, fast_flush):
    flush = _flush_cache if fast_flush else (lambda: None)
    fn()  # compile / first-touch outside the measurement
    # The estimate includes the flush, so that the budgets bound the wall time.
    start = time.perf_counter()
    for _ in range(5):
        flush()
        fn()
    estimate_ms = (time.perf_counter() - start) * 1e3 / 5
    n_warmup, n_repeat = _counts(estimate_ms, warmup, rep, n_warmup, n_repeat)
    for _ in range(n_warmup):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(n_repeat):
        flush()
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return times


# ---- inputs


def _numpy_dtype(name):
    from tilelang.language.dtypes import dtype as DType

    return DType(name).as_numpy()


def make_tensor(
    shape: Sequence[int], dtype: str, supply_type: TensorSupplyType, rng: np.random.Generator
) -> np.ndarray:
    """One input of `shape` and `dtype` (a TileLang dtype name) per the supply type."""
    np_dtype = np.dtype(_numpy_dtype(dtype))
    kind = np_dtype.kind
    is_float = "float" in str(dtype)  # includes bfloat16 and fp8 (ml_dtypes)
    if supply_type == TensorSupplyType.Zero:
        return np.zeros(shape, np_dtype)
    if supply_type == TensorSupplyType.One:
        return np.ones(shape, np_dtype)
    if kind == "b":
        return rng.integers(0, 2, size=shape).astype(np_dtype)
    if kind in "iu":
        # TileLang's ranges: 0..2 unsigned, -2..2 signed. References written for them
        # count on small values (its mxfp4 examples scale by 2 ** Scale in uint8).
        low = 0 if kind == "u" else -2
        return rng.integers(low, 3, size=shape).astype(np_dtype)
    if supply_type == TensorSupplyType.Integer:
        values = rng.integers(-2, 3, size=shape)
    elif supply_type in (TensorSupplyType.Uniform, TensorSupplyType.Auto):
        values = rng.uniform(-1.0, 1.0, size=shape)
    else:  # Normal, Randn
        values = rng.standard_normal(size=shape)
    if not is_float:
        return values.astype(np_dtype)
    return values.astype(np.float32).astype(np_dtype)


class Profiler:
    """What `kernel.get_profiler(tensor_supply_type=...)` returns."""

    def __init__(
        self,
        kernel: JITKernel,
        supply_type: TensorSupplyType = TensorSupplyType.Auto,
        seed: int = 0,
    ) -> None:
        if not isinstance(supply_type, TensorSupplyType):
            raise TypeError(
                f"tensor_supply_type must be a tilelang.profiler.TensorSupplyType, got {supply_type!r}"
            )
        self.kernel = kernel
        self.supply_type = supply_type
        self._rng = np.random.default_rng(seed)
        self._bench_inputs: dict[tuple, list] = {}
        self._on_gpu = bool(getattr(kernel, "_on_gpu", False))  # cuda kernels take torch tensors

    # -- inputs
    def _shape(self, param, constraints):
        shape = []
        for dim in param.shape:
            if isinstance(dim, int):
                shape.append(dim)
                continue
            if dim not in constraints:
                raise ValueError(
                    f"parameter '{param.name}' of kernel '{self.kernel.name}' has the symbolic "
                    f"dimension '{dim}'; give its size with dynamic_symbolic_constraints="
                    f"{{'{dim}': 1024}} or pass input_tensors"
                )
            shape.append(int(constraints[dim]))
        return tuple(shape)

    def _get_inputs(self, with_output=False, dynamic_symbolic_constraints=None):
        """Fresh inputs for the kernel's non-output parameters (all, with_output=True)."""
        constraints = dict(dynamic_symbolic_constraints or {})
        out = []
        for i, p in enumerate(self.kernel.params):
            if i in self.kernel.out_idx and not with_output:
                continue
            if not p.is_tensor:
                raise ValueError(
                    f"kernel '{self.kernel.name}' takes the scalar '{p.name}' ({p.dtype}); the "
                    "profiler only makes tensors, so pass input_tensors=[...]"
                )
            tensor = make_tensor(self._shape(p, constraints), p.dtype, self.supply_type, self._rng)
            out.append(_to_torch(tensor, p.dtype, "cuda") if self._on_gpu else tensor)
        return out

    # -- running
    @property
    def func(self) -> JITKernel:
        """The kernel, as TileLang's profiler names it (`profiler.do_bench(profiler.func)`)."""
        return self.kernel

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.kernel(*args, **kwargs)

    def run_once(
        self, func: Callable[..., Any] | None = None, input_tensors: Sequence[Any] | None = None
    ) -> Any:
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        return (func or self.kernel)(*ins)

    def assert_allclose(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        atol: float = 1e-2,
        rtol: float = 1e-2,
        max_mismatched_ratio: float = 0.01,
        dynamic_symbolic_constraints: dict[str, int] | None = None,
    ) -> None:
        """Runs the kernel and `reference_program` on the same inputs (the kernel's
        non-output parameters) and checks each output: at most `max_mismatched_ratio` of
        the elements may differ by more than atol + rtol * |reference|."""
        ins = (
            list(input_tensors)
            if input_tensors is not None
            else self._get_inputs(dynamic_symbolic_constraints=dynamic_symbolic_constraints)
        )
        if not self.kernel.out_idx:
            raise ValueError(
                f"kernel '{self.kernel.name}' has no outputs to compare; compile it with "
                "out_idx=[...] (or return T.empty tensors) so that it returns them"
            )
        got = _as_list(self.kernel(*ins))
        want = _as_list(_run_reference(reference_program, ins)[1])
        if len(got) != len(want):
            raise AssertionError(
                f"kernel '{self.kernel.name}' returned {len(got)} output(s) but the reference "
                f"returned {len(want)}"
            )
        names = [self.kernel.params[i].name for i in self.kernel.out_idx]
        for name, a, b in zip(names, got, want):
            _compare(name, _to_float64(a), _to_float64(b), atol, rtol, max_mismatched_ratio)

    def manual_assert_close(
        self,
        reference_program: Callable[..., Any],
        input_tensors: Sequence[Any] | None = None,
        manual_check_prog: Callable[[list, list], Any] | None = None,
    ) -> None:
        """Runs the kernel and `reference_program` on the same inputs and hands both
        results, as lists, to `manual_check_prog(outputs, ref_outputs)`, which raises
        (an AssertionError) when they do not agree."""
        if not callable(manual_check_prog):
            raise TypeError(
                "manual_assert_close: manual_check_prog must be callable as "
                f"check(outputs, ref_outputs), got {manual_check_prog!r}"
            )
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        want = _run_reference(reference_program, ins)[1]
        got = _as_list(self.kernel(*ins))
        want = [] if want is None else _as_list(want)
        if len(got) != len(want):
            raise AssertionError(
                f"kernel '{self.kernel.name}' returned {len(got)} output(s) but the reference "
                f"returned {len(want)}"
            )
        manual_check_prog(got, want)

    def do_bench(
        self,
        func: Callable[..., Any] | None = None,
        warmup: float = 25,
        rep: float = 100,
        n_warmup: int = 0,
        n_repeat: int = 0,
        input_tensors: Sequence[Any] | None = None,
        backend: str = "event",
        quantiles: Sequence[float] | None = None,
        return_mode: str = "mean",
        dynamic_symbolic_constraints: dict[str, int] | None = None,
        device: Any = None,
        early_stop_baseline: float | None = None,
    ) -> float | list[float]:
        """Milliseconds per call of the kernel, or of `func` called with the kernel's
        inputs. The kernel is timed with its outputs preallocated (no allocation).
        `device` and `early_stop_baseline` as in tilelang.profiler.do_bench."""
        if input_tensors is not None:
            args = list(input_tensors)
        else:
            key = (func is None, tuple(sorted((dynamic_symbolic_constraints or {}).items())))
            if key not in self._bench_inputs:
                self._bench_inputs[key] = self._get_inputs(
                    with_output=func is None,
                    dynamic_symbolic_constraints=dynamic_symbolic_constraints,
                )
            args = self._bench_inputs[key]
        if func is None:
            run = self.kernel.run
            call = lambda: run(args)
        else:
            args, _ = _run_reference(func, args)
            call = lambda: func(*args)
        return do_bench(
            call,
            warmup=warmup,
            rep=rep,
            _n_warmup=n_warmup,
            _n_repeat=n_repeat,
            quantiles=quantiles,
            backend=backend,
            return_mode=return_mode,
            device=device if device is not None else ("cuda" if self._on_gpu else "cpu"),
            early_stop_baseline=early_stop_baseline,
        )


def _run_reference(reference_program, ins):
    """Runs `reference_program` on the kernel's inputs; returns (the inputs it took, its
    result). On the cpu target and the emulators those inputs are numpy arrays; when the
    program fails on them and torch is installed, it gets the same values as CPU torch
    tensors. TileLang's profiler always hands torch tensors, so references written for
    it (`torch.matmul(A, B)`, `A.float()`) run unchanged, and references written for
    numpy keep their arrays."""
    try:
        return ins, reference_program(*ins)
    except Exception as numpy_error:
        if not any(isinstance(x, np.ndarray) for x in ins):
            raise
        try:
            import torch  # noqa: F401
        except ImportError:
            raise numpy_error from None
        ins = [_to_torch(x) if isinstance(x, np.ndarray) else x for x in ins]
        return ins, reference_program(*ins)


def _to_torch(array, dtype=None, device="cpu"):
    """A numpy array as a torch tensor of `dtype` (default: the array's) on `device`
    (ml_dtypes values, which torch cannot read, go through float32)."""
    import torch

    from tilelang.language.dtypes import _ML_DTYPES_NAMES
    from tilelang.language.dtypes import dtype as DType

    if array.dtype.name in _ML_DTYPES_NAMES:
        host = torch.from_numpy(array.astype(np.float32))
        return host.to(device=device).to(DType(dtype or array.dtype.name).as_torch())
    return torch.from_numpy(np.ascontiguousarray(array)).to(device=device)


def _as_list(value):
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value]


def _to_float64(x):
    if hasattr(x, "detach"):  # torch
        x = x.detach().cpu().float().numpy()
    x = np.asarray(x)
    if x.dtype.kind in "fiub":
        return x.astype(np.float64)
    return x.astype(np.float32).astype(np.float64)  # ml_dtypes (bfloat16, fp8)


def _compare(name, got, want, atol, rtol, max_ratio):
    if got.shape != want.shape:
        raise AssertionError(
            f"output '{name}': the kernel gave shape {got.shape}, the reference {want.shape}"
        )
    close = np.abs(got - want) <= atol + rtol * np.abs(want)
    close |= np.isnan(got) & np.isnan(want)
    close |= np.isinf(got) & (got == want)
    bad = int(close.size - np.count_nonzero(close))
    if bad <= max_ratio * close.size:
        return
    err = np.where(close, 0.0, np.abs(got - want))
    err = np.nan_to_num(err, nan=np.inf)
    worst = np.unravel_index(int(np.argmax(err)), err.shape)
    raise AssertionError(
        f"output '{name}': {bad} of {close.size} elements ({bad / close.size:.2%}) differ by more "
        f"than atol={atol} + rtol={rtol} * |reference| (allowed: {max_ratio:.2%}); worst at index "
        f"{tuple(int(i) for i in worst)}: kernel {got[worst]!r}, reference {want[worst]!r}"
    )
