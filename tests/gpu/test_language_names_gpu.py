"""Names of tests/python/test_ieee_rounding.py and test_language_names.py on a real
GPU: the directed IEEE roundings (CUDA's __fadd_rz family, float64 fma too) and the
correctly rounded reciprocal square root (__frsqrt_rn) bit for bit against the same
exact references, and the block votes (__syncthreads_count ...) with the PDL
markers (griddepcontrol on sm_90) against numpy."""

import pathlib
import sys

import numpy as np
import pytest
import tilelang
import tilelang.language as T

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / "python"))
import test_ieee_rounding as ieee


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_directed_rounding_bit_exact_on_the_gpu(dtype):
    func, rows = ieee.kernel_of(dtype, list(ieee.OPS))
    kernel = tilelang.compile(func, out_idx=[1], target="cuda")
    assert "tl::ieee_add_rz(" in kernel.get_kernel_source()  # __fadd_rz in tl_cuda.cuh
    v = ieee.inputs(dtype, np.random.default_rng(7))
    out = kernel(torch.from_numpy(v).cuda()).cpu().numpy()
    bits = np.uint32 if dtype == "float32" else np.uint64
    for r, (op, mode) in enumerate(rows):
        ref = np.array(
            [ieee.reference(op, mode, dtype, *v[:, i]) for i in range(ieee.N)], dtype=dtype
        )
        same = (out[r].view(bits) == ref.view(bits)) | (np.isnan(out[r]) & np.isnan(ref))
        bad = np.flatnonzero(~same)
        assert bad.size == 0, (
            f"{op} {mode}: inputs {v[:, bad[0]].tolist()}, got {out[r][bad[0]]!r}, expected {ref[bad[0]]!r}"
        )


def test_reciprocal_sqrt_correctly_rounded_on_the_gpu():
    """T.ieee_frsqrt is __frsqrt_rn: bit for bit the exact choice, as the software of the
    cpu target and the emulator."""
    n = 1024

    @T.prim_func
    def main(V: T.Tensor((n,), "float32"), O: T.Tensor((n,), "float32")):
        with T.Kernel(n // 128, threads=128) as bx:
            i = bx * 128 + T.get_thread_binding()
            O[i] = T.ieee_frsqrt(V[i])

    rng = np.random.default_rng(5)
    v = np.concatenate(
        [
            np.abs(rng.standard_normal(n // 2)).astype(np.float32),
            rng.integers(0, 2**31 - 1, n // 2, dtype=np.uint32).view(np.float32),
        ]
    )
    v[:6] = [0.0, -0.0, np.inf, -1.0, np.float32(1.4e-45), np.finfo(np.float32).max]
    out = tilelang.compile(main, out_idx=[1], target="cuda")(torch.from_numpy(v).cuda())
    got = out.cpu().numpy()
    ref = np.array([ieee.rsqrt_reference(x) for x in v], dtype=np.float32)
    same = (got.view(np.uint32) == ref.view(np.uint32)) | (np.isnan(got) & np.isnan(ref))
    assert same.all(), [(v[i], got[i], ref[i]) for i in np.flatnonzero(~same)[:4]]


@pytest.mark.parametrize("threads", [32, 96])
def test_block_votes_and_pdl_on_the_gpu(threads):
    @T.prim_func
    def main(A: T.Tensor((threads,), "float32"), O: T.Tensor((3, threads), "int32")):
        with T.Kernel(1, threads=threads):
            T.pdl_sync()
            tx = T.get_thread_binding()
            O[0, tx] = T.syncthreads_count(A[tx] > 0)
            O[1, tx] = T.syncthreads_and(A[tx] > -10)
            O[2, tx] = T.syncthreads_or(A[tx] > 100)
            T.pdl_trigger()

    kernel = tilelang.compile(main, out_idx=[1], target="cuda")
    a = torch.randn(threads, device="cuda")
    out = kernel(a).cpu().numpy()
    np.testing.assert_array_equal(out[0], np.full(threads, int((a > 0).sum())))
    np.testing.assert_array_equal(out[1], np.ones(threads))
    np.testing.assert_array_equal(out[2], np.zeros(threads))
