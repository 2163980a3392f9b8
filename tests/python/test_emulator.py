"""The CUDA emulator: the exact CUDA source of a kernel, compiled for the CPU with
host shims (device/emu), its threads run as fibers. Results are compared with numpy,
so CI checks the CUDA code generator's numbers without a GPU; the Python examples
run through it too."""

import os
import pathlib
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_cpu_kernels import gemm_factory
from test_e8m0_rounding import ceil_reference
from test_fp8_saturation import satfinite_reference
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
    monkeypatch.setattr(sys.modules["tilelang.env"], "_emulate", True)
    kernel = tilelang.compile(neighbour_sum(64), out_idx=[-1], target="cuda -arch=sm_90")
    assert kernel.target == "cuda -arch=sm_90 -emulate"
    a = rng.standard_normal(64).astype(np.float32)
    np.testing.assert_allclose(kernel(a), np.roll(a * 2, -1) + a * 2, rtol=1e-6)


EXAMPLES = sorted((pathlib.Path(__file__).parents[2] / "examples").glob("*.py"))


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
    assert out.returncode == 0, out.stdout + out.stderr
    assert "match" in out.stdout, out.stdout


# Metal has no 8-bit floats: these examples stop with a clear error there.
METAL_REFUSES = {"fp8_gemm": "not supported on Metal", "fp8_quant": "not supported on Metal"}


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
def test_example_runs_emulated_on_metal(path):
    env = dict(os.environ, TILELANG_EMULATE="1", TILELANG_DEFAULT_TARGET="metal")
    out = subprocess.run(
        [sys.executable, str(path)],
        check=False,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    if path.stem in METAL_REFUSES:
        assert out.returncode != 0 and METAL_REFUSES[path.stem] in out.stderr, out.stderr
        return
    assert out.returncode == 0, out.stdout + out.stderr
    assert "match" in out.stdout, out.stdout


FP8 = ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"]


def fp8_conversions(name, n):
    """X (float32) -> Q (`name`), and every code C of `name` -> F (float32)."""
    import tilelang.language as T

    @T.prim_func
    def main(
        X: T.Tensor((n,), "float32"),
        C: T.Tensor((256,), name),
        Q: T.Tensor((n,), name),
        F: T.Tensor((256,), "float32"),
    ):
        with T.Kernel(n // 256, threads=256) as bx:
            for i in T.Parallel(256):
                Q[bx * 256 + i] = X[bx * 256 + i]
                if bx == 0:
                    F[i] = C[i]

    return main


def fp8_inputs(name):
    """float32 values that probe every rounding decision of `name`: each finite value,
    each midpoint between neighbours (a tie) and the floats either side of it, the
    overflow edge, specials, float32 subnormals and random bit patterns; padded with
    random normals to a multiple of 256."""
    dt = np.dtype(getattr(ml_dtypes, name))
    with np.errstate(invalid="ignore"):
        v = np.arange(256, dtype=np.uint8).view(dt).astype(np.float64)
    v = np.unique(v[np.isfinite(v)])
    top = v[-1] + (v[-1] - v[-2]) / 2  # halfway to the next (unrepresentable) value
    ties = np.concatenate([(v[:-1] + v[1:]) / 2, [top]]).astype(np.float32)  # exact
    ties = np.concatenate([ties, -ties])
    special = [0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan, 1e-45, -1e-45, 1e-40, 3.4e38, -3.4e38]
    random_bits = rng.integers(0, 1 << 32, 20_000, dtype=np.uint64).astype(np.uint32)
    nan_bits = np.array([0x7F800001, 0xFFC00001, 0x7FFFFFFF], np.uint32)
    parts = [
        v.astype(np.float32),
        -v.astype(np.float32),
        ties,
        np.nextafter(ties, np.float32(np.inf)),
        np.nextafter(ties, np.float32(-np.inf)),
        np.array(special, np.float32),
        random_bits.view(np.float32),
        nan_bits.view(np.float32),
    ]
    x = np.concatenate(parts)
    pad = rng.standard_normal(-x.size % 256).astype(np.float32) * 100
    return np.concatenate([x, pad])


def check_fp8_conversions(name, run):
    """`run(x, codes)` converts with the CUDA header and returns (q, f); both must be
    bit for bit those of ml_dtypes' casts (NaN signs and payloads included), except that
    float -> e4m3fn / e5m2 saturates as cvt.rn.satfinite does (test_fp8_saturation.py)
    and float -> e8m0 rounds up as CUDA's __nv_fp8_e8m0 does (test_e8m0_rounding.py)."""
    x = fp8_inputs(name)
    codes = np.arange(256, dtype=np.uint8).view(getattr(ml_dtypes, name))
    q, f = run(x, codes)
    with np.errstate(invalid="ignore", over="ignore"):
        want_q = x.astype(codes.dtype).view(np.uint8)
        want_f = codes.astype(np.float32).view(np.uint32)
    if name in ("float8_e4m3fn", "float8_e5m2"):
        want_q = satfinite_reference(x, name)
    if name == "float8_e8m0fnu":
        want_q = ceil_reference(x)  # CUDA's __nv_fp8_e8m0 rule (test_e8m0_rounding.py)
    bad = np.nonzero(q.view(np.uint8) != want_q)[0]
    assert bad.size == 0, (
        f"float32 -> {name}: {bad.size} of {x.size} differ from the reference, e.g. "
        f"{x[bad[:4]]!r}: got {q.view(np.uint8)[bad[:4]]}, expected {want_q[bad[:4]]}"
    )
    bad = np.nonzero(f.view(np.uint32) != want_f)[0]
    assert bad.size == 0, (
        f"{name} -> float32: codes {bad[:4]} give bits {f.view(np.uint32)[bad[:4]]}, "
        f"ml_dtypes {want_f[bad[:4]]}"
    )


@pytest.mark.parametrize("name", FP8)
def test_fp8_conversions_of_the_cuda_header_are_bit_exact(name):
    """device/cuda/tl_cuda.cuh's fp8 types (the software path; sm_89's cvt is checked
    by tests/gpu) against ml_dtypes, as the cpu target is, except for the saturating
    e4m3fn / e5m2 conversions."""

    def run(x, codes):
        kernel = tilelang.compile(fp8_conversions(name, x.size), target=TARGET)
        assert f"tl::{name}_t" in kernel.get_kernel_source()
        q, f = np.zeros(x.size, codes.dtype), np.zeros(256, np.float32)
        kernel(x, codes, q, f)
        return q, f

    check_fp8_conversions(name, run)


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
            if with_barrier:
                S[tx] = A[tx]
                T.sync_threads()
                B[tx] = S[(tx + 1) % N]
            elif tx % 2 == 0:
                # The compiler places no barrier under a condition on the thread index
                # (one there would hang the threads that skip the branch).
                S[tx] = A[tx]  # RACE-WRITE
                B[tx] = S[(tx + 2) % N]  # RACE-READ

    return main


@pytest.mark.parametrize("target", [TARGET, "metal -emulate"])
def test_race_detector_reports_a_missing_barrier(target):
    kernel = tilelang.compile(rotate(32, with_barrier=False), out_idx=[-1], target=target)
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


@pytest.mark.parametrize("target", [TARGET, "metal -emulate"])
def test_the_kernel_with_the_barrier_passes(target):
    kernel = tilelang.compile(rotate(32, with_barrier=True), out_idx=[-1], target=target)
    a = rng.standard_normal(32).astype(np.float32)
    np.testing.assert_array_equal(kernel(a), np.roll(a, -1))


@pytest.mark.parametrize("target", [TARGET, "cuda -arch=sm_90a -emulate"])
def test_a_128_cubed_fp16_gemm_runs_emulated_in_under_5_seconds(target):
    import time

    import tilelang.language as T

    @T.prim_func
    def gemm(
        A: T.Tensor((128, 128), "float16"),
        B: T.Tensor((128, 128), "float16"),
        C: T.Tensor((128, 128), "float32"),
    ):
        with T.Kernel(2, 2, threads=128) as (bx, by):
            A_s = T.alloc_shared((64, 32), "float16")
            B_s = T.alloc_shared((32, 64), "float16")
            C_f = T.alloc_fragment((64, 64), "float32")
            T.clear(C_f)
            for k in T.Pipelined(4, num_stages=2):
                T.copy(A[by * 64, k * 32], A_s)
                T.copy(B[k * 32, bx * 64], B_s)
                T.gemm(A_s, B_s, C_f)
            T.copy(C_f, C[by * 64, bx * 64])

    kernel = tilelang.compile(gemm, target=target)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 128)).astype(np.float16)
    c = np.zeros((128, 128), np.float32)
    start = time.perf_counter()
    kernel(a, b, c)
    elapsed = time.perf_counter() - start
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-3, atol=1e-3)
    assert elapsed < 5, f"the emulated 128^3 gemm took {elapsed:.2f} s"


def one_slot(same_value):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((32,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            S = T.alloc_shared((1,), "float32")
            if same_value:
                S[0] = A[0]  # every thread stores the same value
            else:
                S[0] = A[tx]  # DIFFERENT-VALUES
            B[tx] = S[0]

    return main


@pytest.mark.parametrize("target", [TARGET, "metal -emulate"])
def test_threads_storing_the_same_value_are_no_race(target):
    a = rng.standard_normal(32).astype(np.float32)
    b = tilelang.compile(one_slot(True), out_idx=[-1], target=target)(a)
    np.testing.assert_array_equal(b, np.full(32, a[0]))
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(one_slot(False), out_idx=[-1], target=target)(a)
    src = pathlib.Path(__file__).read_text().splitlines()
    line = next(i + 1 for i, t in enumerate(src) if t.rstrip().endswith("# DIFFERENT-VALUES"))
    message = str(err.value)
    assert "shared-memory race on buffer 'S'" in message and "writes it at" in message, message
    assert f"test_emulator.py:{line}" in message, message


def group_flags(read_own):
    import tilelang.language as T

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((32,), "float32")):
        with T.Kernel(1, threads=64):
            tx = T.get_thread_binding()
            S = T.alloc_shared((4,), "float32")
            # One warp of two (a producer): no block barrier can go in its branch.
            if tx < 32:
                S[tx // 8] = A[tx // 8]  # 8 threads store each flag, all the same value
                if read_own:
                    B[tx] = S[tx // 8]  # each reads back the flag it stored
                else:
                    B[tx] = S[(tx // 8 + 1) % 4]  # OTHER-GROUP

    return main


@pytest.mark.parametrize("target", [TARGET, "metal -emulate"])
def test_a_thread_reading_back_a_value_its_group_stored_is_no_race(target):
    """DeepSeek v3.2's sparse_mla_fwd_pipelined producer: 8 threads store one flag and
    each branches on it. A thread that stored the element reads what it stored (every
    store of the epoch wrote the same value, or the same-value check reports it); one
    that did not store it still races with the stores."""
    a = rng.standard_normal(4).astype(np.float32)
    b = tilelang.compile(group_flags(True), out_idx=[-1], target=target)(a)
    np.testing.assert_array_equal(b, np.repeat(a, 8))
    with pytest.raises(tilelang.TileLangError, match="shared-memory race on buffer 'S'"):
        tilelang.compile(group_flags(False), out_idx=[-1], target=target)(a)


def divergent_barrier_kernel(diverge):
    @T.prim_func
    def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=64):  # MARK-divergent-kernel
            S = T.alloc_shared((64,), "float32")
            tx = T.get_thread_binding()
            S[tx] = A[tx]
            if diverge:  # noqa: SIM102 - a trace-time switch around a kernel branch
                if tx < 32:
                    T.sync_threads()
            T.sync_threads()
            B[tx] = S[63 - tx]

    return main


def test_divergent_barrier_is_reported_with_its_kernel_lines():
    """A T.sync_threads() that only some threads of a block reach (the others waiting at
    the next one) is reported, as the Metal emulator reports threadgroup divergence; the
    same kernel without the branch runs."""
    a = rng.standard_normal(64).astype(np.float32)
    b = np.zeros(64, np.float32)
    tilelang.compile(divergent_barrier_kernel(False), target=TARGET)(a, b)
    np.testing.assert_array_equal(b, a[::-1])
    kernel = tilelang.compile(divergent_barrier_kernel(True), target=TARGET)
    lines = kernel.get_kernel_source().splitlines()
    barrier_lines = [i + 1 for i, line in enumerate(lines) if line.strip() == "__syncthreads();"]
    assert len(barrier_lines) == 2
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(a, b)
    first, second = barrier_lines
    kernel_line = next(
        i + 1
        for i, text in enumerate(pathlib.Path(__file__).read_text().splitlines())
        if text.rstrip().endswith("# MARK-divergent-kernel")
    )
    # The user's T.Kernel line first, then the generated source's barrier lines.
    assert str(info.value).split("\n")[0] == (
        f"{__file__}:{kernel_line}: "
        f"kernel 'main': divergent __syncthreads(): thread 0 waits at the barrier of line {first} "
        f"and thread 32 at the one of line {second} of the kernel source (kernel.get_kernel_source()); "
        "every thread of a block must reach the same T.sync_threads() / __syncthreads(): move it out "
        "of the branch on the thread index, or use T.sync_threads(id, count) of the branch's threads "
        "(block (0, 0, 0))"
    )
