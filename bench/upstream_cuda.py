"""Side by side with upstream TileLang on the same GPU: upstream's own example kernels
(the `run_regression_perf` functions its examples define for its performance
regression suite, at the configs they use), compiled once by this package and once by
upstream's wheel, timed in the same run, A/B interleaved, with the same timer and the
same inputs.

The two packages are both called `tilelang`, so each side runs in its own worker
process (this file with --worker), one Python environment each; the driver (this file)
holds neither. For every kernel:
  1. a cold worker per side, with an empty kernel cache, runs the example's
     `run_regression_perf(**kwargs)` with the timing functions replaced: the profiler's
     `do_bench` and `tilelang.profiler.do_bench` hand the callable they were given to
     this harness instead of timing it (the example's own code builds the kernels and
     inputs; for `profiler.do_bench()` the inputs are made here from the kernel's
     parameters and the profiler's supply type, with the same torch code on both
     sides, so that both get the same values). The time of that call is the cold
     compile time. The worker then runs each captured callable once and saves what it
     wrote (a tensor the call changed, or returned); tensors it did not change are
     inputs, fingerprinted, so that the driver can check both sides got the same;
  2. a warm worker per side, the cache now populated, does the same in a fresh
     process (the warm compile time) and stays up to be timed;
  3. the driver times the two warm workers' callables in interleaved rounds (rotating
     order, each side at least --segment seconds per round, CUDA events around back to
     back calls, no cache flush), medians per side; and compares the outputs element
     by element (upstream's as the reference).
Both sides do the same work: the same example source, the same callable (kernel call
with its output allocation where the example's profiler allocates), the same timer.

Run on a GPU machine:
  python bench/upstream_cuda.py --examples DIR [--upstream-site DIR] [--ours-site DIR]
      [--kernels gemm,mha_fwd_bshd,...] [--all] [--tuned [--tune-limit 48]]
      [--rounds 11] [--segment 0.5]
--tuned adds the rows at the config each side's own autotuner picks (TUNED_KERNELS:
the tuning call runs for real, then the tuned kernel is captured and timed as above).
DIR is upstream's examples folder (a checkout's examples/); --upstream-site a folder
where upstream's wheel and its dependencies are installed (pip install --target);
--ours-site where this package is installed (default: the driver's own sys.path).
tests/gpu/run_on_gpu.sh's UPSTREAM=1 runs it from carried wheels. Appends the table to
bench/RESULTS.md.
"""

import argparse
import ast
import contextlib
import datetime
import functools
import json
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

from results import LAST_CLOCKS, clocks_text, commit, gpu_sample, rotated_medians

HERE = os.path.dirname(os.path.abspath(__file__))

# The kernels the comparison runs by default: (name, example file under examples/,
# keyword arguments for its run_regression_perf; None: the example's defaults).
DEFAULT_KERNELS = [
    ("gemm", "gemm/example_gemm.py", None),
    ("gemm_intrinsics", "gemm/example_gemm_intrinsics.py", None),
    ("mha_fwd_bshd", "flash_attention/example_mha_fwd_bshd.py", None),
    ("mha_fwd_bhsd", "flash_attention/example_mha_fwd_bhsd.py", None),
    ("gqa_fwd_bshd", "flash_attention/example_gqa_fwd_bshd.py", None),
    ("mha_bwd_bshd", "flash_attention/example_mha_bwd_bshd.py", None),
    ("mla_decode", "deepseek_mla/example_mla_decode.py", None),
    ("dequant_gemm_bf16_fp4", "dequantize_gemm/example_dequant_gemm_bf16_fp4_hopper.py", None),
    ("elementwise_add", "elementwise/example_elementwise_add.py", None),
    ("gemm_fp8", "gemm_fp8/example_tilelang_gemm_fp8.py", None),
    ("gqa_decode", "flash_decoding/example_gqa_decode.py", None),
]

# The same kernels at the config each side's own autotuner picks (--tuned, or these
# names in --kernels): (name, example file, the call that tunes, evaluated in the
# example module's namespace). The call returns the tuned kernel (or an AutotuneResult
# holding it). Both sides search the example's own config space with the example's own
# warmup / rep; `--tune-limit N` keeps N configs, drawn by a fixed seed, of a
# `get_configs()` that the call reads at run time (the same subset on both sides).
# The time of that call is the tuning time.
TUNED_KERNELS = [
    ("gemm@tuned", "gemm/example_gemm_autotune.py", "get_best_config(4096, 4096, 4096)"),
    ("gqa_decode@tuned", "flash_decoding/example_gqa_decode.py", "flashattn(1, 32, 8, 8192, 128)"),
    (
        "dequant_gemm_bf16_fp4@tuned",
        "dequantize_gemm/example_dequant_gemm_bf16_fp4_hopper.py",
        "matmul(4096, 4096, 4096, 'bfloat16', 'bfloat16', 'float32', num_bits=4, fast_dequant=True)",
    ),
]


def regression_entries(examples):
    """Every entry of upstream's regression suite: (name, example file, kwargs) from
    the `tilelang.testing.process_func(module.run_regression_perf, **kwargs)` calls in
    examples/*/regression_*.py."""
    entries = []
    for root, _, files in sorted(os.walk(examples)):
        for f in sorted(files):
            if not (f.startswith("regression_") and f.endswith(".py")):
                continue
            with open(os.path.join(root, f)) as src:
                tree = ast.parse(src.read())
            for fn in tree.body:
                if not (isinstance(fn, ast.FunctionDef) and fn.name.startswith("regression_")):
                    continue
                for call in ast.walk(fn):
                    if not (
                        isinstance(call, ast.Call)
                        and getattr(call.func, "attr", "") == "process_func"
                        and call.args
                        and isinstance(call.args[0], ast.Attribute)
                    ):
                        continue
                    module = ast.unparse(call.args[0].value)
                    kwargs = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
                    rel = os.path.relpath(os.path.join(root, module + ".py"), examples)
                    name = fn.name.removeprefix("regression_").removeprefix("example_")
                    entries.append((name, rel, kwargs))
    return entries


# ---------------------------------------------------------------- worker side


def _torch_dtype(torch, name):
    """A torch dtype from a dtype name as either package spells it."""
    name = str(name).replace("torch.", "")
    aliases = {
        "float8_e4m3": "float8_e4m3fn",
        "float8_e5m2": "float8_e5m2",
        "bool": "bool",
        "float": "float32",
        "half": "float16",
    }
    return getattr(torch, aliases.get(name, name))


def make_input(torch, shape, dtype, supply):
    """One input tensor on the GPU, as TileLang's profiler makes it for `supply` (a
    TensorSupplyType name), by the same torch calls on both sides."""
    is_fp8 = "float8" in str(dtype)
    is_unsigned = dtype in (
        torch.uint8,
        getattr(torch, "uint16", None),
        getattr(torch, "uint32", None),
    )
    floats = (torch.float16, torch.float32, torch.bfloat16)
    if supply in ("Auto", "Integer"):
        if is_unsigned:
            return torch.randint(0, 3, shape, device="cuda", dtype=dtype)
        if is_fp8:
            return torch.randint(-128, 128, shape, device="cuda", dtype=torch.int8).to(dtype)
        if dtype == torch.bool:
            return torch.randint(0, 2, shape, device="cuda", dtype=dtype)
        if supply == "Auto" and dtype in floats:
            return torch.empty(*shape, device="cuda", dtype=dtype).uniform_(-1.0, 1.0)
        return torch.randint(-2, 3, shape, device="cuda", dtype=dtype)
    if dtype == torch.int8 and supply in ("Uniform", "Normal"):
        return torch.ones(*shape, device="cuda", dtype=dtype)
    if supply == "Uniform":
        return torch.empty(*shape, device="cuda", dtype=torch.float32).uniform_(-1.0, 1.0).to(dtype)
    if supply == "Normal":
        return torch.empty(*shape, device="cuda", dtype=torch.float32).normal_(-1.0, 1.0).to(dtype)
    if supply == "Randn":
        return torch.randn(*shape, device="cuda").to(dtype)
    if supply == "Zero":
        return torch.zeros(*shape, device="cuda", dtype=dtype)
    if supply == "One":
        return torch.ones(*shape, device="cuda", dtype=dtype)
    raise ValueError(f"unknown tensor supply type {supply}")


def profiler_view(torch, profiler):
    """(kernel callable, [(shape, torch dtype, is output)], supply name) of either
    package's Profiler."""
    supply = getattr(profiler.supply_type, "name", str(profiler.supply_type))
    if hasattr(profiler, "kernel") and hasattr(profiler.kernel, "out_idx"):  # this package
        kernel = profiler.kernel
        outs = set(kernel.out_idx or [])
        params = [
            (tuple(int(d) for d in p.shape), _torch_dtype(torch, p.dtype), i in outs)
            for i, p in enumerate(kernel.params)
        ]
        return kernel, params, supply
    outs = set(profiler.result_idx or [])  # upstream
    params = [
        (tuple(int(d) for d in p.shape), p.torch_dtype(), i in outs)
        for i, p in enumerate(profiler.params)
    ]
    return profiler.adapter, params, supply


def tensors_of(value, out, depth=0):
    """The torch tensors in `value` (a tensor, a list / tuple / dict of them, a partial's
    arguments or a closure's cells), in a fixed order."""
    import torch

    if isinstance(value, torch.Tensor):
        out.append(value)
    elif depth > 3:
        return out
    elif isinstance(value, (list, tuple)):
        for v in value:
            tensors_of(v, out, depth + 1)
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            tensors_of(value[k], out, depth + 1)
    elif isinstance(value, functools.partial):
        tensors_of(list(value.args), out, depth + 1)
        tensors_of(value.keywords, out, depth + 1)
    elif callable(value) and getattr(value, "__closure__", None):
        for cell in value.__closure__:
            with contextlib.suppress(ValueError):  # an empty cell
                tensors_of(cell.cell_contents, out, depth + 1)
    return out


def fingerprint(t):
    """Two float64 sums that differ when the tensor's values do (an input check)."""
    import torch

    x = t.detach().reshape(-1)
    if x.dtype == torch.bool or "float8" in str(x.dtype):
        x = x.view(torch.uint8) if x.dtype != torch.bool else x
    x = x.to(torch.float64)
    w = torch.arange(x.numel(), device=x.device, dtype=torch.float64).remainder_(1021)
    return [float(x.sum()), float((x * w).sum())]


def limit_configs(module, limit):
    """Keep `limit` configs of the example's `get_configs()`, drawn by a fixed seed (the
    same subset on both sides, in the example's order): for tuners that call it at run
    time."""
    original = getattr(module, "get_configs", None)
    if not limit or original is None:
        return

    def limited(*a, **kw):
        configs = list(original(*a, **kw))
        if len(configs) <= limit:
            return configs
        return [configs[i] for i in sorted(random.Random(0).sample(range(len(configs)), limit))]

    module.get_configs = limited


def worker(args):
    import torch

    t0 = time.perf_counter()
    import tilelang
    import tilelang.profiler as tl_profiler

    import_s = time.perf_counter() - t0
    captured = []  # callables handed to do_bench, in order

    def capture_fn(fn, *a, quantiles=None, **kw):
        captured.append(fn)
        return [1.0] * len(quantiles) if quantiles else 1.0

    def capture_profiler(
        self, func=None, warmup=25, rep=100, n_warmup=0, n_repeat=0, input_tensors=None, **kw
    ):
        kernel, params, supply = profiler_view(torch, self)
        if input_tensors is not None:
            ins = list(input_tensors)
        else:
            torch.manual_seed(1000 + len(captured))
            ins = [make_input(torch, s, d, supply) for s, d, out in params if not out]
        captured.append(functools.partial(func if func is not None else kernel, *ins))
        quantiles = kw.get("quantiles")
        return [1.0] * len(quantiles) if quantiles else 1.0

    def install_capture():
        tl_profiler.do_bench = capture_fn
        if hasattr(tl_profiler, "bench"):
            tl_profiler.bench.do_bench = capture_fn
        tl_profiler.Profiler.do_bench = capture_profiler

    example = os.path.join(args.examples, args.file)
    sys.path.insert(0, os.path.dirname(example))
    sys.argv = [example]
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    reply = {"import_s": import_s, "version": getattr(tilelang, "__version__", "?")}
    try:
        import importlib.util

        spec = importlib.util.spec_from_file_location("example_under_test", example)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        t0 = time.perf_counter()
        if args.tune:
            # The tuner times for real (no capture yet); then the tuned kernel is
            # captured as the profiler would time it.
            limit_configs(module, args.tune_limit)
            result = eval(args.tune, vars(module))  # the harness's own TUNED_KERNELS text
            torch.cuda.synchronize()
            tuned = type(result).__name__ == "AutotuneResult"
            kernel = result.kernel if tuned else result
            config = result.config if tuned else getattr(kernel, "config", None)
            reply["config"] = {str(k): str(v) for k, v in dict(config or {}).items()}
            reply["compile_s"] = time.perf_counter() - t0
            install_capture()
            kernel.get_profiler(tensor_supply_type=tilelang.TensorSupplyType.Auto).do_bench()
        else:
            install_capture()
            module.run_regression_perf(**json.loads(args.kwargs))
            torch.cuda.synchronize()
            reply["compile_s"] = time.perf_counter() - t0
        reply["captured"] = len(captured)
        if args.save:
            reply["inputs"], reply["outputs"] = [], []
            for i, fn in enumerate(captured):
                before_list = tensors_of(fn, [])
                before = [t.clone() for t in before_list]
                result = fn()
                torch.cuda.synchronize()
                outs, ins = [], []
                for t, b in zip(before_list, before):
                    (ins if torch.equal(t, b) else outs).append(t)
                outs += tensors_of(result, [])
                reply["inputs"].append([fingerprint(t) for t in ins])
                path = f"{args.save}.{i}.pt"
                torch.save([o.detach().cpu() for o in outs], path)
                reply["outputs"].append(path)
                del before
    except Exception as e:  # noqa: BLE001 - the driver reports it
        import traceback

        reply["error"] = (
            f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"
        )
        reply["traceback"] = traceback.format_exc()[-3000:]
    print("READY " + json.dumps(reply), flush=True)
    if not args.serve or "error" in reply:
        return
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "quit":
            break
        fn, calls = captured[int(cmd[1])], int(cmd[2])
        torch.cuda.synchronize()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        end.synchronize()
        sample = gpu_sample()
        print(json.dumps({"s": start.elapsed_time(end) / calls / 1e3, "clock": sample}), flush=True)


# ---------------------------------------------------------------- driver side


class Worker:
    def __init__(self, side, site, examples, entry, cache, save=None, serve=False, tune_limit=0):
        _name, rel, kwargs = entry
        tune = kwargs if isinstance(kwargs, str) else None  # a TUNED_KERNELS entry
        kwargs = None if tune else kwargs
        env = dict(os.environ)
        if site:  # this side's package alone (the other side's must not be importable)
            env["PYTHONPATH"] = site
        env["TILELANG_CACHE_DIR"] = cache
        env["PYTHONUNBUFFERED"] = "1"
        cmd = [
            sys.executable,
            os.path.abspath(__file__),
            "--worker",
            "--examples",
            examples,
            "--file",
            rel,
            "--kwargs",
            json.dumps(kwargs or {}),
        ]
        if tune:
            cmd += ["--tune", tune, "--tune-limit", str(tune_limit)]
        if save:
            cmd += ["--save", save]
        if serve:
            cmd += ["--serve"]
        self.side = side
        self.proc = subprocess.Popen(
            cmd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def ready(self, timeout):
        """The worker's READY reply (a dict), or {"error": ...} when it died or hung."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            line = self.proc.stdout.readline()
            if not line:
                break
            if line.startswith("READY "):
                return json.loads(line[6:])
        self.proc.kill()
        err = self.proc.stderr.read()[-2000:] if self.proc.stderr else ""
        return {"error": "worker exited or timed out", "traceback": err}

    def time(self, index, calls):
        self.proc.stdin.write(f"time {index} {calls}\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def close(self):
        try:
            self.proc.stdin.write("quit\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=60)
        except Exception:  # noqa: BLE001
            self.proc.kill()


def compare(ours, theirs, tol):
    """(ok, text): our outputs against upstream's, element by element."""
    import torch

    def same(a, b):
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
        return a == b or (
            isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b)
        )

    if not same(ours.get("inputs"), theirs.get("inputs")):
        return False, "inputs differ"
    worst = 0.0
    for po, pt in zip(ours["outputs"], theirs["outputs"]):
        a, b = torch.load(po), torch.load(pt)
        if len(a) != len(b):
            return False, f"{len(a)} outputs against {len(b)}"
        for x, y in zip(a, b):
            if x.shape != y.shape:
                return False, f"shape {tuple(x.shape)} against {tuple(y.shape)}"
            x, y = x.to(torch.float64), y.to(torch.float64)
            both_nan = torch.isnan(x) & torch.isnan(y)
            x, y = torch.where(both_nan, 0, x), torch.where(both_nan, 0, y)
            scale = float(y.abs().max()) or 1.0
            worst = max(worst, float((x - y).abs().max()) / scale)
    return worst <= tol, f"{worst:.1e}"


def timed_pair(workers, index, rounds, segment):
    """Median seconds per call of each worker's callable `index`, interleaved in
    rotating order (results.rotated_medians); and each side's median SM clock and power,
    as each worker reads them after its segment."""
    calls = []
    for w in workers:
        w.time(index, 3)  # warm up
        est = w.time(index, 10)["s"]
        calls.append(max(10, math.ceil(segment / max(est, 1e-7))))
    last = {}

    def timer(w, n):
        got = w.time(index, n)
        last["clock"] = got.get("clock")
        return got["s"]

    med = rotated_medians(workers, calls, rounds, timer, sample=lambda: last["clock"])
    return med, list(LAST_CLOCKS)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--file", help=argparse.SUPPRESS)
    p.add_argument("--kwargs", default="{}", help=argparse.SUPPRESS)
    p.add_argument("--save", help=argparse.SUPPRESS)
    p.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--tune", default=None, help=argparse.SUPPRESS)
    p.add_argument("--examples", required=True, help="upstream's examples folder")
    p.add_argument("--upstream-site", default=None, help="where upstream's wheel is installed")
    p.add_argument("--ours-site", default=None, help="where this package is installed")
    p.add_argument("--kernels", default=None, help="names to run (default: the issue's list)")
    p.add_argument("--all", action="store_true", help="every entry of upstream's regression suite")
    p.add_argument("--rounds", type=int, default=11)
    p.add_argument("--segment", type=float, default=0.5)
    p.add_argument("--tol", type=float, default=2e-2, help="largest error / largest magnitude")
    p.add_argument(
        "--timeout", type=float, default=300, help="seconds a worker may take to compile"
    )
    p.add_argument("--no-record", action="store_true", help="print the table only")
    p.add_argument(
        "--tuned",
        action="store_true",
        help="also each TUNED_KERNELS entry: the config each side's autotuner picks",
    )
    p.add_argument(
        "--tune-limit",
        type=int,
        default=48,
        help="at most this many configs of an example's get_configs() (0: all)",
    )
    p.add_argument(
        "--budget", type=float, default=0, help="seconds after which no further kernel starts"
    )
    args = p.parse_args()
    if args.worker:
        return worker(args)

    import torch

    entries = regression_entries(args.examples) if args.all else list(DEFAULT_KERNELS)
    if args.tuned:
        entries += TUNED_KERNELS
    if args.kernels:
        want = args.kernels.split(",")
        pool = {
            e[0]: e for e in regression_entries(args.examples) + DEFAULT_KERNELS + TUNED_KERNELS
        }
        entries = [pool[n] for n in want if n in pool]
        missing = [n for n in want if n not in pool]
        if missing:
            print(f"unknown kernels: {', '.join(missing)}")
    sides = [("ours", args.ours_site), ("upstream", args.upstream_site)]
    work = tempfile.mkdtemp(prefix="tl-upstream-")
    rows, ratios, tuned_ratios = [], [], []
    started, upstream_version = time.time(), "?"
    for entry in entries:
        name, rel, kwargs = entry
        if args.budget and time.time() - started > args.budget:
            rows.append(f"| {name} | {rel} | - | - | - | - | - | - | not run: --budget spent |")
            continue
        print(f"== {name} ({rel}{' ' + json.dumps(kwargs) if kwargs else ''})", flush=True)
        caches = {s: os.path.join(work, s, name) for s, _ in sides}
        cold = {}
        for side, site in sides:
            w = Worker(
                side,
                site,
                args.examples,
                entry,
                caches[side],
                save=os.path.join(work, f"{side}-{name}"),
                tune_limit=args.tune_limit,
            )
            cold[side] = w.ready(args.timeout)
            w.close()
        warm, ready = {}, {}
        for side, site in sides:
            warm[side] = Worker(
                side,
                site,
                args.examples,
                entry,
                caches[side],
                serve=True,
                tune_limit=args.tune_limit,
            )
            ready[side] = warm[side].ready(args.timeout)
        errors = {}  # side: its (last) worker's error
        for side, _ in sides:
            for r in (cold[side], ready[side]):
                if r.get("error"):
                    errors[side] = r["error"]
                    print(f"   {side}: {r['error']}\n{r.get('traceback', '')}", flush=True)
        if errors or cold["ours"].get("captured") != cold["upstream"].get("captured"):
            why = "; ".join(f"{s}: {e}" for s, e in errors.items()) or (
                f"{cold['ours'].get('captured')} timed callables against {cold['upstream'].get('captured')}"
            )
            rows.append(f"| {name} | {rel} | - | - | - | - | - | - | {why} |")
            for w in warm.values():
                w.close()
            continue
        upstream_version = cold["upstream"].get("version", upstream_version)
        ok, check = compare(cold["ours"], cold["upstream"], args.tol)
        for index in range(cold["ours"]["captured"]):
            (o, u), clk = timed_pair(
                [warm["ours"], warm["upstream"]], index, args.rounds, args.segment
            )
            label = name if cold["ours"]["captured"] == 1 else f"{name} [{index}]"
            ratio = u / o
            tuned = isinstance(kwargs, str)
            if ok:
                (tuned_ratios if tuned else ratios).append(ratio)
            clocks = clocks_text(clk)
            if tuned:  # the configs timed (the warm workers')
                check += "; configs ours {} / upstream {}".format(
                    json.dumps(ready["ours"].get("config")),
                    json.dumps(ready["upstream"].get("config")),
                )
            row = (
                f"| {label} | {rel} | {o * 1e6:.1f} | {u * 1e6:.1f} | {ratio:.3f} "
                f"| {cold['ours']['compile_s']:.1f} / {cold['upstream']['compile_s']:.1f} "
                f"| {ready['ours']['compile_s']:.2f} / {ready['upstream']['compile_s']:.2f} "
                f"| {clocks} | {'ok' if ok else 'MISMATCH'} {check} |"
            )
            print(row, flush=True)
            rows.append(row)
        for w in warm.values():
            w.close()
    shutil.rmtree(work, ignore_errors=True)

    def geomean(values):
        return math.exp(sum(math.log(r) for r in values) / len(values)) if values else float("nan")

    geo = geomean(ratios)
    tuned_text = (
        f"; of the @tuned rows (each side at the config its own autotuner picked from the "
        f"example's config space, at most {args.tune_limit or 'all'} of a get_configs() read "
        f"at run time, the same subset on both sides; cold compile = the whole tuning): "
        f"{geomean(tuned_ratios):.3f} over {len(tuned_ratios)}"
        if tuned_ratios
        else ""
    )
    versions = f"upstream tilelang {upstream_version}"
    table = "\n".join(
        [
            (
                f"### upstream_cuda — {datetime.date.today()} — commit {commit()} — "
                f"{torch.cuda.get_device_name()} (torch {torch.__version__}, {versions})"
            ),
            "",
            (
                "upstream TileLang's own examples (run_regression_perf at its configs), this package "
                "against upstream's wheel, each side in its own process, same inputs, same timer "
                f"(CUDA events around back-to-back calls, no flush); medians of {args.rounds} "
                f"interleaved rounds in rotating order, each side at least {args.segment:g} s per "
                "round; ratio = upstream time / our time (above 1: we are faster); compile: cold "
                "(empty cache) and warm (a fresh process, cache populated), seconds, ours / "
                "upstream; check: our outputs against upstream's, largest error over the largest "
                f"magnitude (ok at most {args.tol:g}). Geometric mean of the checked ratios at "
                f"upstream's configs: {geo:.3f} over {len(ratios)}{tuned_text}"
            ),
            "",
            (
                "| kernel | example | ours (us) | upstream (us) | ratio | compile cold (s) "
                "| compile warm (s) | clocks ours / upstream | check |"
            ),
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
            *rows,
        ]
    )
    print(table)
    if not args.no_record:
        with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
            f.write(table + "\n\n")


if __name__ == "__main__":
    main()
