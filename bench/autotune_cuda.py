"""@tilelang.autotune on the cuda target: a float16 GEMM (the kernel body of
bench/gemm_cuda.py without its ReLU) and examples/flash_attention.py, each searched over
at least 16 configs, with the wall time of the whole search. This is what issue 9 asks
the H200 to show.

Each search starts cold (a fresh, empty TILELANG_CACHE_DIR: every config is compiled in
worker processes, checked against a float32 torch reference and timed); then a fresh
process repeats the same call, which must return the same config from the result cache
without benchmarking. The torch column times torch's own float16 kernels (torch.matmul,
scaled_dot_product_attention) on the same inputs. Appends the table to bench/RESULTS.md.

With --devices all (or --devices 0,1,...) each search instead runs cold twice, on one
device and then on those devices (@tilelang.autotune(devices=...): one benchmark
worker process per GPU, the fastest configs timed again on the first), and the table
gives both search times. On the cpu target a device is a CPU core.

Run on a GPU machine: python bench/autotune_cuda.py   (under a minute on the H200)
                      python bench/autotune_cuda.py --devices all
Smoke test on the CPU: python bench/autotune_cuda.py --target cpu   (tiny shapes, numpy
references, nothing appended; --target emulate runs the sm_90 CUDA code of every config
in the CUDA emulator instead, a few minutes on two cores).
"""

import argparse
import datetime
import functools
import importlib
import json
import logging
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import tilelang
import tilelang.language as T
from results import commit
from tilelang.profiler import do_bench

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
TARGETS = {"cuda": "cuda", "cpu": "cpu", "emulate": "cuda -arch=sm_90 -emulate"}
WARMUP_MS, REP_MS, COMPILE_TIMEOUT_S = 3, 10, 60

# (block_M, block_N, threads) x block_K x num_stages, all with an 8-block swizzle panel,
# plus two without it. Shared memory is stages * (block_M + block_N) * block_K * 2 bytes,
# at most 196 KiB here; no more than 128 float32 accumulators per thread.
GEMM_CONFIGS = [
    {"block_M": bm, "block_N": bn, "block_K": bk, "threads": th, "num_stages": st, "panel": 8}
    for bm, bn, th in ((128, 128, 128), (128, 128, 256), (128, 256, 256), (256, 128, 256))
    for bk in (32, 64)
    for st in (2, 3, 4)
] + [
    {"block_M": 128, "block_N": 128, "block_K": 32, "threads": 128, "num_stages": 3, "panel": 0},
    {"block_M": 128, "block_N": 256, "block_K": 64, "threads": 256, "num_stages": 3, "panel": 0},
]
ATTENTION_CONFIGS = [
    {"block_M": bm, "block_N": bn, "threads": th, "num_stages": st}
    for bm in (64, 128)
    for bn in (32, 64, 128)
    for th in (128, 256)
    for st in (1, 2)
]

# Problem sizes: (M, N, K) and non-causal attention (batch, heads, seq_len, dim).
GEMM_SHAPE = {"cuda": (4096, 4096, 4096), "small": (256, 256, 128)}
ATTENTION_SHAPE = {"cuda": (4, 16, 2048, 64), "small": (1, 2, 128, 64)}


def gemm(M, N, K, block_M=128, block_N=128, block_K=32, threads=128, num_stages=3, panel=0):
    """C = A @ B in float16 with float32 accumulation; `panel` > 0 turns on T.use_swizzle."""
    dtype, accum_dtype = "float16", "float32"

    @T.prim_func
    def main(
        A: T.Tensor((M, K), dtype),
        B: T.Tensor((K, N), dtype),
        C: T.Tensor((M, N), dtype),
    ):
        with T.Kernel(T.ceildiv(N, block_N), T.ceildiv(M, block_M), threads=threads) as (bx, by):
            A_shared = T.alloc_shared((block_M, block_K), dtype)
            B_shared = T.alloc_shared((block_K, block_N), dtype)
            C_local = T.alloc_fragment((block_M, block_N), accum_dtype)
            if panel:
                T.use_swizzle(panel_size=panel)
            T.clear(C_local)
            for ko in T.Pipelined(T.ceildiv(K, block_K), num_stages=num_stages):
                T.copy(A[by * block_M, ko * block_K], A_shared)
                T.copy(B[ko * block_K, bx * block_N], B_shared)
                T.gemm(A_shared, B_shared, C_local)
            T.copy(C_local, C[by * block_M, bx * block_N])

    return main


# ---- references in higher precision: float32 torch on cuda, float64 numpy elsewhere


def gemm_ref_torch(A, B):
    return A.float() @ B.float()


def gemm_ref_numpy(A, B):
    return A.astype(np.float64) @ B.astype(np.float64)


def attention_ref_torch(Q, K, V):
    from torch.nn.functional import scaled_dot_product_attention

    q, k, v = (t.float().transpose(1, 2) for t in (Q, K, V))  # [batch, heads, seq, dim]
    return scaled_dot_product_attention(q, k, v).transpose(1, 2)


def attention_ref_numpy(Q, K, V):
    return flash_attention_module().reference(Q, K, V, is_causal=False)


def flash_attention_module():
    if EXAMPLES not in sys.path:
        sys.path.insert(0, EXAMPLES)
    return importlib.import_module("flash_attention")


# ---- one search


def tuned(jit_fn, configs, target, ref_prog, rtol, atol, devices=None):
    """`jit_fn` under @tilelang.autotune, compiled for `target`, benchmarked on `devices`."""
    fn = tilelang.autotune(
        configs=configs,
        warmup=WARMUP_MS,
        rep=REP_MS,
        timeout=COMPILE_TIMEOUT_S,
        ref_prog=ref_prog,
        rtol=rtol,
        atol=atol,
        cache_input_tensors=True,
        devices=devices,
    )(jit_fn)
    fn.tuner.set_compile_args(target=target)
    return fn


def searches(mode, devices=None):
    """[(name, problem text, tuned function, its arguments, FLOPs of one call,
    None or a maker of torch's float16 version to time)] for --target `mode`, the
    searches benchmarking on `devices` (None: this process's device)."""
    on_gpu = mode == "cuda"
    size = "cuda" if on_gpu else "small"
    target = TARGETS[mode]
    M, N, K = GEMM_SHAPE[size]
    gemm_fn = tuned(
        tilelang.jit(out_idx=[-1])(gemm),
        GEMM_CONFIGS,
        target,
        gemm_ref_torch if on_gpu else gemm_ref_numpy,
        rtol=2e-2,
        atol=5e-2,
        devices=devices,
    )
    fa = flash_attention_module().flash_attention
    b, h, s, d = ATTENTION_SHAPE[size]
    fa_fn = tuned(
        fa,
        ATTENTION_CONFIGS,
        target,
        attention_ref_torch if on_gpu else attention_ref_numpy,
        rtol=1e-2,
        atol=2e-3,  # outputs are means of many values in [-1, 1): ~0.01 at seq 2048
        devices=devices,
    )
    return [
        (
            "gemm",
            f"{M}x{N}x{K} float16",
            gemm_fn,
            (M, N, K),
            2 * M * N * K,
            functools.partial(torch_gemm, M, N, K) if on_gpu else None,
        ),
        (
            "flash_attention",
            f"batch {b} heads {h} seq {s} dim {d} float16 non-causal",
            fa_fn,
            (b, h, s, d, False),
            4 * b * h * s * s * d,
            functools.partial(torch_attention, b, h, s, d) if on_gpu else None,
        ),
    ]


def torch_gemm(M, N, K):
    import torch

    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    return lambda: torch.matmul(a, b)


def torch_attention(b, h, s, d):
    import torch
    from torch.nn.functional import scaled_dot_product_attention

    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    return lambda: scaled_dot_product_attention(q, k, v)


def summarize(result, n):
    """Counts of a search from its AutotuneResult (failure reasons name the step)."""
    reasons = list(result.failures.values())
    compile_failed = sum(r.startswith("compile error") for r in reasons)
    timed_out = sum(r.startswith("compile timed out") for r in reasons)
    return {
        "configs": n,
        "compiled": n - compile_failed - timed_out,
        "compile_failed": compile_failed,
        "timed_out": timed_out,
        "wrong": sum(r.startswith("wrong result") for r in reasons),
        "run_failed": sum(r.startswith("benchmark failed") for r in reasons),
        "timed": len(result.timings),
    }


def run_cached(mode, names):
    """Child process: repeat the searches named; the result cache should answer them."""
    for name, _, fn, args, _, _ in searches(mode):
        if name not in names:
            continue
        start = time.perf_counter()
        try:
            result = fn.get_tuner_result(*args)
        except Exception as exc:  # noqa: BLE001 - reported in the table
            print(json.dumps({"name": name, "error": str(exc).splitlines()[0]}), flush=True)
            continue
        report = {
            "name": name,
            "wall_s": time.perf_counter() - start,
            "from_cache": result.from_cache,
            "config": result.config,
        }
        print(json.dumps(report), flush=True)


def cached_in_fresh_process(mode, names, cache_dir):
    """{name: child's report} from a fresh process, plus that process's wall time."""
    if not names:
        return {}, 0.0
    env = dict(os.environ, TILELANG_CACHE_DIR=cache_dir)
    start = time.perf_counter()
    command = [sys.executable, os.path.abspath(__file__), "--target", mode]
    out = subprocess.run(
        [*command, "--cached-only", ",".join(names)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    wall = time.perf_counter() - start
    if out.returncode != 0:
        print(f"cached re-run failed (exit {out.returncode}):\n{out.stderr[-3000:]}")
        return {}, wall
    reports = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
    return {r["name"]: r for r in reports}, wall


# ---- report


def device_name(mode):
    if mode == "cuda":
        import torch

        return torch.cuda.get_device_name()
    return f"{platform.machine()} ({TARGETS[mode]} target, smoke shapes)"


def describe(config):
    return ", ".join(f"{k}={v}" for k, v in config.items())


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


def cold_search(name, problem, fn, fn_args, flops, baseline):
    """Runs one search in this process; returns its row of the table."""
    n = len(fn.tuner.configs)
    print(f"== {name} {problem}: cold search over {n} configs", flush=True)
    row = {"name": name, "problem": problem, "configs": n, "result": None, "notes": []}
    start = time.perf_counter()
    try:
        result = fn.get_tuner_result(*fn_args)
    except Exception as exc:  # noqa: BLE001 - every config failed: still report
        row["wall_s"] = time.perf_counter() - start
        print(f"{name}: search failed after {row['wall_s']:.1f} s: {exc}")
        first, *per_config = str(exc).splitlines()
        row["notes"].append(f"- {name}: {first}")
        row["notes"].extend(f"  - {line.strip()[:200]}" for line in per_config)
        return row
    row["wall_s"] = time.perf_counter() - start
    row["result"], row["counts"] = result, summarize(result, n)
    row["tflops"] = tflops(flops, result.latency)
    row["torch_tflops"] = None
    if baseline is not None:
        torch_ms = do_bench(baseline(), warmup=WARMUP_MS, rep=REP_MS, device="cuda")
        row["torch_tflops"] = tflops(flops, torch_ms)
    print(f"{name}: best {describe(result.config)}: {result.latency:.4f} ms")
    print(f"{name}: {row['counts']}; cold search {row['wall_s']:.2f} s")
    for config, ms in sorted(result.timings.items(), key=lambda kv: kv[1]):
        print(f"    {ms:9.4f} ms  {config}")
    for config, reason in result.failures.items():
        row["notes"].append(f"- {name} {config}: {reason[:200]}")
    return row


def table_line(row, again):
    """One line of the table; `again` is the fresh process's report (or None)."""
    result = row["result"]
    if again is None:
        warm = "n/a"
    elif "error" in again:
        warm = f"failed: {again['error'][:120]}"
    elif result is not None and (not again["from_cache"] or again["config"] != result.config):
        warm = f"{again['wall_s']:.3f} (NOT from the cache: {again['config']})"
    else:
        warm = f"{again['wall_s']:.3f}"
    head = f"| {row['name']} | {row['problem']} |"
    if result is None:
        return f"{head} {row['configs']} / all failed | | | | | {row['wall_s']:.1f} | {warm} |"
    c = row["counts"]
    counts = (
        f"{c['configs']} / {c['compiled']} / {c['compile_failed'] + c['timed_out']} / "
        f"{c['wrong'] + c['run_failed']} / {c['timed']}"
    )
    torch_text = "" if row["torch_tflops"] is None else f"{row['torch_tflops']:.1f}"
    return (
        f"{head} {counts} | {describe(result.config)} | {result.latency:.4f} | "
        f"{row['tflops']:.1f} | {torch_text} | {row['wall_s']:.1f} | {warm} |"
    )


def report(mode, rows, cached, child_wall):
    reference = "a float32 torch" if mode == "cuda" else "a float64 numpy"
    baseline = (
        " torch: torch.matmul / scaled_dot_product_attention in float16, same run."
        if mode == "cuda"
        else ""
    )
    notes = [note for row in rows for note in row["notes"]]
    return "\n".join(
        [
            (
                f"### autotune_cuda — {datetime.date.today()} — commit {commit()} — "
                f"{device_name(mode)}"
            ),
            "",
            (
                "@tilelang.autotune searches, cold (empty TILELANG_CACHE_DIR: every config "
                f"compiled in worker processes, checked against {reference} reference, timed "
                f"with warmup={WARMUP_MS} ms rep={REP_MS} ms), then the same call in a fresh "
                "process (result-cache hit, no benchmarking; that process ran "
                f"{child_wall:.1f} s in all, imports included).{baseline}"
            ),
            "",
            (
                "| kernel | problem | configs / compiled / compile failed / wrong or failed "
                "/ timed | best config | best (ms) | TFLOP/s | torch TFLOP/s | cold search (s) "
                "| cached search, fresh process (s) |"
            ),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *(table_line(row, cached.get(row["name"])) for row in rows),
            *([""] + notes if notes else []),
        ]
    )


def parse_devices(text):
    if text == "all":
        return "all"
    try:
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f'--devices: expected "all" or device indices like 0,1,2, given {text!r}'
        ) from None


def compare_devices(mode, devices):
    """Each search cold on one device, then cold on `devices`: the table of both."""
    from tilelang.autotuner import devices as device_info

    rows = []
    for label, setting in (("1", None), (str(devices), devices)):
        for name, problem, fn, fn_args, _, _ in searches(mode, setting):
            cache_dir = tempfile.mkdtemp(prefix="tl-autotune-bench-")
            os.environ["TILELANG_CACHE_DIR"] = cache_dir  # cold, each run
            n = len(fn.tuner.configs)
            print(f"== {name} {problem}: cold search over {n} configs, devices {label}", flush=True)
            start = time.perf_counter()
            try:
                result = fn.get_tuner_result(*fn_args)
                wall = time.perf_counter() - start
                rows.append((name, problem, label, n, wall, result, None))
                print(
                    f"{name}: best {describe(result.config)}: {result.latency:.4f} ms; {wall:.1f} s"
                )
            except Exception as exc:  # noqa: BLE001 - reported in the table
                rows.append((name, problem, label, n, time.perf_counter() - start, None, exc))
            finally:
                shutil.rmtree(cache_dir, ignore_errors=True)
    target = TARGETS[mode]
    count = len(device_info.resolve(devices, target, "bench"))
    lines = [
        (
            f"### autotune_cuda --devices {devices} — {datetime.date.today()} — commit "
            f"{commit()} — {device_name(mode)}, {count} device(s)"
        ),
        "",
        (
            "Each search cold (empty TILELANG_CACHE_DIR) on one device, then on "
            f"{count} (devices={devices!r}: one benchmark worker process per device, the 3 "
            "fastest configs timed again on the first); compiles in worker processes in both."
        ),
        "",
        "| kernel | problem | configs | devices | search (s) | best config | best (ms) | failed |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, problem, label, n, wall, result, exc in rows:
        if result is None:
            lines.append(f"| {name} | {problem} | {n} | {label} | {wall:.1f} | failed: {exc} | | |")
            continue
        lines.append(
            f"| {name} | {problem} | {n} | {label} | {wall:.1f} | {describe(result.config)} | "
            f"{result.latency:.4f} | {len(result.failures)} |"
        )
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", choices=sorted(TARGETS), default="cuda")
    parser.add_argument(
        "--devices",
        type=parse_devices,
        help='"all" or 0,1,...: compare each search on one device and on these',
    )
    parser.add_argument(
        "--no-append", action="store_true", help="print the table only (cuda target)"
    )
    parser.add_argument("--cached-only", metavar="NAMES", help=argparse.SUPPRESS)
    args = parser.parse_args()
    logging.basicConfig(format="%(message)s")
    logging.getLogger("tilelang").setLevel(logging.INFO)
    if args.cached_only:
        run_cached(args.target, args.cached_only.split(","))
        return
    if args.target == "cuda":
        import torch

        torch.cuda.init()  # outside the timed searches

    if args.devices is not None:
        table = compare_devices(args.target, args.devices)
        print(table)
        if args.target == "cuda" and not args.no_append:
            with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
                f.write(table + "\n\n")
        return

    cache_dir = tempfile.mkdtemp(prefix="tl-autotune-bench-")
    os.environ["TILELANG_CACHE_DIR"] = cache_dir  # cold: no kernels, no tuning results
    try:
        rows = [cold_search(*search) for search in searches(args.target)]
        print("== the same searches in a fresh process (result cache)", flush=True)
        tuned_names = [row["name"] for row in rows if row["result"] is not None]
        cached, child_wall = cached_in_fresh_process(args.target, tuned_names, cache_dir)
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
    table = report(args.target, rows, cached, child_wall)
    print(table)
    if args.target == "cuda" and not args.no_append:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(table + "\n\n")


if __name__ == "__main__":
    main()
