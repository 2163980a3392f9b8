"""Compile speed of the quickstart GEMM: time from the Python kernel to generated
source (frontend tracing + lowering passes + codegen; the host compiler is
excluded). Target: under 50 ms. Then the whole cpu-target compile (host compiler
included, to a loaded kernel), with the disk cache and its precompiled tl_cpu.h
against the cache off (the header parsed every time), interleaved. Prints the tables
and appends them to bench/RESULTS.md.

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


HOST_REPEATS = 5


def host_compile():
    """Median ms of a whole cpu-target tilelang.compile of a new shape, with the disk
    cache on (its prelude entry warm: tl_cpu.h precompiled) and off (no entries at all),
    one after the other in each round."""
    import tempfile

    on, off = [], []
    with tempfile.TemporaryDirectory() as cache:
        os.environ["TILELANG_CACHE_DIR"] = cache
        tilelang.compile(matmul(512, 512, 512), target="cpu")  # builds the prelude entry
        for rep in range(HOST_REPEATS):
            for cached, times in ((True, on), (False, off)):
                func = matmul(520 + 8 * rep + (4 if cached else 0), 512, 512)  # never a kernel hit
                if not cached:
                    tilelang.disable_cache()
                try:
                    start = time.perf_counter()
                    tilelang.compile(func, target="cpu")
                    times.append((time.perf_counter() - start) * 1e3)
                finally:
                    tilelang.enable_cache()
    return statistics.median(on), statistics.median(off)


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
    with_header, without = host_compile()
    compiler = "g++" if tilelang._C.host_compiler_is_gcc() else "not g++: no precompiled header"
    caption = (
        f"whole cpu-target compile of the same kernel (Python -> loaded kernel, host compiler "
        f"{compiler}), median of {HOST_REPEATS} interleaved rounds"
    )
    lines += [
        "",
        caption,
        "",
        "| compile | ours (ms) | cache off, header parsed (ms) | ratio |",
        "| --- | --- | --- | --- |",
        f"| tilelang.compile, target cpu | {with_header:.0f} | {without:.0f} | {without / with_header:.2f} |",
    ]
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
