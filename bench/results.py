"""What every bench script shares: the commit a figure belongs to, the table it
appends to bench/RESULTS.md, and the CUDA-event timer."""

import datetime
import math
import os
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def commit():
    """TL_COMMIT when set (the GPU machine's copy of the tree may carry a stale .git),
    else `git describe --always --dirty` (a figure from uncommitted code says so), else
    "unknown"."""
    if os.environ.get("TL_COMMIT"):
        return os.environ["TL_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=7"],
            cwd=HERE,
            capture_output=True,
            text=True,
            check=False,
        )
        return out.stdout.strip() or "unknown"
    except OSError:
        return "unknown"


def append_results(table):
    """Appends a markdown table (and a blank line) to bench/RESULTS.md."""
    with open(os.path.join(HERE, "RESULTS.md"), "a") as f:
        f.write(table + "\n\n")


def report(name, device, description, columns, rows):
    """Prints a bench's table (title line with date, commit and device; description;
    the columns and rows) and appends it to bench/RESULTS.md."""
    table = "\n".join(
        [
            f"### {name} — {datetime.date.today()} — commit {commit()} — {device}",
            "",
            description,
            "",
            "| " + " | ".join(columns) + " |",
            "| " + " | ".join("---" for _ in columns) + " |",
            *rows,
        ]
    )
    print(table)
    append_results(table)


def torch_device():
    """ "<GPU name> (torch <version>)", for report()."""
    import torch

    return f"{torch.cuda.get_device_name()} (torch {torch.__version__})"


def add_shapes_argument(parser, shapes):
    """`--shapes MxNxK,...` on an argparse parser, `shapes` ([(M, N, K), ...]) its
    default; parse_shapes reads the value back."""
    parser.add_argument("--shapes", default=",".join("x".join(map(str, s)) for s in shapes))


def parse_shapes(text):
    """[(M, N, K), ...] of a `--shapes` value such as "4096x4096x4096,8192x8192x1024"."""
    return [tuple(int(v) for v in s.split("x")) for s in text.split(",")]


def cuda_seconds(fn, calls):
    """Seconds per call of `fn`, from CUDA events around `calls` calls in a row on the
    current stream (torch is imported here: the CPU benches do not need it)."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / calls / 1e3


# Seconds each side of an interleaved comparison runs per round, at least. The card's
# power cap sets its clock over a window of about a hundred milliseconds: a side that
# runs for 10 ms runs at the clock the previous side left, not at its own. Measured on
# the H200 (2026-12-01, docs/design/benchmarks.md): mma.sync against torch.matmul at
# 8192^3 came out 0.525 in rounds of 10 calls (16-30 ms per side) and 0.607 in rounds
# of 200 (0.3-0.6 s), where each ran alone for 3 s at 0.618. TL_BENCH_SEGMENT_S
# overrides it (0: `calls` only).
SEGMENT_SECONDS = float(os.environ.get("TL_BENCH_SEGMENT_S", "0.5"))
# best_interleaved's final timing runs in this many separate passes (TL_BENCH_PASSES).
PASSES = int(os.environ.get("TL_BENCH_PASSES", "3"))


def segment_calls(secs, calls):
    """Calls per round for a side that takes `secs` per call: `calls`, or more where
    those take under SEGMENT_SECONDS."""
    return max(calls, math.ceil(SEGMENT_SECONDS / secs)) if secs > 0 else calls


_NVML = None


def gpu_sample():
    """(SM clock in MHz, board power in W) of the current CUDA device, read through
    NVML (libnvidia-ml, which the driver installs), or None where NVML is missing."""
    global _NVML
    import ctypes

    if _NVML is None:
        try:
            import torch

            lib = ctypes.CDLL("libnvidia-ml.so.1")
            handle = ctypes.c_void_p()
            if lib.nvmlInit_v2() != 0 or lib.nvmlDeviceGetHandleByIndex_v2(
                torch.cuda.current_device(), ctypes.byref(handle)
            ):
                raise OSError("NVML did not start")
            _NVML = (lib, handle)
        except (OSError, ImportError):
            _NVML = False
    if not _NVML:
        return None
    lib, handle = _NVML
    clock, milliwatts = ctypes.c_uint(), ctypes.c_uint()
    NVML_CLOCK_SM = 1
    if lib.nvmlDeviceGetClockInfo(handle, NVML_CLOCK_SM, ctypes.byref(clock)) or (
        lib.nvmlDeviceGetPowerUsage(handle, ctypes.byref(milliwatts))
    ):
        return None
    return clock.value, milliwatts.value / 1e3


# Per side of the last rotated_medians call: median SM clock (MHz) and power (W) read
# right after each of its segments (None without NVML); and the spread of the last
# best_interleaved call: (lowest, highest) ratio reference/ours over its passes.
LAST_CLOCKS = []
LAST_SPREAD = None


def rotated_medians(fns, counts, rounds, timer, sample=None):
    """Median over `rounds` of timer(fn, count) for each fn, the order of the sides
    rotating from round to round, so that no side always inherits the clock of the same
    other. Each side's SM clock and power, read by `sample()` after each of its segments
    (gpu_sample when timing with cuda_seconds), are left in LAST_CLOCKS (medians)."""
    if sample is None and timer is cuda_seconds:
        sample = gpu_sample
    times = [[] for _ in fns]
    samples = [[] for _ in fns]
    for r in range(rounds):
        for i in range(len(fns)):
            j = (i + r) % len(fns)
            times[j].append(timer(fns[j], counts[j]))
            got = sample() if sample else None
            if got:
                samples[j].append(got)
    LAST_CLOCKS[:] = [
        (
            statistics.median(c for c, _ in s),
            statistics.median(w for _, w in s),
        )
        if s
        else None
        for s in samples
    ]
    return [statistics.median(t) for t in times]


def clocks_text(clocks=None):
    """ "1980 / 1755 MHz, 690 / 700 W": LAST_CLOCKS (or `clocks`) of ours and the
    first reference, for a table cell; "n/a" without NVML."""
    clocks = LAST_CLOCKS if clocks is None else clocks
    if len(clocks) < 2 or not all(clocks[:2]):
        return "n/a"
    (c0, w0), (c1, w1) = clocks[:2]
    return f"{c0:.0f} / {c1:.0f} MHz, {w0:.0f} / {w1:.0f} W"


def spread_text():
    """ "0.951-0.968": the lowest and highest ratio of the last best_interleaved call's
    passes, for a table cell."""
    return f"{LAST_SPREAD[0]:.3f}-{LAST_SPREAD[1]:.3f}" if LAST_SPREAD else "n/a"


def interleaved_medians(fns, rounds, calls):
    """Median seconds per call of each of `fns`, timed one after the other in each of
    `rounds` rounds (A/B interleaved: every side sees the same drift of clocks and
    temperature). Each side runs segment_calls per round, so that it runs at its own
    steady clock, in rotating order (rotated_medians)."""
    counts = [segment_calls(cuda_seconds(fn, calls), calls) for fn in fns]
    return rotated_medians(fns, counts, rounds, cuda_seconds)


def rounds_text(rounds, calls):
    """How interleaved_medians timed, for a bench's description."""
    return (
        f"medians of {rounds} interleaved rounds in rotating order, each side {calls}+ calls "
        f"and at least {SEGMENT_SECONDS:g} s per round"
    )


def final_text(rounds, calls):
    """How best_interleaved's final timing ran, with the spread and clock columns."""
    per = max(3, math.ceil(rounds / PASSES))
    return (
        f"the picked config and the reference timed in {PASSES} passes of {per} interleaved "
        f"rounds (rotating order, each side {calls}+ calls and at least {SEGMENT_SECONDS:g} s "
        "per round), the figure the median of the passes' medians; spread: lowest-highest "
        "ratio over the passes; clocks: median SM clock and board power (NVML) read after "
        "each side's segments, ours / reference"
    )


def best_interleaved(tried, ref_fn, rounds, calls, top=2):
    """The faster of the `top` best configs of a burst sweep, then timed afresh against
    `ref_fn`. Bursts run faster than a sustained loop on a power-capped card and can rank
    close configs wrongly, so the `top` configs are first timed interleaved to pick one;
    keeping that pick's median would favour our side (the minimum of several noisy
    medians), so the chosen config and the references are timed again in fresh
    interleaved rounds, and those figures are returned. `tried` holds (burst seconds,
    config, fn); `ref_fn` is one reference or a list of them. Returns (seconds, config,
    reference seconds), the last a list when `ref_fn` is."""
    refs = list(ref_fn) if isinstance(ref_fn, (list, tuple)) else [ref_fn]
    best = sorted(tried, key=lambda t: t[0])[:top]
    if len(best) > 1:
        times = interleaved_medians([t[2] for t in best], rounds, calls)
        _, pick = min(zip(times, range(len(best))), key=lambda x: x[0])
    else:
        pick = 0
    # The final timing in PASSES passes of about rounds / PASSES rounds each: the median
    # of the passes' medians is the figure, and the lowest and highest ratio against the
    # first reference (LAST_SPREAD) show how far one pass can move it.
    global LAST_SPREAD
    fns = [best[pick][2], *refs]
    counts = [segment_calls(cuda_seconds(fn, calls), calls) for fn in fns]
    passes, clocks = [], []
    for _ in range(PASSES):
        passes.append(
            rotated_medians(fns, counts, max(3, math.ceil(rounds / PASSES)), cuda_seconds)
        )
        clocks.append(list(LAST_CLOCKS))
    times = [statistics.median(p[i] for p in passes) for i in range(len(fns))]
    ratios = [p[1] / p[0] for p in passes]
    LAST_SPREAD = (min(ratios), max(ratios))
    LAST_CLOCKS[:] = [
        None
        if not all(c[i] for c in clocks)
        else (
            statistics.median(c[i][0] for c in clocks),
            statistics.median(c[i][1] for c in clocks),
        )
        for i in range(len(fns))
    ]
    secs, theirs = times[0], times[1:]
    return secs, best[pick][1], theirs if isinstance(ref_fn, (list, tuple)) else theirs[0]
