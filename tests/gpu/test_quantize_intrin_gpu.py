"""tilelang.quantize's decoders on the present GPU (their PTX path): the kernel of
tests/python/test_quantize_intrin.py that calls every decoder must give, bit for bit,
the numpy decoders there, as the cpu target and the emulator do; interleave_weight
takes torch tensors on the GPU and keeps them there."""

import os
import sys

import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
sys.path.insert(
    0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python")
)
from test_quantize_intrin import (
    F16_CASES,
    INT_CASES,
    MXFP_CASES,
    THREADS,
    check_all,
    every_decoder,
    inputs,
)
from tilelang.quantize import interleave_weight


def to_torch(a):
    return torch.from_numpy(np.ascontiguousarray(a)).cuda()


def test_every_decoder_matches_numpy_bit_for_bit_on_the_gpu():
    cap = torch.cuda.get_device_capability()
    if cap < (8, 0):
        pytest.skip("the decoders' PTX (fma.rn.bf16x2) needs sm_80 or newer")
    ins = inputs()
    args = [to_torch(a) for a in ins]  # ZQ's float16 are raw small integers: bits kept
    O16 = torch.zeros((len(F16_CASES), THREADS, 8), dtype=torch.float16, device="cuda")
    O8 = torch.zeros((len(INT_CASES), THREADS, 16), dtype=torch.int8, device="cuda")
    OB = torch.zeros((len(MXFP_CASES), THREADS, 16), dtype=torch.bfloat16, device="cuda")
    kernel = tilelang.compile(every_decoder(), target="cuda")
    assert "lop3.b32" in kernel.get_kernel_source()
    kernel(*args, O16, O8, OB)
    torch.cuda.synchronize()
    import ml_dtypes

    outs = (
        O16.cpu().numpy(),
        O8.cpu().numpy(),
        OB.view(torch.int16).cpu().numpy().view(np.uint16).view(ml_dtypes.bfloat16),
    )
    check_all(ins, outs)


@pytest.mark.parametrize("target", ["float16", "int8"])
@pytest.mark.parametrize("nbits", [4, 2, 1])
def test_interleave_weight_takes_gpu_tensors(nbits, target):
    rng = np.random.default_rng(3)
    natural = rng.integers(-128, 128, (4, 32)).astype(np.int8)
    got = interleave_weight(to_torch(natural), nbits, target)
    assert isinstance(got, torch.Tensor) and got.is_cuda and got.dtype == torch.int8
    np.testing.assert_array_equal(got.cpu().numpy(), interleave_weight(natural, nbits, target))
    as_i32 = interleave_weight(to_torch(natural).view(torch.int32), nbits, target)
    assert as_i32.shape == (4, 32) and torch.equal(as_i32, got)
