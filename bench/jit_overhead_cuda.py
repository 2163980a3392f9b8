"""JIT overhead on a CUDA GPU, all figures from one run:

(a) cold compile of the quickstart GEMM in a fresh process with an empty cache: the
    Python kernel traced, lowered, NVRTC-compiled, then loaded by a first call
    (torch's CUDA init and `import tilelang` are reported apart). Target <= 1.0 s.
(b) disk-cache hit in a fresh process, per kernel (tilelang.compile of a kernel whose
    entry is on disk; the module load at the first call reported apart). Target <= 5 ms.
(c) in-process cache hit (@tilelang.jit factory call; tilelang.compile memory layer).
    Target <= 5 us.
(d) host cost of calling a kernel with 3 torch CUDA tensors against a raw
    cuLaunchKernel of the same cubin (cuda-python when installed, else ctypes on
    libcuda; argument array prepared once) and against torch's own `c.add_(a)`:
    batches of calls timed on the host, A/B interleaved, medians. Targets: <= 1.5x
    raw, <= 1.0x add_. Reported apart: the same kernel with out_idx (the output
    allocated by torch.empty) against torch.add(a, b), which allocates too.

Prints a table and appends it to bench/RESULTS.md (date, commit, GPU name).
Run on a GPU machine: PYTHONPATH=<tilelang> python bench/jit_overhead_cuda.py
"""

import ctypes
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

from results import commit

HERE = os.path.dirname(os.path.abspath(__file__))
ROUNDS, CALLS = 31, 200
N, BLOCK = 1 << 16, 256
COLD_RUNS, DISK_RUNS = 3, 5
DISK_SHAPES = [(1024, 1024, 1024), (2048, 1024, 512), (512, 512, 512), (1024, 2048, 256)]

# ---- (a) and (b): fresh processes

COLD = r"""
import sys, time
t0 = time.perf_counter()
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
t1 = time.perf_counter()
import tilelang
sys.path.insert(0, sys.argv[1])
from compile_speed import matmul
t2 = time.perf_counter()
func = matmul(1024, 1024, 1024)
t3 = time.perf_counter()
kernel = tilelang.compile(func, target="cuda")
t4 = time.perf_counter()
a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
b = torch.randn(1024, 1024, device="cuda", dtype=torch.float16)
c = torch.empty(1024, 1024, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
t5 = time.perf_counter()
kernel(a, b, c)
torch.cuda.synchronize()
t6 = time.perf_counter()
assert tilelang._C.compile_count() == 1, "expected exactly one real compilation"
ref = torch.relu(a.float() @ b.float())
torch.testing.assert_close(c.float(), ref, rtol=2e-2, atol=2e-1)
ms = lambda x, y: (y - x) * 1e3
print(ms(t0, t1), ms(t1, t2), ms(t2, t3), ms(t3, t4), ms(t5, t6))
"""

DISK = r"""
import sys, time, statistics
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
import tilelang
sys.path.insert(0, sys.argv[1])
from compile_speed import matmul
shapes = eval(sys.argv[2])
funcs = [matmul(*s) for s in shapes]
compile_ms, load_ms = [], []
for (m, n, k), f in zip(shapes, funcs):
    t0 = time.perf_counter()
    kernel = tilelang.compile(f, target="cuda")
    t1 = time.perf_counter()
    a = torch.randn(m, k, device="cuda", dtype=torch.float16)
    b = torch.randn(k, n, device="cuda", dtype=torch.float16)
    c = torch.empty(m, n, device="cuda", dtype=torch.float16)
    torch.cuda.synchronize()
    t2 = time.perf_counter()
    kernel(a, b, c)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    compile_ms.append((t1 - t0) * 1e3)
    load_ms.append((t3 - t2) * 1e3)
assert tilelang._C.compile_count() == 0, "expected disk-cache hits only"
print(statistics.median(compile_ms), statistics.median(load_ms))
"""


def fresh_process(code, cache_dir, *args):
    env = dict(os.environ, TILELANG_CACHE_DIR=cache_dir)
    out = subprocess.run(
        [sys.executable, "-c", code, HERE, *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise RuntimeError(f"benchmark subprocess failed:\n{out.stdout}\n{out.stderr}")
    return [float(x) for x in out.stdout.split()]


def cold_compile():
    rows = []
    for _ in range(COLD_RUNS):
        with tempfile.TemporaryDirectory(prefix="tl-bench-cold-") as cache_dir:
            rows.append(fresh_process(COLD, cache_dir))
    return [statistics.median(col) for col in zip(*rows)]


def disk_hits():
    with tempfile.TemporaryDirectory(prefix="tl-bench-disk-") as cache_dir:
        fill = (
            "import sys, tilelang\nsys.path.insert(0, sys.argv[1])\n"
            "from compile_speed import matmul\n"
            "for s in eval(sys.argv[2]): tilelang.compile(matmul(*s), target='cuda')\n"
        )
        fresh_process(fill, cache_dir, repr(DISK_SHAPES))
        rows = [fresh_process(DISK, cache_dir, repr(DISK_SHAPES)) for _ in range(DISK_RUNS)]
    return [statistics.median(col) for col in zip(*rows)]


# ---- (c) and (d): this process


def interleaved(fns, calls=CALLS, rounds=ROUNDS, sync=None):
    """Medians of per-call microseconds of each fn, measured in alternation; the
    device is drained (untimed) before each batch so that queues never fill."""
    times = [[] for _ in fns]
    for _ in range(rounds):
        for slot, fn in enumerate(fns):
            if sync:
                sync()
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            times[slot].append((time.perf_counter() - start) / calls * 1e6)
    if sync:
        sync()
    return [statistics.median(t) for t in times]


def read_meta(artifact_dir):
    meta = {}
    with open(os.path.join(artifact_dir, "meta.txt")) as f:
        for line in f:
            key, _, value = line.strip().partition(" ")
            meta[key] = value
    with open(os.path.join(artifact_dir, "kernel.cubin"), "rb") as f:
        return f.read(), meta["entry"], int(meta["shared_bytes"])


def raw_launcher_ctypes(cubin, entry, shared, grid, block, ptrs, stream):
    lib = ctypes.CDLL("libcuda.so.1")

    def check(r, what):
        if r != 0:
            raise RuntimeError(f"{what} failed with CUresult {r}")

    ctx = ctypes.c_void_p()
    check(lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    if not ctx.value:
        raise RuntimeError(
            "no current CUDA context (torch should have made its primary one current)"
        )
    module, fn = ctypes.c_void_p(), ctypes.c_void_p()
    check(lib.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(cubin)), "cuModuleLoadData")
    check(lib.cuModuleGetFunction(ctypes.byref(fn), module, entry.encode()), "cuModuleGetFunction")
    lib.cuLaunchKernel.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [ctypes.c_void_p] * 3
    lib.cuLaunchKernel.restype = ctypes.c_int
    values = [ctypes.c_void_p(p) for p in ptrs]
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    launch = lib.cuLaunchKernel
    args = (fn, grid, 1, 1, block, 1, 1, shared, stream, ctypes.addressof(params), None)

    def call():
        launch(*args)

    call.keep = (values, params, module)
    return call


def raw_launcher_cuda_python(cubin, entry, shared, grid, block, ptrs, stream):
    try:
        from cuda.bindings import driver as cu
    except ImportError:
        from cuda import cuda as cu
    err, module = cu.cuModuleLoadData(cubin)
    if int(err) != 0:
        raise RuntimeError(f"cuModuleLoadData: {err}")
    err, fn = cu.cuModuleGetFunction(module, entry.encode())
    if int(err) != 0:
        raise RuntimeError(f"cuModuleGetFunction: {err}")
    values = [ctypes.c_void_p(p) for p in ptrs]
    params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
    address = ctypes.addressof(params)
    hstream = cu.CUstream(stream)
    launch = cu.cuLaunchKernel

    def call():
        launch(fn, grid, 1, 1, block, 1, 1, shared, hstream, address, 0)

    call.keep = (values, params, module)
    return call


def host_costs(torch, tilelang, T):
    @T.prim_func
    def add3(
        A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32"), C: T.Tensor((N,), "float32")
    ):
        with T.Kernel(N // BLOCK, threads=BLOCK) as bx:
            for i in T.Parallel(BLOCK):
                C[bx * BLOCK + i] = A[bx * BLOCK + i] + B[bx * BLOCK + i]

    kernel = tilelang.compile(add3, target="cuda")
    a, b = torch.randn(N, device="cuda"), torch.randn(N, device="cuda")
    c = torch.empty_like(a)
    kernel(a, b, c)
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)

    cubin, entry, shared = read_meta(kernel.kernel.artifact_dir)
    stream = torch._C._cuda_getCurrentRawStream(a.get_device())
    ptrs = [a.data_ptr(), b.data_ptr(), c.data_ptr()]
    raw, raw_kind = None, None
    for kind, make in (("cuda-python", raw_launcher_cuda_python), ("ctypes", raw_launcher_ctypes)):
        try:
            candidate = make(cubin, entry, shared, N // BLOCK, BLOCK, ptrs, stream)
            c.zero_()
            candidate()
            torch.cuda.synchronize()
            torch.testing.assert_close(c, a + b)
            raw, raw_kind = candidate, kind
            break
        except Exception as e:  # noqa: BLE001 - report and try the next way
            print(f"raw launch through {kind} unavailable: {type(e).__name__}: {e}")
    if raw is None:
        raise RuntimeError(
            "no way to call cuLaunchKernel directly (neither cuda-python nor ctypes)"
        )

    allocating = tilelang.compile(add3, out_idx=[-1], target="cuda")
    torch.testing.assert_close(allocating(a, b), a + b)
    native = kernel.kernel
    native_args = [a, b, c]
    fns = [
        lambda: kernel(a, b, c),
        raw,
        lambda: c.add_(a),
        lambda: native(native_args, stream),
        lambda: allocating(a, b),
        lambda: torch.add(a, b),
    ]
    times = interleaved(fns, sync=torch.cuda.synchronize)
    return times, raw_kind


def in_process_hits(tilelang, T):
    sys.path.insert(0, HERE)
    from compile_speed import matmul
    from tilelang.language.prim_func import PrimFunc

    @tilelang.jit(target="cuda")
    def factory(m=1024):
        return matmul(m, 1024, 1024)

    factory(1024)
    func = matmul(1024, 1024, 1024)
    first = tilelang.compile(func, target="cuda")
    assert tilelang.compile(func, target="cuda") is first, "the in-process hit did not hit"
    jit_us, compile_us, core_us = interleaved(
        [
            lambda: factory(1024),
            lambda: tilelang.compile(func, target="cuda"),
            lambda: tilelang.compile(PrimFunc(func.core), target="cuda"),
        ],
        calls=200,
        rounds=11,
    )
    return jit_us, compile_us, core_us


def tensor_route(torch):
    """How the runtime reads torch tensors in this torch build."""
    for name in ("__dlpack_c_exchange_api__", "__c_dlpack_exchange_api__"):
        if hasattr(torch.Tensor, name):
            return f"the DLPack C exchange API (torch.Tensor.{name})"
    return "__dlpack__ (this torch has no DLPack C exchange API)"


def main():
    import torch

    if not torch.cuda.is_available():
        print("jit_overhead_cuda: no CUDA device; nothing measured")
        return
    import tilelang
    import tilelang.language as T

    gpu = torch.cuda.get_device_name()
    with tempfile.TemporaryDirectory(prefix="tl-bench-cache-") as cache_dir:
        os.environ["TILELANG_CACHE_DIR"] = cache_dir
        (ours, raw_us, add_us, core_us, alloc_us, torch_add_us), raw_kind = host_costs(
            torch, tilelang, T
        )
        jit_us, compile_us, core_hit_us = in_process_hits(tilelang, T)
    torch_ms, import_ms, trace_ms, compile_ms, load_ms = cold_compile()
    cold_total = trace_ms + compile_ms + load_ms
    disk_ms, disk_load_ms = disk_hits()

    def row(what, value, unit, reference, ref_value):
        ratio = f"{value / ref_value:.2f}x" if ref_value else ""
        return f"| {what} | {value:.2f} {unit} | {reference} | {ratio} |"

    lines = [
        (
            f"### jit_overhead_cuda — {datetime.date.today()} — commit {commit()} — {gpu} "
            f"(torch {torch.__version__}, CUDA {torch.version.cuda})"
        ),
        "",
        (
            f"(d): medians of {ROUNDS} interleaved rounds of {CALLS} calls, float32[{N}]; "
            f"raw launch through {raw_kind}; torch tensors read through "
            f"{tensor_route(torch)}. (a): median of {COLD_RUNS} fresh processes; "
            f"(b): median of {DISK_RUNS} fresh processes x {len(DISK_SHAPES)} kernels."
        ),
        "",
        "| what | ours | reference | ratio ours/reference |",
        "| --- | --- | --- | --- |",
        row(
            "(a) cold compile, GEMM 1024³ → loaded cubin", cold_total, "ms", "target 1000 ms", 1000
        ),
        (
            f"|   (a) trace / compile+NVRTC / load+first call | {trace_ms:.1f} / {compile_ms:.1f} / "
            f"{load_ms:.1f} ms | | |"
        ),
        (
            f"|   (a) outside: torch CUDA init / import tilelang | {torch_ms:.0f} / {import_ms:.0f} ms "
            "| | |"
        ),
        row("(b) disk-cache hit, fresh process, per kernel", disk_ms, "ms", "target 5 ms", 5),
        f"|   (b) module load + first call | {disk_load_ms:.2f} ms | | |",
        row("(c) in-process hit: @tilelang.jit factory call", jit_us, "µs", "target 5 µs", 5),
        row("(c) in-process hit: tilelang.compile", compile_us, "µs", "target 5 µs", 5),
        f"|   (c) another PrimFunc, same IR (core memory layer) | {core_hit_us:.2f} µs | | |",
        row(
            "(d) kernel(a, b, c), 3 torch CUDA tensors",
            ours,
            "µs",
            f"raw cuLaunchKernel: {raw_us:.2f} µs (target ≤ 1.5x)",
            raw_us,
        ),
        row(
            "(d) kernel(a, b, c), 3 torch CUDA tensors",
            ours,
            "µs",
            f"torch c.add_(a): {add_us:.2f} µs (target ≤ 1.0x)",
            add_us,
        ),
        row(
            "(d) _C.Kernel call alone (no Python wrapper)",
            core_us,
            "µs",
            f"raw cuLaunchKernel: {raw_us:.2f} µs",
            raw_us,
        ),
        row(
            "(d) kernel(a, b) with out_idx (c from torch.empty)",
            alloc_us,
            "µs",
            f"torch.add(a, b): {torch_add_us:.2f} µs",
            torch_add_us,
        ),
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
        f.write("\n" + text)


if __name__ == "__main__":
    main()
