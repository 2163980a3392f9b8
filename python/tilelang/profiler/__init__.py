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

import enum
import statistics
import sys
import time

import numpy as np

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
_CPU_BACKENDS = ("event",)
_CUDA_BACKENDS = ("event", "cudagraph")
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


def _counts(estimate_ms, warmup, rep, n_warmup, n_repeat):
    estimate_ms = max(estimate_ms, 1e-6)
    return (
        n_warmup if n_warmup > 0 else max(1, int(warmup / estimate_ms)),
        n_repeat if n_repeat > 0 else max(1, int(rep / estimate_ms)),
    )


def _bench_cuda_event(fn, warmup, rep, n_warmup, n_repeat, fast_flush):
    import torch

    flush_buffer = None
    if fast_flush:
        flush_buffer = torch.empty(_L2_FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")
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
    fn,
    warmup=25,
    rep=100,
    _n_warmup=0,
    _n_repeat=0,
    quantiles=None,
    fast_flush=True,
    backend="event",
    return_mode="mean",
    device=None,
):
    """Runtime of `fn()` in milliseconds. `warmup`/`rep` are time budgets in ms (the
    number of calls comes from a first estimate); `_n_warmup`/`_n_repeat` > 0 fix the
    counts instead. With `quantiles` a list of those quantiles is returned, else the
    `return_mode` statistic of the per-call times.

    `device` is "cuda" (GPU time on the current stream: backend "event" or
    "cudagraph") or "cpu" (wall clock); by default "cuda" once the process uses CUDA
    through torch, else "cpu"."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}"
        )
    if device is None:
        device = "cuda" if _cuda_in_use() else "cpu"
    if device == "cuda":
        if backend not in _CUDA_BACKENDS:
            raise ValueError(
                f"unknown do_bench backend '{backend}'; on CUDA use one of "
                f"{', '.join(repr(b) for b in _CUDA_BACKENDS)}"
            )
        if backend == "cudagraph":
            times = _bench_cuda_graph(fn, rep, _n_repeat)
        else:
            times = _bench_cuda_event(fn, warmup, rep, _n_warmup, _n_repeat, fast_flush)
        return _summarize(times, quantiles, return_mode)
    if device != "cpu":
        raise ValueError(f"do_bench device must be 'cuda' or 'cpu', got {device!r}")
    if backend not in _CPU_BACKENDS:
        raise ValueError(
            f"do_bench backend '{backend}' needs a CUDA device; on the cpu target use "
            "backend='event' (wall-clock timing)"
        )
    flush = _flush_cache if fast_flush else (lambda: None)
    fn()  # compile / first-touch outside the measurement
    # The estimate includes the flush, so that the budgets bound the wall time.
    start = time.perf_counter()
    for _ in range(5):
        flush()
        fn()
    estimate_ms = (time.perf_counter() - start) * 1e3 / 5
    n_warmup, n_repeat = _counts(estimate_ms, warmup, rep, _n_warmup, _n_repeat)
    for _ in range(n_warmup):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(n_repeat):
        flush()
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
    return _summarize(times, quantiles, return_mode)


# ---- inputs


def _numpy_dtype(name):
    from tilelang.language.dtypes import dtype as DType

    return DType(name).as_numpy()


def make_tensor(shape, dtype, supply_type, rng):
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
        if supply_type in (TensorSupplyType.Integer, TensorSupplyType.Auto):
            info = np.iinfo(np_dtype)
            low, high = max(info.min, -128), min(info.max, 127)
            return rng.integers(low, high + 1, size=shape).astype(np_dtype)
        supply_type = TensorSupplyType.Integer
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

    def __init__(self, kernel, supply_type=TensorSupplyType.Auto, seed=0):
        if not isinstance(supply_type, TensorSupplyType):
            raise TypeError(
                f"tensor_supply_type must be a tilelang.profiler.TensorSupplyType, got {supply_type!r}"
            )
        self.kernel = kernel
        self.supply_type = supply_type
        self._rng = np.random.default_rng(seed)
        self._bench_inputs = {}
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
    def run_once(self, func=None, input_tensors=None):
        ins = list(input_tensors) if input_tensors is not None else self._get_inputs()
        return (func or self.kernel)(*ins)

    def assert_allclose(
        self,
        reference_program,
        input_tensors=None,
        atol=1e-2,
        rtol=1e-2,
        max_mismatched_ratio=0.01,
        dynamic_symbolic_constraints=None,
    ):
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

    def do_bench(
        self,
        func=None,
        warmup=25,
        rep=100,
        n_warmup=0,
        n_repeat=0,
        input_tensors=None,
        backend="event",
        quantiles=None,
        return_mode="mean",
        dynamic_symbolic_constraints=None,
    ):
        """Milliseconds per call of the kernel, or of `func` called with the kernel's
        inputs. The kernel is timed with its outputs preallocated (no allocation)."""
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
            device="cuda" if self._on_gpu else "cpu",
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
