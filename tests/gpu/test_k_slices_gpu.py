"""Register gemms on K slices of shared tiles on a real GPU: the kernels of
tests/python/test_wgmma_k_slices.py (loop-variable K slices of float16 / bfloat16
tiles, every transpose, 1 and 2 warpgroups, T.wgmma_gemm, pipelined, register A,
tf32 and fp8) for the GPU's own arch (wgmma on sm_90a, mma.sync on sm_80 and up),
exact against torch on small integers; and TileLang's sliced-operand kernel
(language/wgmma_gemm) against its own reference."""

import pathlib
import sys

import numpy as np
import pytest
import tilelang

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
from test_wgmma_k_slices import MN_SLICES, SHAPES, mn_sliced_gemm, operands, sliced_gemm

HOPPER = torch.cuda.get_device_capability() == (9, 0)


def run(*args, **kw):
    f, a_shape, b_shape, reference = sliced_gemm(*args, **kw)
    kernel = tilelang.compile(f, target="cuda")
    a, b = operands(a_shape, b_shape, kw.get("dtype", "float16"))
    ta = torch.from_numpy(
        a.view(np.uint8 if a.itemsize == 1 else np.int16 if a.itemsize == 2 else np.int32)
    )
    tb = torch.from_numpy(
        b.view(np.uint8 if b.itemsize == 1 else np.int16 if b.itemsize == 2 else np.int32)
    )
    dt = {"float16": torch.float16, "bfloat16": torch.bfloat16, "float32": torch.float32}.get(
        kw.get("dtype", "float16"), torch.float8_e4m3fn
    )
    c = torch.zeros(args[0], args[1], device="cuda", dtype=torch.float32)
    kernel(ta.cuda().view(dt), tb.cuda().view(dt), c)
    np.testing.assert_array_equal(c.cpu().numpy(), reference(a, b))
    src = kernel.get_kernel_source()
    if HOPPER and kw.get("step") is None:
        assert "tl::wgmma_gemm_" in src
    return src


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("trans_A", [False, True])
@pytest.mark.parametrize("trans_B", [False, True])
def test_loop_k_slices_every_transpose(dtype, trans_A, trans_B):
    run(64, 64, 64, 16, dtype=dtype, trans_A=trans_A, trans_B=trans_B)


@pytest.mark.parametrize("M,N,K,kt,threads", SHAPES)
def test_loop_k_slices_shapes(M, N, K, kt, threads):
    run(M, N, K, kt, threads=threads)


@pytest.mark.parametrize(
    "kw",
    [
        {"explicit": True},
        {"pipelined": True},
        {"a_regs": True},
        {"step": 8},
        {"dtype": "float32", "K": 32, "kt": 8},
        {"dtype": "float8_e4m3fn", "K": 128, "kt": 32},
    ],
    ids=["wgmma_gemm", "pipelined", "register_a", "unaligned", "tf32", "fp8"],
)
def test_k_slice_forms(kw):
    kw = dict(kw)
    if kw.get("explicit") and not HOPPER:
        pytest.skip("T.wgmma_gemm needs sm_90a")
    K, kt = kw.pop("K", 64), kw.pop("kt", 16)
    run(64, 64, K, kt, **kw)


@pytest.mark.parametrize("m0,n0,k_loop", MN_SLICES)
def test_m_and_n_slices(m0, n0, k_loop):
    kernel = tilelang.compile(mn_sliced_gemm(m0, n0, k_loop), target="cuda")
    g = torch.Generator().manual_seed(6)
    a = torch.randint(-3, 4, (128, 64), generator=g).half().cuda()
    b = torch.randint(-3, 4, (64, 128), generator=g).half().cuda()
    c = torch.zeros(64, 64, device="cuda")
    kernel(a, b, c)
    ref = a[m0 : m0 + 64].float() @ b[:, n0 : n0 + 64].float()
    torch.testing.assert_close(c, ref, rtol=0, atol=0)


@pytest.mark.parametrize("slices", [2, 4])
@pytest.mark.parametrize("ws", [True, False])
@pytest.mark.parametrize(
    "M,N,K,bM,threads", [(256, 256, 2048, 128, 256), (192, 320, 1152, 64, 128)]
)
def test_k_slices_of_a_pipelined_tile_in_flight(slices, ws, M, N, K, bM, threads):
    """bench/sliced_gemm_cuda.py's form: each pipelined tile's K slices issued back to back
    and left in flight into the next step (Pending = slices on sm_90a), the stages
    released after the next step's slices; exact against numpy on small integers."""
    from test_wgmma_k_slices import tile_sliced_gemm

    f = tile_sliced_gemm(M, N, K, bM, 128, 128, slices, threads=threads)
    configs = {} if ws else {"tl.disable_warp_specialized": True}
    kernel = tilelang.compile(f, target="cuda", pass_configs=configs)
    if HOPPER:
        assert f", false, false, {slices}, " in kernel.get_kernel_source()
    rng = np.random.default_rng(3)
    a = rng.integers(-3, 4, (M, K)).astype(np.float16)
    b = rng.integers(-3, 4, (K, N)).astype(np.float16)
    c = torch.zeros(M, N, device="cuda", dtype=torch.float32)
    kernel(torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda(), c)
    np.testing.assert_array_equal(c.cpu().numpy(), a.astype(np.float32) @ b.astype(np.float32))
