"""Compile speed of the quickstart GEMM: time from the Python kernel to generated
source (frontend tracing + lowering passes + codegen; the host compiler is
excluded). Target: under 50 ms. Prints a table and appends it to bench/RESULTS.md.

Run: make bench   (or TILELANG_DEV_BUILD_DIR=build/dev PYTHONPATH=python python bench/compile_speed.py)
"""

import datetime
import importlib.util
import os
import platform
import statistics
import time

import tilelang
from results import commit

REPEATS = 30
TARGET_MS = 50.0


def _load_quickstart():
    path = os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "examples", "quickstart.py"
    )
    spec = importlib.util.spec_from_file_location("quickstart", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_QUICKSTART = _load_quickstart()


def matmul(M, N, K):
    """The quickstart's GEMM+ReLU kernel, traced (not compiled)."""
    return _QUICKSTART.matmul.get_tir(M, N, K, 128, 128, 32)


def measure():
    trace_ms, codegen_ms = [], []
    for rep in range(REPEATS):
        start = time.perf_counter()
        func = matmul(1024 + rep, 1024, 1024)  # a new shape each time: no cache can help
        traced = time.perf_counter()
        source = tilelang._C.generate_source(func.core, "cpu")
        done = time.perf_counter()
        assert "gemm_tile" in source
        trace_ms.append((traced - start) * 1e3)
        codegen_ms.append((done - traced) * 1e3)
    return statistics.median(trace_ms), statistics.median(codegen_ms)


def cold():
    """The first kernel of the process: includes parsing and rewriting the source."""
    start = time.perf_counter()
    func = matmul(1000, 1000, 1000)
    tilelang._C.generate_source(func.core, "cpu")
    return (time.perf_counter() - start) * 1e3


def main():
    first = cold()
    trace, codegen = measure()
    total = trace + codegen
    rows = [
        ("first kernel of the process (parse + rewrite + trace + codegen)", first),
        ("frontend (trace Python -> IR)", trace),
        ("passes + codegen (IR -> C++)", codegen),
        ("total, Python kernel -> source", total),
    ]
    lines = [
        (
            f"### compile_speed — {datetime.date.today()} — commit {commit()} — "
            f"{platform.processor() or platform.machine()} (cpu target, no GPU)"
        ),
        "",
        f"quickstart GEMM+ReLU 1024³ (128x128x32 tiles), median of {REPEATS}",
        "",
        "| step | ours (ms) | target (ms) | ratio target/ours |",
        "| --- | --- | --- | --- |",
    ]
    for name, ms in rows:
        timed = name.startswith(("total", "first"))
        tgt = f"{TARGET_MS:.0f}" if timed else ""
        ratio = f"{TARGET_MS / ms:.1f}x" if timed else ""
        lines.append(f"| {name} | {ms:.2f} | {tgt} | {ratio} |")
    table = "\n".join(lines)
    print(table)
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
    new = not os.path.exists(path)
    with open(path, "a") as f:
        if new:
            f.write(
                "# Benchmark results\n\nAppended by the scripts in bench/. Compare ratios "
                "from one run only.\n\n"
            )
        f.write(table + "\n\n")
    worst = max(total, first)
    print(
        f"{'OK' if worst < TARGET_MS else 'SLOWER THAN TARGET'}: {total:.2f} ms per kernel, "
        f"{first:.2f} ms for the first (target {TARGET_MS:.0f} ms)"
    )


if __name__ == "__main__":
    main()
