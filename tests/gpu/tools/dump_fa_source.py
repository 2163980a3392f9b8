"""Writes the CUDA source of examples/flash_attention.py for one config, for a look
at what ptxas makes of it (nvcc -cubin -Xptxas -v, wgmma serialization warnings).
usage: dump_fa_source.py OUT.cu D causal(0/1) block_M block_N threads stages overlap(0/1)"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "examples"))
from flash_attention import flash_attention

out, d, causal, bm, bn, threads, stages, overlap = sys.argv[1:9]
kernel = flash_attention(
    8,
    16,
    4096,
    int(d),
    bool(int(causal)),
    int(bm),
    int(bn),
    int(threads),
    int(stages),
    dtype="bfloat16",
    overlap=bool(int(overlap)),
)
with open(out, "w") as f:
    f.write(kernel.get_kernel_source())
