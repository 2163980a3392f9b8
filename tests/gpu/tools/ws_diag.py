"""Diagnoses a warp-specialized pipeline on the GPU: one small TMA GEMM per variant,
each in its own process with a timeout (a hang is reported, not waited out).
python tests/gpu/tools/ws_diag.py [variant]"""

import subprocess
import sys

VARIANTS = {
    "ws": ({}, []),
    "ws-no-setmaxnreg": ({}, ["-DTL_NO_SETMAXNREG"]),
    "no-ws": ({"tl.disable_warp_specialized": True}, []),
}


def run(name):
    import tilelang
    import tilelang.language as T
    import torch

    configs, flags = VARIANTS[name]
    M = N = K = 512

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(N // 128, M // 128, threads=128) as (bx, by):
            A_s = T.alloc_shared((128, 64), "float16")
            B_s = T.alloc_shared((64, 128), "float16")
            acc = T.alloc_fragment((128, 128), "float32")
            T.clear(acc)
            for k in T.Pipelined(K // 64, num_stages=3):
                T.copy(A[by * 128, k * 64], A_s)
                T.copy(B[k * 64, bx * 128], B_s)
                T.gemm(A_s, B_s, acc)
            T.copy(acc, C[by * 128, bx * 128])

    kernel = tilelang.compile(
        gemm, out_idx=[-1], target="cuda", pass_configs=configs, compile_flags=flags
    )
    src = kernel.get_kernel_source()
    print(
        name,
        "setmaxnreg" in src,
        "named_barrier" in src,
        "launch_bounds__(256, 1)" in src,
        flush=True,
    )
    a = torch.randn(M, K, device="cuda", dtype=torch.float16)
    b = torch.randn(K, N, device="cuda", dtype=torch.float16)
    c = kernel(a, b)
    torch.cuda.synchronize()
    err = (c - a.float() @ b.float()).abs().max().item()
    print(name, "ok, max error", err, flush=True)


if __name__ == "__main__":
    if len(sys.argv) > 1:
        run(sys.argv[1])
    else:
        for v in VARIANTS:
            try:
                r = subprocess.run(
                    [sys.executable, __file__, v],
                    check=False,
                    timeout=40,
                    capture_output=True,
                    text=True,
                )
                print(r.stdout.strip() or f"{v}: no output", r.stderr.strip()[-800:])
            except subprocess.TimeoutExpired as e:
                out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
                print(f"{v}: TIMEOUT (hang) after 40 s; output so far: {out.strip()}")
