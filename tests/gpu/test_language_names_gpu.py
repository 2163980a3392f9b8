"""Names of tests/python/test_ieee_rounding.py and test_language_names.py on a real
GPU: the directed IEEE roundings (CUDA's __fadd_rz family) bit for bit against the
same exact reference, and the block votes (__syncthreads_count ...) with the PDL
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
    ops = [op for op in ieee.OPS if not (op == "fmaf" and dtype == "float64")]
    func, rows = ieee.kernel_of(dtype, ops)
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
