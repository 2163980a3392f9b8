"""FlashAttention forward on the cuda target (examples/flash_attention.py) against
torch's scaled_dot_product_attention with the cuDNN backend, same run, A/B
interleaved medians of CUDA-event timings.

Shapes of issue 8: bfloat16 (FA_DTYPE=float16 for the other), B=8, H=16, S=4096,
D in {64, 128}, causal and not. FLOPs: 4 * B * H * S^2 * D (half of it when causal); floor at
D=128 non-causal: 0.55 ms at 1000 TFLOP/s. A few tile configurations are checked
against SDPA and timed briefly; the fastest is measured. On an H100/H200 the
"cuda" target is sm_90a, so both gemms run on wgmma (QK^T from shared memory, PV
with P in registers).

Run on a GPU machine: python bench/flash_attention_cuda.py
"""

import os
import statistics
import sys

import torch
from results import (
    best_interleaved,
    clocks_text,
    cuda_seconds,
    final_text,
    report,
    spread_text,
    torch_device,
)
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.functional import scaled_dot_product_attention

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from flash_attention import flash_attention, flash_attention_hopper

CASES = [
    (8, 16, 4096, 64, False),
    (8, 16, 4096, 64, True),
    (8, 16, 4096, 128, False),
    (8, 16, 4096, 128, True),
]
# (block_M, block_N, threads, num_stages, overlap): overlap=1 is the example's hand
# schedule (P V of one tile runs during the softmax of the next). The H200's best
# (bench/RESULTS.md): 128x128 with overlap at D=128, 192x128 with overlap on three
# consumer warpgroups at D=64 (it spilled P until P was cast in pairs, see
# docs/design/hopper.md, "P in pairs"); 128x256 does not fit 227 KB at D=128.
# ("hopper", block_M, block_N[, overlap]): flash_attention_hopper, the persistent
# hand-written schedule (one block per SM); its tiles run on block_M / 64 consumer
# warpgroups, and overlap=1 leaves P V in flight through the next softmax. Listed per
# head dim (HOPPER_CONFIGS): without the overlap it is slower at D=128 (bench/RESULTS.md,
# 0f3a69a), and 192 rows with the overlap spill at D=128.
HOPPER_CONFIGS = {
    64: [("hopper", 192, 128), ("hopper", 192, 128, 1)],
    128: [("hopper", 128, 128, 1)],
}
CONFIGS = [
    (192, 128, 384, 2, 1),
    (128, 128, 256, 2, 1),
    (128, 128, 256, 2, 0),
    (192, 128, 384, 2, 0),
    (128, 256, 256, 2, 0),
    (128, 192, 256, 2, 0),
]
# FA_CONFIGS="128,128,256,2,1;hopper,192,128,1" replaces both lists (for sweeps).
if os.environ.get("FA_CONFIGS"):
    HOPPER_CONFIGS = {}
    CONFIGS = [
        tuple(v if v == "hopper" else int(v) for v in c.split(","))
        for c in os.environ["FA_CONFIGS"].split(";")
    ]
DTYPE = os.environ.get("FA_DTYPE", "bfloat16")
ROUNDS, CALLS = 11, 10


def timed(fn):
    return cuda_seconds(fn, CALLS)


def main():
    sms = torch.cuda.get_device_properties(
        0
    ).multi_processor_count  # flash_attention_hopper's blocks
    rows = []
    for b, h, s, d, causal in CASES:
        q, k, v = (
            torch.randn(b, s, h, d, device="cuda", dtype=getattr(torch, DTYPE)) for _ in range(3)
        )
        # SDPA's own layout, made contiguous outside the timed region.
        qt, kt, vt = (x.transpose(1, 2).contiguous() for x in (q, k, v))

        def ref_fn(qt=qt, kt=kt, vt=vt, causal=causal):
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return scaled_dot_product_attention(qt, kt, vt, is_causal=causal)

        expect = ref_fn().transpose(1, 2).float()
        flop = 4 * b * h * s * s * d / (2 if causal else 1)
        tried = []  # (burst seconds, config, kernel)
        for cfg in HOPPER_CONFIGS.get(d, []) + CONFIGS:
            try:
                if cfg[0] == "hopper":
                    overlap = bool(cfg[3]) if len(cfg) > 3 else False
                    kernel = flash_attention_hopper(
                        b, h, s, d, causal, cfg[1], cfg[2], sms, DTYPE, overlap
                    )
                else:
                    kernel = flash_attention(
                        b, h, s, d, causal, *cfg[:4], dtype=DTYPE, overlap=bool(cfg[4])
                    )
                got = kernel(q, k, v).float()
            except Exception as e:  # noqa: BLE001 - a config that does not build is reported
                print(f"{(b, h, s, d, causal)} {cfg}: failed: {str(e).splitlines()[0]}")
                continue
            torch.testing.assert_close(got, expect, rtol=2e-2, atol=2e-2)
            secs = statistics.median(
                timed(lambda kern=kernel, q=q, k=k, v=v: kern(q, k, v)) for _ in range(3)
            )
            print(f"{(b, h, s, d, causal)} {cfg}: {flop / secs / 1e12:.1f} TFLOP/s")
            tried.append((secs, cfg, lambda kern=kernel, q=q, k=k, v=v: kern(q, k, v)))
        if not tried:
            continue
        ours, cfg, ref = best_interleaved(tried, ref_fn, ROUNDS, CALLS)
        o, r = flop / ours / 1e12, flop / ref / 1e12
        label = f"B{b} H{h} S{s} D{d} {'causal' if causal else 'non-causal'}"
        rows.append(
            f"| {label} | {cfg} | {o:.1f} | {r:.1f} | {o / r:.3f} | {spread_text()} | {clocks_text()} |"
        )
    report(
        "flash_attention_cuda",
        torch_device(),
        (
            f"FlashAttention forward, {DTYPE}, examples/flash_attention.py (the faster of the "
            f"two best listed configs by burst) vs SDPA's cuDNN backend; "
            f"{final_text(ROUNDS, CALLS)}"
        ),
        [
            "case",
            "config (block_M, block_N, threads, stages, overlap; or hopper, block_M, block_N[, overlap])",
            "tilelang (TFLOP/s)",
            "SDPA cuDNN (TFLOP/s)",
            "ratio",
            "spread",
            "clocks",
        ],
        rows,
    )


if __name__ == "__main__":
    main()
