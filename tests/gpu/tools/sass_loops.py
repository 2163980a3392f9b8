"""The loops of a generated CUDA kernel that issue tensor-core instructions, with their
SASS instruction counts (all, and those on the uniform datapath), without a GPU:
nvcc compiles the source for sm_90a and cuobjdump disassembles it.

    python3 tests/gpu/tools/sass_loops.py kernel.cu [--arch sm_90a] [--print]

kernel.cu is a kernel's `get_kernel_source()`. cuobjdump comes from the CUDA toolkit or
from the pip wheel nvidia-cuda-cuobjdump (its nvidia/cu13/bin is searched too). A loop is
a backward branch and the instructions between its target and it; nested loops are
listed each on their own, innermost first.
"""

import argparse
import glob
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

DEVICE = pathlib.Path(__file__).resolve().parents[3] / "device"


def cuobjdump():
    found = shutil.which("cuobjdump")
    if found:
        return found
    for site in sys.path:
        found = glob.glob(os.path.join(site, "nvidia", "cu*", "bin", "cuobjdump"))
        if found:
            return found[0]
    sys.exit("cuobjdump not found: install the CUDA toolkit or `pip install nvidia-cuda-cuobjdump`")


def sass(source, arch):
    with tempfile.TemporaryDirectory() as tmp:
        cubin = os.path.join(tmp, "k.cubin")
        subprocess.run(
            ["nvcc", f"-gencode=arch=compute_{arch[3:]},code={arch}", "-cubin", "-std=c++17", "-O3"]
            + [f"-I{DEVICE / 'cuda'}", f"-I{DEVICE}", "-x", "cu", source, "-o", cubin, "-w"],
            check=True,
        )
        out = subprocess.run(
            [cuobjdump(), "-sass", cubin], check=True, capture_output=True, text=True
        )
    ins = []
    for line in out.stdout.splitlines():
        m = re.match(r"\s*/\*([0-9a-f]{4,})\*/\s+(.*?)\s*;", line)
        if m:
            ins.append((int(m.group(1), 16), m.group(2)))
    return ins


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("source")
    parser.add_argument("--arch", default="sm_90a")
    parser.add_argument("--print", action="store_true", help="print each loop's instructions")
    args = parser.parse_args()
    ins = sass(args.source, args.arch)
    print(f"{len(ins)} instructions")
    loops = set()
    for addr, text in ins:
        m = re.search(r"BRA (0x[0-9a-f]+)", text)
        if m and int(m.group(1), 16) < addr:
            loops.add((int(m.group(1), 16), addr))
    for start, end in sorted(loops, key=lambda loop: loop[1] - loop[0]):
        body = [(a, t) for a, t in ins if start <= a <= end]
        mma = sum("GMMA" in t or "HMMA" in t for _, t in body)
        if not mma:
            continue
        uniform = sum(bool(re.match(r"(@!?U?P\w+\s+)?U[A-Z]", t)) for _, t in body)
        print(f"loop {start:#x}-{end:#x}: {len(body)} instructions, {uniform} uniform, {mma} mma")
        if args.print:
            for a, t in body:
                print(f"  {a:#06x} {t}")


if __name__ == "__main__":
    main()
