"""Summarizes ncu's source page (`ncu -i rep --page source --csv --print-source sass`):
per kernel, the warp instructions executed in all, and the instructions executed at
least --min times with their counts and stall samples, in program order. A loop shows
as a run of lines with one count (its trips times the warps that run it).

    python3 tests/gpu/tools/sass_counts.py src.csv[.gz] [--min 8000]
"""

import argparse
import csv
import gzip
import io


def kernels(path):
    """[(name, [row dict])] in the page's order (one entry per profiled launch)."""
    out, header = [], None
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as raw:
        for row in csv.reader(io.TextIOWrapper(raw, encoding="utf-8")):
            if not row:
                continue
            if row[0] == "Kernel Name":
                out.append((row[1], []))
                header = None
            elif row[0] == "Address":
                header = row
            elif header and out:
                out[-1][1].append(dict(zip(header, row)))
    return out


def count(row, column):
    value = row.get(column, "") or "0"
    return int(value) if value.isdigit() else 0


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("csv")
    parser.add_argument("--min", type=int, default=8000, help="executions to list an instruction")
    args = parser.parse_args()
    for name, rows in kernels(args.csv):
        executed = sum(count(r, "Instructions Executed") for r in rows)
        samples = sum(count(r, "Warp Stall Sampling (All Samples)") for r in rows)
        print(f"== {name[:80]}: {len(rows)} instructions, {executed} executed, {samples} samples")
        for i, r in enumerate(rows):
            n = count(r, "Instructions Executed")
            if n >= args.min:
                stalls = count(r, "Warp Stall Sampling (All Samples)")
                print(f"{i:5d} {n:9d} {stalls:6d}  {r.get('Source', '').strip()[:100]}")


if __name__ == "__main__":
    main()
