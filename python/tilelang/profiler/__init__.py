"""Measuring and checking kernels: `kernel.get_profiler()` returns a Profiler that makes
inputs (TensorSupplyType), compares the kernel with a reference program
(assert_allclose) and times it (do_bench); `do_bench(fn)` times any callable.

On the CPU target timing uses the wall clock (time.perf_counter) around each call,
after writing a buffer as large as the last-level cache so that every call starts
cold, as the GPU profiler flushes L2. `warmup` and `rep` are budgets in milliseconds,
turned into iteration counts from a first estimate, as in Triton and TileLang."""

import enum
import statistics
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
):
    """Runtime of `fn()` in milliseconds. `warmup`/`rep` are time budgets in ms (the
    number of calls comes from a first estimate); `_n_warmup`/`_n_repeat` > 0 fix the
    counts instead. With `quantiles` a list of those quantiles is returned, else the
    `return_mode` statistic of the per-call times."""
    if backend not in _CPU_BACKENDS:
        raise ValueError(
            f"do_bench backend '{backend}' needs a CUDA device; on the cpu target use "
            "backend='event' (wall-clock timing)"
        )
    if return_mode not in _RETURN_MODES:
        raise ValueError(
            f"return_mode must be one of {', '.join(_RETURN_MODES)}, got {return_mode!r}"
        )
    flush = _flush_cache if fast_flush else (lambda: None)
    fn()  # compile / first-touch outside the measurement
    # The estimate includes the flush, so that the budgets bound the wall time.
    start = time.perf_counter()
    for _ in range(5):
        flush()
        fn()
    estimate_ms = max((time.perf_counter() - start) * 1e3 / 5, 1e-6)
    n_warmup = _n_warmup if _n_warmup > 0 else max(1, int(warmup / estimate_ms))
    n_repeat = _n_repeat if _n_repeat > 0 else max(1, int(rep / estimate_ms))
    for _ in range(n_warmup):
        fn()
    times = []
    clock = time.perf_counter
    for _ in range(n_repeat):
        flush()
        t0 = clock()
        fn()
        times.append((clock() - t0) * 1e3)
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
            out.append(
                make_tensor(self._shape(p, constraints), p.dtype, self.supply_type, self._rng)
            )
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
        want = _as_list(reference_program(*ins))
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
        )


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
