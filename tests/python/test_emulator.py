"""The CUDA emulator: the exact CUDA source of a kernel, compiled for the CPU with
host shims (device/emu), its threads run as fibers. Results are compared with numpy,
so CI checks the CUDA code generator's numbers without a GPU; the Python examples
run through it too."""

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import tilelang
from test_cpu_kernels import gemm_factory
from test_threads import mixed_tile_ops_and_threads, neighbour_sum

TARGET = "cuda -arch=sm_80 -emulate"
rng = np.random.default_rng(3)


def test_gemm_with_tails_runs_the_cuda_source():
    kernel = tilelang.compile(gemm_factory(200, 130, 70, 64, 64, 32), out_idx=[-1], target=TARGET)
    assert "__global__" in kernel.get_kernel_source()
    a = rng.standard_normal((200, 70)).astype(np.float16)
    b = rng.standard_normal((70, 130)).astype(np.float16)
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(kernel(a, b), ref, rtol=1e-3, atol=1e-3)


def test_barriers_between_threads():
    kernel = tilelang.compile(neighbour_sum(200), out_idx=[-1], target=TARGET)
    a = rng.standard_normal(200).astype(np.float32)
    padded = np.zeros(256, np.float32)
    padded[:200] = a * 2
    blocks = padded.reshape(-1, 64)
    ref = (np.roll(blocks, -1, axis=1) + blocks).reshape(-1)[:200]
    np.testing.assert_allclose(kernel(a), ref, rtol=1e-6)


def test_block_wide_ops_between_per_thread_code():
    kernel = tilelang.compile(mixed_tile_ops_and_threads(20, 16), out_idx=[-1], target=TARGET)
    a = rng.standard_normal((20, 16)).astype(np.float32)
    scale = (np.arange(20) % 8 + 1)[:, None]
    np.testing.assert_allclose(kernel(a), a * scale + 1, rtol=1e-5, atol=1e-5)


def test_switch_turns_cuda_targets_into_emulated_ones(monkeypatch):
    monkeypatch.setattr(tilelang.env, "_emulate", True)
    kernel = tilelang.compile(neighbour_sum(64), out_idx=[-1], target="cuda -arch=sm_90")
    assert kernel.target == "cuda -arch=sm_90 -emulate"
    a = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.roll(a * 2, -1) + a * 2, rtol=1e-6)


EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))
NOT_ON_CUDA_YET = {"fp8_quant"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_emulated(path):
    env = dict(os.environ, TILELANG_EMULATE="1")
    env.pop("TILELANG_DEFAULT_TARGET", None)
    out = subprocess.run(
        [sys.executable, str(path)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if path.stem in NOT_ON_CUDA_YET:
        # The cuda target has no fp8 types yet (issue 4): the example must stop with
        # the clear error, not compute something wrong.
        assert out.returncode != 0
        assert "float8_e4m3fn is not supported by the cuda target yet" in out.stderr, out.stderr
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert "match" in out.stdout, out.stdout


def test_fp8_on_cuda_is_a_clear_error():
    import tilelang.language as T

    @T.prim_func
    def cast8(A: T.Tensor((16,), "float32"), B: T.Tensor((16,), "float8_e4m3fn")):
        with T.Kernel(1, threads=16):
            for i in T.Parallel(16):
                B[i] = A[i]

    with pytest.raises(
        tilelang.TileLangError, match="float8_e4m3fn is not supported by the cuda target yet"
    ):
        tilelang.compile(cast8, target=TARGET)


def test_print_inside_an_emulated_kernel(capfd):
    import tilelang.language as T

    @T.prim_func
    def show(A: T.Tensor((2, 3), "float32")):
        with T.Kernel(1, threads=4):
            s = T.alloc_shared((2, 3), "float32")
            T.copy(A, s)
            T.print(s, msg="tile")
            T.print(A[1, 2], msg="val")

    kernel = tilelang.compile(show, target=TARGET)
    assert "printf" in kernel.get_kernel_source() or "debug_print" in kernel.get_kernel_source()
    kernel(np.arange(6, dtype=np.float32).reshape(2, 3))
    out = capfd.readouterr().out
    assert "[block (0, 0, 0), thread (0, 0, 0)] tile: buffer s (float32, shape (2, 3))" in out
    assert "s[1, :] = 3 4 5" in out
    assert all(f"thread ({t}, 0, 0)] val: 5" in out for t in range(4))


def rotate(N, with_barrier):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=N):
            tx = T.get_thread_binding()
            S = T.alloc_shared((N,), "float32")
            S[tx] = A[tx]  # RACE-WRITE
            if with_barrier:
                T.sync_threads()
            B[tx] = S[(tx + 1) % N]  # RACE-READ

    return main


def test_race_detector_reports_a_missing_barrier():
    kernel = tilelang.compile(rotate(32, with_barrier=False), out_idx=[-1], target=TARGET)
    src = pathlib.Path(__file__).read_text().splitlines()
    write_line = next(i + 1 for i, t in enumerate(src) if t.rstrip().endswith("# RACE-WRITE"))
    read_line = next(i + 1 for i, t in enumerate(src) if t.rstrip().endswith("# RACE-READ"))
    with pytest.raises(tilelang.TileLangError) as err:
        kernel(rng.standard_normal(32).astype(np.float32))
    message = str(err.value)
    assert "kernel 'main': shared-memory race on buffer 'S'" in message
    assert (
        f"test_emulator.py:{write_line}" in message and f"test_emulator.py:{read_line}" in message
    )
    assert "add T.sync_threads()" in message


def test_the_same_kernel_with_the_barrier_passes():
    kernel = tilelang.compile(rotate(32, with_barrier=True), out_idx=[-1], target=TARGET)
    a = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), np.roll(a, -1))
