"""Skinny GEMM configs against torch.matmul in one process, sustained (the A/B behind
docs/design/hopper_log.md's skinny M = 128 figures): every config of examples/skinny_gemm.py
given, checked against torch, then timed in interleaved rounds with torch.matmul(a, b.T)
(bench/results.py's protocol), two passes per dtype. Also prints the name of the kernel
torch runs.

  python3 tests/gpu/tools/skinny_configs_ab.py [--m 128] [--nk 8192x8192]
      [--configs "64,128,64,8,128,1,0,2,1,0;64,128,64,8,128,1,0,2,1"]
"""

import argparse
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "examples"))
from results import interleaved_medians
from skinny_gemm import skinny_matmul

DEFAULT = "64,128,64,8,128,1,0,2,1,0;64,128,64,8,128,1,1,2,1,0;64,128,64,8,128,1,0,2,1"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--m", type=int, default=128)
    parser.add_argument("--nk", default="8192x8192", help="N x K")
    parser.add_argument("--configs", default=DEFAULT, help="';'-separated skinny_matmul configs")
    parser.add_argument("--rounds", type=int, default=11)
    args = parser.parse_args()
    M = args.m
    N, K = (int(v) for v in args.nk.split("x"))
    configs = []
    for text in args.configs.split(";"):
        c = [int(v) for v in text.split(",")]
        configs.append((*c[:6], bool(c[6]), *c[7:]))
    for dt in (torch.bfloat16, torch.float16):
        a = torch.randn(M, K, device="cuda", dtype=dt)
        b = torch.randn(N, K, device="cuda", dtype=dt)

        def ref(a=a, b=b):
            return torch.matmul(a, b.T)

        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            ref()
            torch.cuda.synchronize()
        names = {e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA}
        print(f"{dt}: torch runs {sorted(names)}", flush=True)
        expect = ref().float()
        fns, labels = [ref], ["torch"]
        for c in configs:
            try:
                f = skinny_matmul(M, N, K, c, str(dt).split(".")[1])
                torch.testing.assert_close(f(a, b).float(), expect, rtol=2e-2, atol=2e-1)
            except Exception as e:  # noqa: BLE001 - reported, the others still run
                print(f"{c}: failed: {str(e).splitlines()[0]}", flush=True)
                continue
            fns.append(lambda f=f, a=a, b=b: f(a, b))
            labels.append(str(c))
        for p in range(2):
            t = interleaved_medians(fns, args.rounds, 20)
            for label, s in zip(labels, t):
                print(
                    f"{dt} pass {p} {label}: {s * 1e6:.2f} us, torch/this {t[0] / s:.3f}",
                    flush=True,
                )


if __name__ == "__main__":
    main()
