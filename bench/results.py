"""What every bench script shares: the commit a figure belongs to, and appending a
table to bench/RESULTS.md."""

import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


def commit():
    """TL_COMMIT when set (the GPU machine's copy of the tree may carry a stale .git),
    else `git rev-parse --short HEAD`, else "unknown"."""
    if os.environ.get("TL_COMMIT"):
        return os.environ["TL_COMMIT"]
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
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
