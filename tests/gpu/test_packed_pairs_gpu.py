"""Packed pairs on a GPU (device/cuda/packed.cuh): the float16 / bfloat16 T.Parallel
runs and the T.Ramp pairs (T.add2 ...) that compute two lanes per instruction
(add.rn.f16x2, fma.rn.bf16x2 with 1 / -1 / -0 for bfloat16 add / sub / mul, max.f16x2
...; lane by lane for sm_75) give numpy / ml_dtypes' bits, each lane rounded once, over
ordinary and special values; and the pair conversions of device/cuda/vec.cuh give the
element conversion's bits."""

import pathlib
import sys

import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
import test_fma16
from test_packed_pairs import (
    LANE_OPS,
    OPS,
    M,
    elementwise,
    lane_pairs,
    lane_reference,
    operands,
    reference,
)
from test_pair_conversions import PAIRS, copy_cast, element_conversion, fragment_cast
from test_pair_conversions import values as conversion_values

TORCH = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}
# torch's and numpy's signed integer of the width, and the unsigned one compared
INT = {
    "float16": (torch.int16, np.int16, np.uint16),
    "bfloat16": (torch.int16, np.int16, np.uint16),
    "float32": (torch.int32, np.int32, np.uint32),
}


def to_gpu(x, dtype):
    return torch.from_numpy(np.ascontiguousarray(x).view(INT[dtype][1])).cuda().view(TORCH[dtype])


def check_bits(got, want, dtype):
    t, _, u = INT[dtype]
    bits = got.cpu().view(t).numpy().view(u)
    # A NaN is the GPU's canonical one (0x7fff), numpy's keeps the host's bits.
    nan = np.isnan(want.astype(np.float32))
    assert np.isnan(bits.view(want.dtype).astype(np.float32))[nan].all()
    np.testing.assert_array_equal(bits[~nan], want.view(u)[~nan])


def skip_unless_runs(arch):
    if arch == "sm_90a" and torch.cuda.get_device_capability()[0] != 9:
        pytest.skip("sm_90a code runs on an sm_90 GPU only")


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", list(OPS))
def test_pairs_give_numpy_bits(op, dtype, arch):
    skip_unless_runs(arch)
    a, b = operands(dtype, (M, 4), 11), operands(dtype, (M, 4), 12)
    c = torch.zeros((M, 4), dtype=TORCH[dtype], device="cuda")
    tilelang.compile(elementwise(op, dtype), target=f"cuda -arch={arch}")(
        to_gpu(a, dtype), to_gpu(b, dtype), c
    )
    check_bits(c, reference(op, a, b, dtype), dtype)


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
@pytest.mark.parametrize("op", list(LANE_OPS))
def test_ramp_pairs_give_numpy_bits(op, dtype, arch):
    skip_unless_runs(arch)
    a, b = operands(dtype, (2 * M,), 13), operands(dtype, (2 * M,), 14)
    c = torch.zeros(2 * M, dtype=TORCH[dtype], device="cuda")
    tilelang.compile(lane_pairs(op, dtype), target=f"cuda -arch={arch}")(
        to_gpu(a, dtype), to_gpu(b, dtype), c
    )
    check_bits(c, lane_reference(op, a, b, dtype), dtype)


# The signed integer of each width, in numpy and torch: the bits go to the GPU and back.
SIGNED = {
    1: (np.int8, torch.int8),
    2: (np.int16, torch.int16),
    4: (np.int32, torch.int32),
    8: (np.int64, torch.int64),
}


def bits_to_gpu(x, dtype):
    return (
        torch.from_numpy(np.ascontiguousarray(x).view(SIGNED[x.itemsize][0]))
        .cuda()
        .view(getattr(torch, dtype))
    )


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
@pytest.mark.parametrize("a, b, name", PAIRS, ids=[f"{a}-{b}" for a, b, _ in PAIRS])
def test_pair_conversions_give_the_element_bits(a, b, name, arch):
    skip_unless_runs(arch)
    x = conversion_values(a, positive=b == "float8_e8m0fnu")
    want = element_conversion(x, b)
    n, t = SIGNED[want.itemsize]
    for build in (copy_cast, fragment_cast):
        kernel = tilelang.compile(build(a, b), target=f"cuda -arch={arch}")
        assert f"tl::{name}>" in kernel.get_kernel_source()
        out = torch.zeros(want.shape, dtype=t, device="cuda")
        kernel(bits_to_gpu(x, a), out.view(getattr(torch, b)))
        np.testing.assert_array_equal(out.cpu().numpy(), want.view(n))


@pytest.mark.parametrize("arch", ["sm_75", "sm_80", "sm_90a"])
@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_fma_pairs_round_once(dtype, arch):
    """T.fma2 (fma.rn.f16x2 / fma.rn.bf16x2, software before sm_80 for bfloat16) and
    T.ieee_fmaf of 16-bit operands give the exact a * b + c rounded once, the ties that a
    rounding through float32 gets wrong included (tests/python/test_fma16.py's inputs),
    as the cpu target and the emulator do."""
    skip_unless_runs(arch)
    a, b, c = test_fma16.operands(dtype)
    want = test_fma16.reference(a, b, c, dtype)
    d = torch.zeros(test_fma16.N, dtype=TORCH[dtype], device="cuda")
    e = torch.zeros(test_fma16.N, dtype=TORCH[dtype], device="cuda")
    tilelang.compile(test_fma16.pair_kernel(dtype), target=f"cuda -arch={arch}")(
        to_gpu(a, dtype), to_gpu(b, dtype), to_gpu(c, dtype), d, e
    )
    check_bits(d, want, dtype)
    check_bits(e, want, dtype)
