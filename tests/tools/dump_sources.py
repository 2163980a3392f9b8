"""Writes the generated source of every kernel that every Python example builds, and of
the benchmarks' kernels (bench/*.py, at the configurations they time), for each target
(cpu, cuda sm_80, cuda sm_90a, metal, metal 4), so that a change to the compiler can be
checked for what it does to generated code (`make dump-sources OUT=dir` runs it):

    python tests/tools/dump_sources.py OUT_BEFORE      # at the old commit
    python tests/tools/dump_sources.py OUT_AFTER       # at the new one
    diff -r OUT_BEFORE OUT_AFTER

Each example runs as it does in the tests (on the cpu target, checking its results);
every kernel it compiles is also lowered to source for each target, without building
it. A kernel a target refuses is written as the error's text. Files are
OUT/<example>/<index>_<kernel>.<target>.txt, the index counting the example's kernels
in the order it builds them (rebuilt kernels are written once more), and
OUT/bench_<script>/<case>.<target>.txt for the benchmarks' own kernel builders at the
configurations their tables time (the benchmarks that time an example's kernels are
covered by the example)."""

import argparse
import contextlib
import importlib.util
import io
import os
import pathlib
import sys

import tilelang
from tilelang import _C

ROOT = pathlib.Path(__file__).resolve().parents[2]
TARGETS = {
    "cpu": "cpu",
    "sm80": "cuda -arch=sm_80",
    "sm90a": "cuda -arch=sm_90a",
    "metal": "metal",
    "metal4": "metal -keys=metal4",
}


def dump_one(stem, func, pass_configs):
    """stem.<target>.txt for every target: the source, or the refusal's text. `func` is a
    T.prim_func (the benchmarks' builders) or its core PrimFunc (what the examples'
    compiles hand native_compile)."""
    core = getattr(func, "core", func)
    for name, t in TARGETS.items():
        try:
            target = tilelang.utils.target.determine_target(t)
            text = _C.generate_source(core, target, pass_configs)
        except Exception as e:  # noqa: BLE001 (a refusal is part of what is compared)
            text = f"{type(e).__name__}: {e}\n"
        (stem.parent / f"{stem.name}.{name}.txt").write_text(text)


def dump_examples(root, names):
    if str(ROOT / "examples") not in sys.path:
        sys.path.insert(0, str(ROOT / "examples"))  # examples import their siblings by name
    paths = sorted((ROOT / "examples").glob("*.py"))
    if names:
        paths = [q for q in paths if q.stem in names]
    jit_kernel = __import__("tilelang.jit.kernel", fromlist=["native_compile"])
    native_compile = jit_kernel.native_compile
    failed = []
    for path in paths:
        out = root / path.stem
        out.mkdir(parents=True, exist_ok=True)
        count = [0]

        def dump(func, target, pass_configs, compile_flags, out=out, count=count):
            count[0] += 1
            dump_one(out / f"{count[0]:03d}_{func.name}", func, pass_configs)
            return native_compile(func, target, pass_configs, compile_flags)

        jit_kernel.native_compile = dump
        spec = importlib.util.spec_from_file_location(f"dump_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                spec.loader.exec_module(module)
                module.main()
        except Exception as e:  # noqa: BLE001 (reported, and the next example runs)
            failed.append(f"{path.stem}: {type(e).__name__}: {e}")
        finally:
            jit_kernel.native_compile = native_compile
        print(f"{path.stem}: {count[0]} kernels", flush=True)
    return failed


def _gemm_cases():
    gemm = __import__("gemm_cuda")
    for path, configs in gemm.CONFIGS.items():
        for cfg in configs[:2]:
            for dtype in gemm.DTYPES:
                for epilogue in ("none", "bias_relu"):
                    func = gemm.matmul(
                        4096, 4096, 4096, *cfg[:5], dtype, panel=cfg[5],
                        shared_epilogue=path.endswith("+store"),
                        cluster=cfg[6] if len(cfg) > 6 else 1, epilogue=epilogue,
                    )  # fmt: skip
                    name = f"{path}_{'x'.join(map(str, cfg))}_{dtype}_{epilogue}"
                    yield name, func, gemm.PASS_CONFIGS.get(path, {})


def _memory_bound_cases():
    mb = __import__("memory_bound_cuda")
    for dtype, n in (mb.ADD_CASES[0], mb.ADD_CASES[-1]):
        for style, block, threads in mb.ADD_CONFIGS:
            func = mb.add_kernel(n, dtype, style, block, threads)
            yield f"add_{dtype}_{style}_{block}_{threads}", func, {}
    for op, m, n in mb.ROW_CASES[::2]:
        build = mb.softmax_kernel if op == "softmax" else mb.rms_norm_kernel
        for block_m, threads in mb.ROW_CONFIGS:
            yield f"{op}_{m}x{n}_{block_m}_{threads}", build(m, n, "float16", block_m, threads), {}


def _autotune_cases():
    at = __import__("autotune_cuda")
    m, n, k = at.GEMM_SHAPE["cuda"]
    for cfg in ((128, 128, 32, 128, 3), (128, 256, 64, 256, 3)):
        yield f"gemm_{'_'.join(map(str, cfg))}", at.gemm(m, n, k, *cfg), {}


def _sliced_gemm_cases():
    sg = __import__("sliced_gemm_cuda")
    seen = set()
    for cfg in sg.CONFIGS:
        for slices in (cfg[3], 1):  # the sliced kernel and its whole-tile twin
            key = (*cfg[:3], slices, *cfg[4:])
            if key not in seen:
                seen.add(key)
                func = sg.gemm.get_tir(4096, 4096, 4096, *key)
                yield f"gemm_{'x'.join(map(str, key))}", func, {}


def _gemm_sp_kmajor_cases():
    from gemm_sp import gemm_sp  # the example's kernel, B as [N, K] (bench --b-kmajor)

    for bm, bn, bk, stages, threads in ((128, 96, 128, 3, 256), (64, 160, 64, 3, 128)):
        func = gemm_sp.get_tir(
            4096, 4096, 4096, bm, bn, bk, stages, threads, out_dtype="float16", trans_B=True
        )
        yield f"kmajor_{bm}x{bn}x{bk}", func, {}


BENCH = {
    "gemm_cuda": _gemm_cases,
    "memory_bound_cuda": _memory_bound_cases,
    "autotune_cuda": _autotune_cases,
    "sliced_gemm_cuda": _sliced_gemm_cases,
    "gemm_sp_cuda": _gemm_sp_kmajor_cases,
}


def dump_bench(root):
    sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "examples")]
    for script, cases in BENCH.items():
        out = root / f"bench_{script}"
        out.mkdir(parents=True, exist_ok=True)
        count = 0
        for name, func, pass_configs in cases():
            dump_one(out / name, func, pass_configs)
            count += 1
        print(f"bench/{script}: {count} kernels", flush=True)


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.add_argument("out", type=pathlib.Path)
    p.add_argument("--examples", nargs="*", help="example names (default: every examples/*.py)")
    p.add_argument("--no-bench", action="store_true", help="the examples' kernels only")
    args = p.parse_args()
    os.environ["TILELANG_DEFAULT_TARGET"] = "cpu"
    failed = dump_examples(args.out, args.examples)
    if not args.no_bench and not args.examples:
        dump_bench(args.out)
    for f in failed:
        print("failed:", f, file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
