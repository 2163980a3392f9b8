"""Atomic adds between memories on the cuda target: a region atomic
(`T.atomic_add(C[...], C_shared)`) is spread over the block's threads, and runs of
consecutive float32 / float16 / bfloat16 elements go as one tl::AtomicAddx2 / x4
(TileLang's names; one vector reduction on the GPU) where the addresses allow, as do
per-element atomics in a T.Parallel loop over memory and T.atomic_addx2 / x4. Run in
the CUDA emulator against numpy; several blocks add into the same elements, with
whole numbers so that any order of the adds gives the exact sum."""

import os
import re
import subprocess

import numpy as np
import pytest
import tilelang
import tilelang.language as T
from test_examples_cuda_source import nvcc  # noqa: F401  (the fixture)
from tilelang import _native

# sm_80: on sm_90 a region atomic of a whole shared tile is a TMA reduce-add instead.
EMU = "cuda -arch=sm_80 -emulate"


def body(kernel):
    src = kernel.get_kernel_source()
    return src[src.find("__global__") : src.find("#ifdef TL_EMULATE")]


def whole(shape, dtype, seed):
    return np.random.default_rng(seed).integers(-8, 9, shape).astype(dtype)


def region_atomic(M, N, bm, bn, K, dtype, acc, threads=128, order="relaxed"):
    """K blocks along z each add a tile of A (through shared memory) into C."""

    @T.prim_func
    def main(A: T.Tensor((K, M, N), dtype), C: T.Tensor((M, N), acc)):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), K, threads=threads) as (bx, by, bz):
            S = T.alloc_shared((bm, bn), dtype)
            T.copy(A[bz, bx * bm, by * bn], S)
            T.atomic_add(C[bx * bm, by * bn], S, memory_order=order)

    return main


@pytest.mark.parametrize(
    "dtype, acc, width",
    [
        ("float32", "float32", 4),
        ("float16", "float16", 2),  # a pair is the widest 16-bit reduction
        ("bfloat16", "bfloat16", 2),
        ("float16", "float32", 4),
    ],
)
def test_a_shared_tile_is_added_by_every_thread_in_vectors(dtype, acc, width):
    M, N, K = 128, 128, 3
    kernel = tilelang.compile(region_atomic(M, N, 64, 64, K, dtype, acc), target=EMU)
    src = body(kernel)
    # Spread over the threads: no thread-0-only block, one vector add per run.
    assert "tl_thread_rank == 0" not in src, src
    assert src.count(f"tl::AtomicAddx{width}(") == 1 and "tl::AtomicAdd(" not in src, src
    a = whole((K, M, N), dtype if dtype != "bfloat16" else "float32", 1)
    c = whole((M, N), acc if acc != "bfloat16" else "float32", 2)
    if dtype == "bfloat16":
        import ml_dtypes

        a, c = a.astype(ml_dtypes.bfloat16), c.astype(ml_dtypes.bfloat16)
    expect = c.astype(np.float32) + a.astype(np.float32).sum(axis=0)
    kernel(a, c)
    np.testing.assert_array_equal(c.astype(np.float32), expect)


def test_a_tile_past_the_end_adds_only_inside():
    """M = 100, N = 70: the last tiles hang over both ends; their runs that leave the
    tensor go element by element, guarded, and nothing outside is written."""
    M, N, K = 100, 70, 2
    kernel = tilelang.compile(region_atomic(M, N, 64, 64, K, "float32", "float32"), target=EMU)
    assert "tl::AtomicAddx" in body(kernel)
    a = whole((K, M, N), "float32", 3)
    c = whole((M, N), "float32", 4)
    expect = c + a.sum(axis=0)
    kernel(a, c)
    np.testing.assert_array_equal(c, expect)


@pytest.mark.parametrize(
    "order, number", [("relaxed", 0), ("acquire", 2), ("release", 3), ("acq_rel", 4)]
)
def test_the_memory_order_goes_with_the_vector(order, number):
    kernel = tilelang.compile(
        region_atomic(64, 64, 64, 64, 1, "float16", "float16", order=order), target=EMU
    )
    calls = re.findall(r"AtomicAddx\d\([^;]*\);", body(kernel))
    assert calls and all(c.endswith(f", {number});") for c in calls), calls


def test_a_single_thread_block_still_adds_everything():
    kernel = tilelang.compile(
        region_atomic(64, 32, 64, 32, 2, "float32", "float32", threads=1), target=EMU
    )
    a = whole((2, 64, 32), "float32", 5)
    c = np.zeros((64, 32), "float32")
    kernel(a, c)
    np.testing.assert_array_equal(c, a.sum(axis=0))


def parallel_atomic(K, M, N, bm, bn):
    """TileLang's test kernel: a value read from shared memory, added per element."""

    @T.prim_func
    def main(A: T.Tensor((K, M, N), "float32"), B: T.Tensor((M, N), "float32")):
        with T.Kernel(T.ceildiv(M, bm), T.ceildiv(N, bn), K, threads=32) as (bx, by, bz):
            A_shared = T.alloc_shared((bm, bn), "float32")
            T.copy(A[bz, bx * bm : (bx + 1) * bm, by * bn : (by + 1) * bn], A_shared)
            for i, j in T.Parallel(bm, bn):
                value = A_shared[i, j]
                T.atomic_add(B[bx * bm + i, by * bn + j], value)

    return main


def test_per_element_atomics_in_a_parallel_loop_go_in_vectors():
    K, M, N = 4, 64, 64
    kernel = tilelang.compile(parallel_atomic(K, M, N, 32, 32), target=EMU)
    assert "tl::AtomicAddx4(" in body(kernel)
    a = whole((K, M, N), "float32", 6)
    b = whole((M, N), "float32", 7)
    expect = b + a.sum(axis=0)
    kernel(a, b)
    np.testing.assert_array_equal(b, expect)


def addx(width, offset, dtype, threads):
    @T.prim_func
    def main(A: T.Tensor((16,), dtype), B: T.Tensor((16,), dtype)):
        with T.Kernel(1, threads=threads):
            if width == 4:
                T.atomic_addx4(B[offset], A[offset])
            else:
                T.atomic_addx2(B[offset], A[offset])

    return main


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("offset", [0, 1, 4])
def test_atomic_addx_is_one_call_at_any_offset(dtype, width, offset):
    """T.atomic_addx2 / x4 name a run that may start anywhere (offset 1 is not aligned
    to the run): the device function checks the address and adds element by element
    where it is not aligned."""
    kernel = tilelang.compile(addx(width, offset, dtype, 3), target=EMU)
    assert f"tl::AtomicAddx{width}(" in body(kernel)
    a = np.zeros(16, dtype)
    a[offset : offset + width] = np.arange(1, width + 1)
    b = np.full(16, 10, dtype)
    expect = b.astype(np.float32) + 3 * a.astype(np.float32)  # every thread adds once
    kernel(a, b)
    np.testing.assert_array_equal(b.astype(np.float32), expect)


def test_addx_rows_picked_by_data_stay_in_bounds():
    """`T.atomic_addx4(dst[idx[t], 0:4], val[t, 0:4])`: the row is data, so the run is
    checked at run time; rows outside dst are dropped."""
    N, M = 8, 4

    @T.prim_func
    def main(
        idx: T.Tensor((N,), "int32"),
        val: T.Tensor((N, 4), "float32"),
        dst: T.Tensor((M, 4), "float32"),
    ):
        with T.Kernel(1, threads=N):
            t = T.get_thread_binding()
            T.atomic_addx4(dst[idx[t], 0:4], val[t, 0:4])

    kernel = tilelang.compile(main, target=EMU)
    assert "tl::AtomicAddx4(" in body(kernel)
    rows = np.array([0, 1, 2, 3, 0, 1, 7, -1], "int32")
    val = whole((N, 4), "float32", 8)
    dst = np.zeros((M, 4), "float32")
    expect = dst.copy()
    for t, r in enumerate(rows):
        if 0 <= r < M:
            expect[r] += val[t]
    kernel(rows, val, dst)
    np.testing.assert_array_equal(dst, expect)


def test_metal_and_cpu_keep_element_atomics():
    for target in ["cpu", "metal"]:
        src = tilelang.compile(
            region_atomic(64, 64, 64, 64, 1, "float32", "float32"), target=target
        ).get_kernel_source()
        assert "AtomicAddx" not in src


def fragment_atomic(N, src_dtype, dst_dtype):
    """TileLang's mixed-dtype kernel: a float16 fragment added element by element."""

    @T.prim_func
    def main(Src: T.Tensor((N,), src_dtype), Out: T.Tensor((N,), dst_dtype)):
        with T.Kernel(threads=1):
            frag = T.alloc_fragment((N,), src_dtype)
            for i in T.Parallel(N):
                frag[i] = Src[i]
            for i in T.Parallel(N):
                T.atomic_add(Out[i], frag[i])

    return main


@pytest.mark.parametrize(
    "src, dst", [("float16", "float32"), ("float32", "float32"), ("float16", "float16")]
)
def test_per_element_atomics_of_a_fragment_go_in_runs(src, dst):
    kernel = tilelang.compile(fragment_atomic(8, src, dst), target=EMU)
    width = 4 if dst == "float32" else 2  # float16 in pairs, as TileLang's AtomicAddx2
    assert f"tl::AtomicAddx{width}(" in body(kernel) and "tl::AtomicAdd(" not in body(kernel)
    a = np.arange(1, 9).astype(src)
    out = np.full(8, 3, dst)
    kernel(a, out)
    np.testing.assert_array_equal(out, 3 + np.arange(1, 9).astype(dst))


def splitk_gemm(M, N, K, bm, bn, bk, split):
    """TileLang's split-K gemm: each block's partial C added element by element."""

    @T.prim_func
    def main(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(T.ceildiv(N, bn), T.ceildiv(M, bm), split, threads=128) as (bx, by, bz):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            C_l = T.alloc_fragment((bm, bn), "float32")
            T.clear(C_l)
            for ko in T.Pipelined(K // (bk * split), num_stages=2):
                T.copy(A[by * bm, bz * (K // split) + ko * bk], A_s)
                T.copy(B[bz * (K // split) + ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, C_l)
            for i, j in T.Parallel(bm, bn):
                T.atomic_add(C[by * bm + i, bx * bn + j], C_l[i, j])

    return main


@pytest.mark.parametrize("M", [128, 100])
def test_split_k_partials_are_added_in_pairs(M):
    """The accumulator's registers hold pairs of neighbours (m16n8 fragments): one
    tl::AtomicAddx2 per pair; M = 100 leaves rows outside C, which stay unwritten."""
    N, K = 64, 128
    kernel = tilelang.compile(splitk_gemm(M, N, K, 64, 64, 32, 2), target=EMU)
    assert "tl::AtomicAddx2(" in body(kernel)
    a = whole((M, K), "float16", 9)
    b = whole((K, N), "float16", 10)
    c = np.zeros((M, N), "float32")
    kernel(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.float32) @ b.astype(np.float32))


def _ptx(func, arch, nvcc_path, tmp_path):
    """nvcc's PTX of `func`'s CUDA source for `arch`."""
    src = tilelang.compile(func, target=f"cuda -arch={arch}").get_kernel_source()
    cu = tmp_path / "kernel.cu"
    cu.write_text(src)
    include = os.path.join(_native.load().device_include_dir(), "cuda")
    cmd = [
        nvcc_path,
        f"-arch={arch}",
        "-ptx",
        "--std=c++17",
        "-allow-unsupported-compiler",
        f"-I{include}",
    ]
    cmd += ["-o", str(tmp_path / "kernel.ptx"), str(cu)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr
    return (tmp_path / "kernel.ptx").read_text()


@pytest.mark.parametrize(
    "dtype, arch, instruction",
    [
        ("float32", "sm_90a", r"red\.global\.add\.v4\.f32"),
        ("float16", "sm_80", r"red\.global\.add\.noftz\.f16x2"),
        ("bfloat16", "sm_90a", r"red\.global\.add\.noftz\.bf16x2"),
    ],
)
def test_the_runs_are_vector_reductions_in_ptx(dtype, arch, instruction, nvcc, tmp_path):  # noqa: F811
    """nvcc's PTX of the per-element kernel: the vector reduction, and no
    compare-and-swap loop (the scalar adds beside it are the path of a run whose address
    is not aligned to it, which the device function checks at run time)."""

    @T.prim_func
    def main(A: T.Tensor((64, 64), dtype), B: T.Tensor((64, 64), dtype)):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), dtype)
            T.copy(A, S)
            for i, j in T.Parallel(64, 64):
                T.atomic_add(B[i, j], S[i, j])

    ptx = _ptx(main, arch, nvcc, tmp_path)
    assert re.search(instruction, ptx), ptx[-3000:]
    assert "atom.global.cas" not in ptx


@pytest.mark.parametrize("target", ["cpu", EMU, "metal -emulate"])
def test_every_thread_makes_its_own_atomics_on_every_target(target):
    """Atomics outside T.Parallel and region ops are each thread's: a block of 3 threads
    adds 3 times (the cpu target runs such a kernel's threads one by one, not its block
    on one executor), T.atomic_addx4 included."""

    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((8,), "float32")):
        with T.Kernel(2, threads=3):
            T.atomic_add(B[7], 1.0)
            T.atomic_addx4(B[0:4], A[0:4])

    kernel = tilelang.compile(main, target=target)
    a = np.array([1, 2, 3, 4], "float32")
    b = np.full(8, 10, "float32")
    kernel(a, b)
    np.testing.assert_array_equal(b, [16, 22, 28, 34, 10, 10, 10, 16])


def addx_prev(width, dtype, n, start):
    """Each of 8 threads adds its run of `width` values at `start` and keeps the run's
    previous values (T.atomic_addx2 / x4 with return_prev=True)."""

    @T.prim_func
    def main(
        Dst: T.Tensor((n,), dtype),
        Val: T.Tensor((8, width), dtype),
        Prev: T.Tensor((8, width), dtype),
    ):
        with T.Kernel(1, threads=8):
            t = T.get_thread_binding()
            if width == 2:
                Prev[t, 0:2] = T.atomic_addx2(Dst[start : start + 2], Val[t, 0:2], return_prev=True)
            else:
                Prev[t, 0:4] = T.atomic_addx4(Dst[start : start + 4], Val[t, 0:4], return_prev=True)

    return main


@pytest.mark.parametrize(
    "target, dtype",
    [("cpu", "float32"), ("cpu", "float16"), (EMU, "float32"), (EMU, "float16")]
    + [("metal -emulate", "float32")],  # Metal: 32-bit atomics only (refused below)
)
@pytest.mark.parametrize("width", [2, 4])
@pytest.mark.parametrize("start", [0, 1, 6])
def test_addx_return_prev_is_one_call_and_every_previous_value(target, width, dtype, start):
    """One tl::AtomicAddx2Ret / x4Ret per thread (TileLang's name) where the run lies in
    the tensor; the 8 threads' previous values of each element are 8 distinct partial
    sums of one chain (whole numbers: exact in any order), and the tensor ends with the
    whole sum. A run past the end (start 6 of 8 for 4 elements) updates the elements
    inside and reads 0 for the rest."""
    n = 8
    kernel = tilelang.compile(addx_prev(width, dtype, n, start), target=target)
    src = kernel.get_kernel_source()
    if start + width <= n:
        call = (
            "atomic_fetch_add_explicit" if target.startswith("metal") else f"AtomicAddx{width}Ret("
        )
        assert call in src, src
    rng = np.random.default_rng(width * 10 + start)
    dst = rng.integers(-8, 9, n).astype(dtype)
    val = rng.integers(1, 5, (8, width)).astype(dtype)
    prev = np.full((8, width), -99, dtype)
    want = dst.astype(np.float64).copy()
    before = dst.copy()
    kernel(dst, val, prev)
    for k in range(width):
        e = start + k
        if e >= n:
            np.testing.assert_array_equal(prev[:, k], 0)
            continue
        want[e] += val[:, k].astype(np.float64).sum()
        # The previous values: the element before each thread's add, a chain of partial
        # sums in some order, the first the element's old value.
        chain = sorted(prev[:, k].astype(np.float64))
        assert chain[0] == before[e], (k, chain)
        order = np.argsort(prev[:, k].astype(np.float64), kind="stable")
        running = float(before[e])
        for t in order:
            assert float(prev[t, k]) == running, (k, prev[:, k])
            running += float(val[t, k])
    np.testing.assert_array_equal(dst.astype(np.float64), want)


def test_addx_return_prev_of_16_bit_elements_is_refused_on_metal():
    with pytest.raises(
        Exception, match=r"T\.atomic_addx2 on 'Dst' of dtype float16: Metal has atomics only"
    ):
        tilelang.compile(addx_prev(2, "float16", 8, 0), target="metal")


@pytest.mark.parametrize(
    "dtype, arch, instruction",
    [
        ("float32", "sm_90a", r"atom\.global\.v2\.f32\.add"),
        ("float16", "sm_80", r"atom\.global\.add\.noftz\.f16x2"),
        ("bfloat16", "sm_90a", r"atom\.global\.add\.noftz\.bf16x2"),
        ("float32", "sm_80", r"atom\.global\.add\.f32"),
        ("bfloat16", "sm_75", r"atom(\.global)?\.cas\.b32"),
    ],
)
def test_addx_return_prev_is_a_vector_atomic_in_ptx(dtype, arch, instruction, nvcc, tmp_path):  # noqa: F811
    """nvcc's PTX of T.atomic_addx2(..., return_prev=True): one vector `atom` where the
    GPU has it (float32 pairs on sm_90, float16 pairs from sm_70, bfloat16 pairs on
    sm_90), element atomics before (bfloat16 on sm_75: a compare-and-swap loop)."""
    ptx = _ptx(addx_prev(2, dtype, 8, 0), arch, nvcc, tmp_path)
    assert re.search(instruction, ptx), ptx[-3000:]


@pytest.mark.parametrize("target", ["cpu", EMU])
def test_addx_return_prev_into_shared_memory_is_element_atomics(target):
    """T.atomic_addx2(..., return_prev=True) into a shared tile: the vector call's
    atomics address global memory, so a shared destination takes an atomic per element
    (no tl::AtomicAddx2Ret), with every previous value."""

    @T.prim_func
    def main(
        Val: T.Tensor((4, 2), "float32"),
        Prev: T.Tensor((4, 2), "float32"),
        Out: T.Tensor((2,), "float32"),
    ):
        with T.Kernel(1, threads=4):
            S = T.alloc_shared((2,), "float32")
            t = T.get_thread_binding()
            if t == 0:
                S[0] = 1.0
                S[1] = 2.0
            T.sync_threads()
            Prev[t, 0:2] = T.atomic_addx2(S[0:2], Val[t, 0:2], return_prev=True)
            T.sync_threads()
            if t == 0:
                Out[0] = S[0]
                Out[1] = S[1]

    kernel = tilelang.compile(main, target=target)
    assert "AtomicAddx2Ret" not in kernel.get_kernel_source()
    val = np.arange(1, 9, dtype="float32").reshape(4, 2)
    prev = np.zeros((4, 2), "float32")
    out = np.zeros(2, "float32")
    kernel(val, prev, out)
    np.testing.assert_array_equal(out, [1 + val[:, 0].sum(), 2 + val[:, 1].sum()])
    for k, start in ((0, 1.0), (1, 2.0)):
        chain = np.sort(prev[:, k])
        assert chain[0] == start, prev
        assert set(np.round(np.diff(chain), 3)) <= set(val[:, k]), prev
