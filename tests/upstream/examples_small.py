"""Runs TileLang's repository examples, unchanged, at small sizes in the CUDA emulator:
each example's own main() builds its kernels, runs them and checks them against its
torch reference. Their test files call main() at full sizes, which take too long in
the emulator; this driver passes the smallest sizes each example's kernels accept.

    python tests/upstream/examples_small.py --source PATH [--arch sm_80|sm_90a] [--gpu]
                                            [--only NAME ...] [--out DIR] [--timeout S]

PATH is a checkout of TileLang's repository, the directory that holds `examples/`
(without --source the driver reads TILELANG_UPSTREAM_SRC). Every entry runs in its own
process with a time limit, torch's CUDA device moved to the CPU and CUDA kernels run in
the emulator of --arch (tests/upstream/torch_on_cpu.py, as tests/upstream/run.py does).
With --gpu they run on the machine's CUDA GPU instead (torch and kernels on the device;
--arch then names the GPU's arch, which picks the entries its tests would run), the
same sizes and checks: tests/gpu/run_on_gpu.sh's UPSTREAM_EXAMPLES=1.
An example without a main() runs what its __main__ block runs, with its module-level
sizes set after import. An entry passes only when its main() returns without an
exception, and the driver exits with 1 when one did not. Benchmarks that a
main() runs after its checks (tilelang.profiler.do_bench, Profiler.do_bench) time one
call instead of hundreds; kernels, inputs and reference checks are the example's own.
The table (entry, arguments, outcome, seconds) goes to stdout and DIR/examples_small.md.
"""

import argparse
import dataclasses
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent


@dataclasses.dataclass
class Entry:
    name: str  # unique; --only selects by it or by its family (the part before "/")
    path: str  # relative to examples/
    kwargs: dict
    argv: tuple = ()  # sys.argv[1:] while main() runs, for sizes read by argparse inside it
    archs: tuple = ("sm_80", "sm_90a")  # where the example's own test runs it
    arch_reason: str = ""  # why not on the others, when it is not the test's gate
    func: str = "main"  # several run in turn as "a+b"
    sizes: dict = dataclasses.field(default_factory=dict)  # module globals set after import
    note: str = ""


SM80 = ("sm_80",)
SM90 = ("sm_90a",)
# The sink backward examples fill a fragment of `heads` elements for each of block_M = 64
# rows (`sinks = T.alloc_fragment([heads]); for i in T.Parallel(block_M): sinks[i] = ...`):
# with fewer heads that writes past its end, which the compiler refuses.
SINKS = "H >= 64: its fragment `sinks` has H elements and is written for 64 rows"

ENTRIES = [
    # deepseek_mla: its test is gated on compute capability 9.0
    Entry("deepseek_mla/mla_decode", "deepseek_mla/example_mla_decode.py",
          {"batch": 1, "heads": 64, "kv_heads": 1, "kv_ctx": 4096, "dim": 512, "pe_dim": 64}, archs=SM90,
          note="kv_ctx >= 4096: its float16 reference meets atol = rtol = 1e-4 only for the small "
               "outputs of long contexts"),
    # gemm
    Entry("gemm/gemm", "gemm/example_gemm.py", {}, note="main() takes no sizes: 1024^3"),
    Entry("gemm/gemm_intrinsics", "gemm/example_gemm_intrinsics.py", {"M": 128, "N": 128, "K": 64}),
    Entry("gemm/gemm_autotune", "gemm/example_gemm_autotune.py", {"M": 256, "N": 256, "K": 128}),
    Entry("gemm/gemm_advanced_autotune", "gemm/example_gemm_advanced_autotune.py",
          {"M": 256, "N": 256, "K": 128}),
    Entry("gemm/gemm_autotune_pass_configs", "gemm/example_gemm_autotune_pass_configs.py",
          {"M": 128, "N": 128, "K": 64}),
    Entry("gemm/gemm_autotune_pass_configs:decorator", "gemm/example_gemm_autotune_pass_configs.py",
          {"M": 128, "N": 128, "K": 64}, func="main_decorator"),
    Entry("gemm/gemm_autotune_early_stop", "gemm/example_gemm_autotune_early_stop.py", {},
          func="run_api_mode+run_decorator_mode", sizes={"M": 128, "N": 128, "K": 64},
          note="no main(): what its __main__ runs, with the module's M, N, K set; it checks "
               "nothing against a reference"),
    Entry("gemm/gemm_persistent", "gemm/example_gemm_persistent.py", {"M": 256, "N": 512, "K": 128},
          archs=SM90, arch_reason="its fixed tiles need 208 KB of shared memory; sm_80 has 163 KB"),
    # flash_attention
    Entry("flash_attention/mha_fwd_bhsd", "flash_attention/example_mha_fwd_bhsd.py",
          {"batch": 1, "heads": 1, "seq_q": 128, "seq_kv": 128, "dim": 64}),
    Entry("flash_attention/mha_fwd_bhsd:causal", "flash_attention/example_mha_fwd_bhsd.py",
          {"batch": 1, "heads": 1, "seq_q": 128, "seq_kv": 128, "dim": 64, "is_causal": True}),
    Entry("flash_attention/mha_fwd_bshd", "flash_attention/example_mha_fwd_bshd.py",
          {"batch": 1, "heads": 1, "seq_len": 128, "dim": 64}),
    Entry("flash_attention/mha_fwd_bshd:causal", "flash_attention/example_mha_fwd_bshd.py",
          {"batch": 1, "heads": 1, "seq_len": 256, "dim": 64, "is_causal": True}),
    Entry("flash_attention/gqa_fwd_bshd", "flash_attention/example_gqa_fwd_bshd.py",
          {"batch": 1, "heads": 2, "seq_len": 64, "dim": 64, "groups": 2}),
    Entry("flash_attention/gqa_fwd_bshd:causal", "flash_attention/example_gqa_fwd_bshd.py",
          {"batch": 1, "heads": 2, "seq_len": 128, "dim": 64, "groups": 2, "is_causal": True}),
    Entry("flash_attention/mha_bwd_bshd", "flash_attention/example_mha_bwd_bshd.py",
          {"BATCH": 1, "H": 1, "N_CTX": 64, "D_HEAD": 64, "causal": False}),
    Entry("flash_attention/mha_bwd_bshd:causal", "flash_attention/example_mha_bwd_bshd.py",
          {"BATCH": 1, "H": 1, "N_CTX": 128, "D_HEAD": 64, "causal": True}),
    Entry("flash_attention/mha_bwd_bhsd", "flash_attention/example_mha_bwd_bhsd.py",
          {"BATCH": 1, "H": 1, "N_CTX": 64, "D_HEAD": 64, "causal": False}),
    Entry("flash_attention/gqa_bwd", "flash_attention/example_gqa_bwd.py",
          {"BATCH": 1, "H": 2, "N_CTX": 128, "D_HEAD_QK": 64, "D_HEAD_V": 64, "groups": 2}),
    Entry("flash_attention/gqa_bwd:split", "flash_attention/example_gqa_bwd.py",
          {"BATCH": 1, "H": 2, "N_CTX": 128, "D_HEAD_QK": 64, "D_HEAD_V": 64, "groups": 2,
           "use_atomic": False}),
    Entry("flash_attention/gqa_bwd_tma_reduce", "flash_attention/example_gqa_bwd_tma_reduce.py",
          {"BATCH": 1, "H": 2, "N_CTX": 128, "D_HEAD_QK": 64, "D_HEAD_V": 64, "groups": 2}, archs=SM90,
          arch_reason="T.atomic_add(..., use_tma=True): TMA reductions are sm_90"),
    Entry("flash_attention/gqa_bwd_tma_reduce_varlen", "flash_attention/example_gqa_bwd_tma_reduce_varlen.py",
          {"BATCH": 1, "H": 2, "N_CTX": 128, "D_HEAD_QK": 64, "D_HEAD_V": 64, "groups": 2}, archs=SM90),
    Entry("flash_attention/mha_fwd_varlen", "flash_attention/example_mha_fwd_varlen.py",
          {"batch": 2, "heads": 1, "seq_len": 128, "dim": 64, "causal": False}),
    Entry("flash_attention/mha_fwd_varlen:causal", "flash_attention/example_mha_fwd_varlen.py",
          {"batch": 2, "heads": 1, "seq_len": 128, "dim": 64, "causal": True}),
    Entry("flash_attention/gqa_fwd_varlen", "flash_attention/example_gqa_fwd_varlen.py",
          {"batch": 2, "heads": 2, "q_seqlen": 128, "k_seqlen": 128, "dim": 64, "groups": 2,
           "is_causal": False}),
    Entry("flash_attention/gqa_fwd_varlen:causal", "flash_attention/example_gqa_fwd_varlen.py",
          {"batch": 2, "heads": 2, "q_seqlen": 128, "k_seqlen": 128, "dim": 64, "groups": 2,
           "is_causal": True}),
    # dequantize_gemm: the four its test file names
    Entry("dequantize_gemm/gemv_fp16xint4", "dequantize_gemm/example_dequant_gemv_fp16xint4.py", {},
          note="main() takes no sizes: 1x1024x1024"),
    Entry("dequantize_gemm/fp4_hopper", "dequantize_gemm/example_dequant_gemm_fp4_hopper.py",
          {"m": 128, "n": 128, "k": 128}, archs=SM90),
    Entry("dequantize_gemm/bf16_mxfp4_hopper", "dequantize_gemm/example_dequant_gemm_bf16_mxfp4_hopper.py",
          {"m": 128, "n": 256, "k": 128}, archs=SM90),
    Entry("dequantize_gemm/bf16_mxfp4_hopper:simple", "dequantize_gemm/example_dequant_gemm_bf16_mxfp4_hopper.py",
          {"m": 128, "n": 256, "k": 128, "fast_dequant": False}, archs=SM90),
    Entry("dequantize_gemm/w4a8", "dequantize_gemm/example_dequant_gemm_w4a8.py",
          {"m": 32, "n": 32, "k": 128}, archs=SM90),
    # convolution: its test is gated on compute capability 8.9 or lower
    Entry("convolution/convolution", "convolution/example_convolution.py",
          {"argv": ["--n", "1", "--c", "32", "--h", "8", "--w", "8", "--f", "128"]}, archs=SM80),
    # gemv
    Entry("gemv/gemv", "gemv/example_gemv.py", {"do_bench": False}, ("--n", "128", "--k", "128")),
    # attention_sink
    Entry("attention_sink/mha_sink_fwd_bhsd", "attention_sink/example_mha_sink_fwd_bhsd.py",
          {"batch": 1, "heads": 1, "seq_q": 128, "seq_kv": 128, "dim": 64}),
    Entry("attention_sink/mha_sink_fwd_bhsd:bf16", "attention_sink/example_mha_sink_fwd_bhsd.py",
          {"batch": 1, "heads": 1, "seq_q": 128, "seq_kv": 128, "dim": 64, "dtype": "bfloat16"}),
    Entry("attention_sink/mha_sink_fwd_bhsd:window", "attention_sink/example_mha_sink_fwd_bhsd.py",
          {"batch": 1, "heads": 1, "seq_q": 256, "seq_kv": 256, "dim": 64, "window_size": 128}),
    Entry("attention_sink/mha_sink_bwd_bhsd", "attention_sink/example_mha_sink_bwd_bhsd.py",
          {"BATCH": 1, "H": 64, "N_CTX": 64, "D_HEAD": 64}, note=SINKS),
    Entry("attention_sink/mha_sink_bwd_bhsd:window", "attention_sink/example_mha_sink_bwd_bhsd.py",
          {"BATCH": 1, "H": 64, "N_CTX": 128, "D_HEAD": 64, "window_size": 64}, note=SINKS),
    Entry("attention_sink/gqa_sink_bwd_bhsd", "attention_sink/example_gqa_sink_bwd_bhsd.py",
          {"BATCH": 1, "H": 64, "N_CTX": 64, "D_HEAD": 64, "groups": 8}, note=SINKS),
    Entry("attention_sink/gqa_sink_bwd_bhsd:window", "attention_sink/example_gqa_sink_bwd_bhsd.py",
          {"BATCH": 1, "H": 64, "N_CTX": 128, "D_HEAD": 64, "groups": 8, "window_size": 64}, note=SINKS),
    Entry("attention_sink/gqa_sink_fwd_varlen", "attention_sink/example_gqa_sink_fwd_varlen.py",
          {"batch": 1, "heads": 2, "q_seqlen": 128, "k_seqlen": 128, "dim": 64, "groups": 2,
           "is_causal": False}, archs=SM90),
    Entry("attention_sink/gqa_sink_bwd_varlen", "attention_sink/example_gqa_sink_bwd_varlen.py",
          {"batch": 1, "heads": 2, "q_seqlen": 128, "k_seqlen": 128, "dim": 64, "groups": 2}, archs=SM90),
    # cast
    Entry("cast/per_token_cast_to_fp8", "cast/example_per_token_cast_to_fp8.py",
          {"M": 16, "N": 256, "blk_m": 8}),
    Entry("cast/group_per_split_token_cast_to_fp8", "cast/example_group_per_split_token_cast_to_fp8.py",
          {"M": 256, "N": 256, "BG": 2, "blk_m": 4, "batch_sizes": [64, 192]}),
    # gemm_sp
    Entry("gemm_sp/gemm_sp", "gemm_sp/example_gemm_sp.py", {"M": 128, "N": 128, "K": 128}),
    # block_causal_attention: its tests loop over block sizes at fixed sizes; one case each
    Entry("block_causal_attention/fixed", "block_causal_attention/block_causal_attention.py",
          {"batch": 1, "seq_len": 128, "heads": 1, "dim": 64, "dllm_block": 16}, func="_run_fixed_case",
          note="its test's helper for one block size (the test runs seven at batch 2, seq_len 256)"),
    Entry("block_causal_attention/varlen", "block_causal_attention/block_causal_attention_varlen.py",
          {"lengths": [128, 256], "heads": 1, "dim": 64, "dllm_block": 16}, func="_run_varlen_case",
          note="its test's helper for one block size; each length a multiple of 2 * block_size (128)"),
    # deepseek_mhc: main() loops over token counts and hidden sizes; test() is one of them
    Entry("deepseek_mhc/mhc_post", "deepseek_mhc/example_mhc_post.py", {"n": 64, "h": 1280}, func="test"),
    Entry("deepseek_mhc/mhc_pre", "deepseek_mhc/example_mhc_pre.py",
          {"n": 64, "hidden_size": 1280, "hc_mult": 4}, func="test"),
    # fusedmoe
    Entry("fusedmoe/fusedmoe_tilelang", "fusedmoe/example_fusedmoe_tilelang.py",
          {"d_hidden": 128, "d_expert": 128, "n_routed_experts": 4, "n_shared_experts": 1,
           "n_experts_per_token": 2, "batch_size": 1, "seq_len": 64}),
    # gemm_fp8: main() runs test_gemm_fp8 at 1024 x 1024 x 1024 (x 8192 for 2xAcc), e4m3 and e5m2
    *[Entry(f"gemm_fp8/{stem.removeprefix('example_tilelang_')}{tag}", f"gemm_fp8/{stem}.py",
            {"M": 128, "N": 128, "K": 256, "dtype": dtype}, func="test_gemm_fp8")
      for stem in ("example_tilelang_gemm_fp8", "example_tilelang_gemm_fp8_2xAcc")
      for tag, dtype in (("", "float8_e4m3fn"), (":e5m2", "float8_e5m2"))],
    # flash_decoding
    Entry("flash_decoding/gqa_decode", "flash_decoding/example_gqa_decode.py",
          {"batch": 1, "heads": 32, "groups": 8, "kv_seqlen": 512, "dim": 128}),
    Entry("flash_decoding/mha_inference", "flash_decoding/example_mha_inference.py",
          {"BATCH": 1, "H": 1, "Q_CTX": 128, "KV_CTX": 256, "D_HEAD": 128, "causal": False}),
    # gdn: its test file compiles and runs each kernel at the file's module-level sizes
    Entry("gdn/compilation", "gdn/test_example_gdn_compilation.py", {},
          func="+".join(f"test_example_{k}_compilation" for k in (
              "wy_fast", "wy_fast_bwd_split", "chunk_o", "chunk_o_bwd", "chunk_scaled_dot_kkt",
              "cumsum", "chunk_delta_h", "chunk_delta_bwd")),
          sizes={"S": 128, "H": 2},
          note="its test functions, with the file's S and H set; they check nothing against a reference"),
]  # fmt: skip


_benchmark_failed = []  # set when an exception leaves a benchmarked function


def _bench_once():
    """tilelang.profiler.do_bench timing one call of fn, after one untimed call (as the
    full one makes first): the examples benchmark after their checks, and hundreds of
    emulated calls would only cost time. It records a failure inside fn."""

    def do_bench(fn, *args, quantiles=None, **kwargs):
        try:
            fn()
            start = time.perf_counter()
            fn()
            ms = (time.perf_counter() - start) * 1e3
        except BaseException:
            _benchmark_failed.append(True)
            raise
        if quantiles is not None:
            return [ms] * len(quantiles) if len(quantiles) > 1 else ms
        return ms

    return do_bench


def run_one(path, kwargs, argv, func, sizes, arch, source, result_file, gpu=False):
    """The child process: the emulated torch (unless `gpu`), the example imported from
    its directory (it imports its siblings by bare name), its main(**kwargs) called."""
    sys.path.insert(0, str(HERE))
    if not gpu:
        import torch_on_cpu

        torch_on_cpu.emulate_cuda_on_cpu(arch)
    import tilelang.profiler

    tilelang.profiler.do_bench = _bench_once()  # Profiler.do_bench calls it too
    example = Path(source) / "examples" / path
    sys.path.insert(0, str(example.parent))
    sys.path.append(str(source))  # `examples.<dir>.<module>` imports, after this package
    sys.argv = [str(example), *argv]
    os.chdir(example.parent)
    import importlib.util

    spec = importlib.util.spec_from_file_location(example.stem, example)
    module = importlib.util.module_from_spec(spec)
    sys.modules[example.stem] = module
    outcome = {"outcome": "passed", "error": ""}
    try:
        spec.loader.exec_module(module)
        for name, value in sizes.items():
            setattr(module, name, value)
        for name in func.split("+"):
            getattr(module, name)(**kwargs)
    except BaseException as e:  # noqa: BLE001 - SystemExit from an example counts too
        traceback.print_exc()
        first = (str(e).strip().splitlines() or [""])[0]
        where = "in a benchmark: " if _benchmark_failed else ""
        outcome = {"outcome": "failed", "error": f"{where}{type(e).__name__}: {first}"[:300]}
    Path(result_file).write_text(json.dumps(outcome))
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)  # no interpreter teardown: a crash there must not turn a pass into a failure


def run_entry(entry, args, source, log_dir):
    if args.arch not in entry.archs:
        why = entry.arch_reason or f"its test needs {' or '.join(entry.archs)}"
        return {"outcome": "skipped", "error": why, "seconds": 0.0}
    with tempfile.TemporaryDirectory() as tmp:
        result_file = Path(tmp) / "result.json"
        child = [args.python, "-P", str(Path(__file__).resolve()), "--child", entry.path,
                 json.dumps(entry.kwargs), json.dumps(entry.argv), entry.func,
                 json.dumps(entry.sizes), args.arch, str(source), str(result_file),
                 "gpu" if args.gpu else "emulated"]  # fmt: skip
        log = log_dir / (entry.name.replace("/", "__") + ".log")
        start = time.time()
        with open(log, "w") as out:
            try:
                proc = subprocess.run(child, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=args.timeout, check=False)  # fmt: skip
            except subprocess.TimeoutExpired:
                return {"outcome": "timed out", "error": f"after {args.timeout} s",
                        "seconds": float(args.timeout)}  # fmt: skip
        seconds = round(time.time() - start, 1)
        if result_file.exists():
            return dict(json.loads(result_file.read_text()), seconds=seconds)
    tail = log.read_text(errors="replace").strip().splitlines()[-1:]
    why = f"exit status {proc.returncode}" + (f": {tail[0]}" if tail else "")
    return {"outcome": "crashed", "error": why[:300], "seconds": seconds}


def arguments_text(entry):
    words = [f"{k}={v!r}" for k, v in {**entry.sizes, **entry.kwargs}.items()] + list(entry.argv)
    return " ".join(words) if entry.argv else ", ".join(words) or "(defaults)"


def table(results, arch, gpu=False):
    where = f"on the GPU ({arch})" if gpu else f"emulated {arch}"
    lines = [f"# TileLang's examples at small sizes, {where}", "",
             "| example | arguments | outcome | seconds |", "| --- | --- | --- | --- |"]  # fmt: skip
    for entry, r in results:
        outcome = r["outcome"] + (f": `{r['error']}`" if r["error"] else "")
        if entry.note:
            outcome += f" ({entry.note})"
        lines.append(f"| {entry.name} | `{arguments_text(entry)}` | {outcome} | {r['seconds']} |")
    counts = {}
    for _, r in results:
        counts[r["outcome"]] = counts.get(r["outcome"], 0) + 1
    lines += ["", ", ".join(f"{n} {k}" for k, n in sorted(counts.items())), ""]
    return "\n".join(lines)


def select(only):
    if not only:
        return ENTRIES
    picked = [e for e in ENTRIES if e.name in only or e.name.split("/")[0] in only]
    unknown = set(only) - {e.name for e in ENTRIES} - {e.name.split("/")[0] for e in ENTRIES}
    if unknown:
        names = ", ".join(e.name for e in ENTRIES)
        raise SystemExit(
            f"--only: no entry or family {', '.join(sorted(unknown))}; entries: {names}"
        )
    return picked


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        path, kwargs, argv, func, sizes, arch, source, result_file, where = sys.argv[2:11]
        run_one(path, json.loads(kwargs), json.loads(argv), func, json.loads(sizes), arch, source,
                result_file, gpu=where == "gpu")  # fmt: skip
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--source", default=os.environ.get("TILELANG_UPSTREAM_SRC"))
    p.add_argument("--arch", choices=["sm_80", "sm_90a"], default="sm_80")
    p.add_argument("--gpu", action="store_true", help="run on the CUDA GPU, not the emulator")
    p.add_argument("--only", nargs="+", help="entries (family/name) or families to run")
    p.add_argument("--out", default="build/upstream")
    p.add_argument("--timeout", type=int, default=900, help="seconds per entry")
    p.add_argument("--python", default=sys.executable)
    p.add_argument("--list", action="store_true", help="list the entries and exit")
    args = p.parse_args()
    entries = select(args.only)
    if args.list:
        for e in entries:
            print(f"{e.name}: {e.path} {arguments_text(e)} [{', '.join(e.archs)}]")
        return
    if not args.source:
        p.error("--source (or TILELANG_UPSTREAM_SRC) must name a checkout of TileLang's repository")
    source = Path(args.source).resolve()
    missing = [e.path for e in entries if not (source / "examples" / e.path).exists()]
    if missing:
        p.error(f"not in {source / 'examples'}: {', '.join(missing)}")
    out = Path(args.out)
    log_dir = out / "examples_small_logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for entry in entries:
        r = run_entry(entry, args, source, log_dir)
        results.append((entry, r))
        print(f"{entry.name}: {r['outcome']} {r['error']} {r['seconds']}s", flush=True)
        # Written after every entry, so an interrupted run leaves its table so far.
        (out / "examples_small.md").write_text(table(results, args.arch, args.gpu))
    print(table(results, args.arch, args.gpu))
    if any(r["outcome"] not in ("passed", "skipped") for _, r in results):
        sys.exit(1)


if __name__ == "__main__":
    main()
