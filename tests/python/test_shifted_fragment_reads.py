"""A T.Parallel loop over a fragment's whole shape that reads it at a shifted row
(`acc[i + s * 16, j]`, s an outer loop variable: DeepSeek v3.2's sparse_mla_bwd stores
its accumulator half at a time so) keeps the fragment in registers: each iteration runs
on the thread holding the element it reads (transform/align_shifted_fragment_reads.h).
Against numpy on the cpu target, the sm_80 / sm_90a emulators and the Metal emulator."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

BS, D, H = 32, 64, 64
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]


def split_store(shift_rows=BS // 2, also_plain=False):
    """acc = A^T B (a register gemm), then out = 2 * acc copied half a tile at a time
    through a shared tile, each half read from acc at a shifted row."""

    @T.prim_func
    def main(
        A: T.Tensor((H, BS), "float16"),
        B: T.Tensor((H, D), "float16"),
        O: T.Tensor((BS, D), "float32"),
    ):
        with T.Kernel(1, threads=128):
            A_s = T.alloc_shared((H, BS), "float16")
            B_s = T.alloc_shared((H, D), "float16")
            acc = T.alloc_fragment((BS, D), "float32")
            half = T.alloc_shared((BS // 2, D), "float32")
            T.copy(A, A_s)
            T.copy(B, B_s)
            T.gemm(A_s, B_s, acc, transpose_A=True, clear_accum=True)
            for s in range(2):
                for i, j in T.Parallel(BS, D):
                    if i < BS // 2:
                        if also_plain:
                            half[i, j] = acc[i + s * shift_rows, j] + acc[i, j] * 0
                        else:
                            half[i, j] = acc[i + s * shift_rows, j]
                for i, j in T.Parallel(BS // 2, D):
                    O[i + s * (BS // 2), j] = half[i, j] * 2

    return main


def operands():
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, (H, BS)).astype(np.float16)
    b = rng.integers(-2, 3, (H, D)).astype(np.float16)
    return a, b, (a.astype(np.float32).T @ b.astype(np.float32)) * 2


@pytest.mark.parametrize("target", TARGETS)
def test_a_shifted_read_keeps_the_accumulator_in_registers(target):
    kernel = tilelang.compile(split_store(), target=target)
    a, b, ref = operands()
    out = np.zeros((BS, D), np.float32)
    kernel(a, b, out)
    np.testing.assert_array_equal(out, ref)
    if target.startswith("cuda"):
        source = kernel.get_kernel_source()
        assert "i = tl::floormod<int32_t>((i_held - (s * 16)), 32)" in source
        assert "TL_SMEM(acc" not in source  # in registers, not shared memory


@pytest.mark.parametrize("target", TARGETS[1:3])
def test_a_loop_that_also_reads_the_plain_position_is_left_as_it_was(target):
    """Reads at two positions of the fragment: no single thread holds both, so the
    fragment goes to shared memory as before, and the result is the same."""
    kernel = tilelang.compile(split_store(also_plain=True), target=target)
    assert "_held" not in kernel.get_kernel_source()
    a, b, ref = operands()
    out = np.zeros((BS, D), np.float32)
    kernel(a, b, out)
    np.testing.assert_array_equal(out, ref)
