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


def segment_calls(secs, calls):
    """Calls per round for a side that takes `secs` per call: `calls`, or more where
    those take under SEGMENT_SECONDS."""
    return max(calls, math.ceil(SEGMENT_SECONDS / secs)) if secs > 0 else calls


def rotated_medians(fns, counts, rounds, timer):
    """Median over `rounds` of timer(fn, count) for each fn, the order of the sides
    rotating from round to round, so that no side always inherits the clock of the same
    other."""
    times = [[] for _ in fns]
    for r in range(rounds):
        for i in range(len(fns)):
            j = (i + r) % len(fns)
            times[j].append(timer(fns[j], counts[j]))
    return [statistics.median(t) for t in times]


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
    times = interleaved_medians([best[pick][2], *refs], rounds, calls)
    secs, theirs = times[0], times[1:]
    return secs, best[pick][1], theirs if isinstance(ref_fn, (list, tuple)) else theirs[0]
