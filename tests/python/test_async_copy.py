"""T.ptx_cp_async / T.ptx_commit_group / T.ptx_wait_group and T.async_copy
(python/tilelang/language/async_copy.py): hand-written global -> shared copies of 4, 8
or 16 bytes, grouped and waited for, and a tile copy restricted to global -> shared that
issues its cp.async and commits without waiting (sm_80+; the kernel waits)."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
N = 1024


def _grouped_copies(nbytes, with_pred):
    """Each of 32 threads copies its run of float16 in two groups (even and odd runs);
    after the waits and a barrier, the block reads the shared tile back."""
    per = nbytes // 2  # float16 elements per copy
    runs = N // per
    live = runs - 3  # runs whose predicate holds

    @T.prim_func
    def cp(A: T.Tensor((N,), "float16"), B: T.Tensor((N,), "float16")):
        with T.Kernel(1, threads=32):
            t = T.get_thread_binding()
            S = T.alloc_shared((N,), "float16")
            for parity in T.serial(2):
                for k in T.serial(runs // 64):
                    r = (k * 32 + t) * 2 + parity
                    if with_pred:
                        T.ptx_cp_async(
                            T.access_ptr(S[r * per], "w"),
                            T.access_ptr(A[r * per], "r"),
                            per,
                            r < live,
                        )
                    else:
                        T.ptx_cp_async(
                            T.access_ptr(S[r * per], "w"), T.access_ptr(A[r * per], "r"), per
                        )
                T.ptx_commit_group()
            T.ptx_wait_group(1)  # the even runs have landed
            T.ptx_wait_group(0)
            T.sync_threads()
            for i in T.serial(N // 32):
                B[i * 32 + t] = S[i * 32 + t]

    return cp


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("nbytes", [4, 8, 16])
@pytest.mark.parametrize("with_pred", [False, True])
def test_cp_async_copies_groups_and_waits(target, nbytes, with_pred):
    per = nbytes // 2
    live = N // per - 3
    kernel = tilelang.compile(_grouped_copies(nbytes, with_pred), target=target)
    a = np.random.default_rng(nbytes).standard_normal(N).astype(np.float16)
    b = np.full(N, 9, np.float16)
    kernel(a, b)
    ref = a.copy()
    if with_pred:
        ref[live * per :] = 0  # a false predicate zero-fills
    np.testing.assert_array_equal(b, ref)


@pytest.mark.parametrize("target", TARGETS)
def test_async_copy_of_a_tile(target):
    @T.prim_func
    def tile(A: T.Tensor((64, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=64) as b:
            S = T.alloc_shared((32, 32), "float32")
            T.async_copy(A[b * 32, 0], S)
            T.ptx_wait_group(0)
            for i, j in T.Parallel(32, 32):
                B[b * 32 + i, j] = S[i, j] + 1.0

    kernel = tilelang.compile(tile, target=target)
    a = np.random.default_rng(3).standard_normal((64, 32)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a + np.float32(1))


@pytest.mark.parametrize(
    "body, expected",
    [
        (
            lambda A, S: T.async_copy(S, S),
            "T.async_copy only supports global->shared/shared.dyn copies, got 'S'",
        ),
        (
            lambda A, S: T.ptx_cp_async(T.access_ptr(A[0], "w"), T.access_ptr(A[0], "r"), 4),
            "T.ptx_cp_async: the destination must point into shared memory, but buffer 'A' is in 'global'",
        ),
        (
            lambda A, S: T.ptx_cp_async(T.access_ptr(S[0], "w"), T.access_ptr(A[0], "r"), 3),
            "T.ptx_cp_async: 3 element(s) of float16 are 6 bytes; cp.async copies 4, 8 or 16 bytes",
        ),
        (
            lambda A, S: T.ptx_cp_async(S[0], A[0], 2),
            "the destination must be an address such as T.access_ptr",
        ),
        (
            lambda A, S: T.ptx_wait_group(-1),
            "T.ptx_wait_group: the number of groups left in flight must be a constant >= 0",
        ),
    ],
)
def test_misuse_is_reported_at_the_users_line(body, expected):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((16,), "float16")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((16,), "float16")
                body(A, S)

    assert expected in str(info.value)
    assert "test_async_copy.py" in str(info.value)


def test_metal_refuses_with_the_target_named():
    @T.prim_func
    def on_metal(A: T.Tensor((16,), "float16"), B: T.Tensor((16,), "float16")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((16,), "float16")
            T.ptx_cp_async(T.access_ptr(S[0], "w"), T.access_ptr(A[0], "r"), 8)
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            B[0] = S[0]

    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(on_metal, target="metal -emulate")
    assert (
        "(tl::cp_async_gs<16>) are available on the cpu and cuda targets, not on the target 'metal"
        in str(info.value)
    )


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(("dtype", "lanes", "nbytes"), [("float16", 4, 8), ("float32", 4, 16)])
def test_one_element_cp_async_in_a_vectorized_loop_is_one_wide_copy(target, dtype, lanes, nbytes):
    """TileLang's vectorizer makes the loop's one-element copies one cp.async of the run."""
    n = 32 * lanes

    @T.prim_func
    def cp(A: T.Tensor((n,), dtype), B: T.Tensor((n,), dtype)):
        with T.Kernel(1, threads=32):
            t = T.get_thread_binding()
            S = T.alloc_shared((n,), dtype)
            for i in T.vectorized(lanes):
                T.ptx_cp_async(
                    T.access_ptr(S[t * lanes + i], "w", 1),
                    T.access_ptr(A[t * lanes + i], "r", 1),
                    1,
                )
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            for j in T.serial(lanes):
                B[t * lanes + j] = S[n - 1 - t * lanes - j]

    kernel = tilelang.compile(cp, target=target)
    a = np.random.default_rng(5).standard_normal(n).astype(dtype)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b.astype(np.float64), a.astype(np.float64)[::-1])
    if target.startswith("cuda"):
        src = kernel.get_kernel_source()
        assert f"tl::cp_async_gs<{nbytes}>" in src
        assert f"tl::cp_async_gs<{nbytes // lanes}>" not in src


def test_a_vectorized_run_of_another_size_is_refused():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((16,), "float16")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((16,), "float16")
                for i in T.vectorized(3):
                    T.ptx_cp_async(T.access_ptr(S[i], "w", 1), T.access_ptr(A[i], "r", 1), 1)

    assert (
        "T.ptx_cp_async in a T.vectorized loop of 3 iterations: 3 x 1 element(s) of float16 are "
        "6 bytes; cp.async copies 4, 8 or 16 bytes" in str(info.value)
    )
    assert "test_async_copy.py" in str(info.value)
    # Elements that are no contiguous run stay one copy each (2 bytes: refused as such).
    with pytest.raises(tilelang.TileLangError, match="1 element.s. of float16 are 2 bytes"):

        @T.prim_func
        def strided(A: T.Tensor((16,), "float16")):
            with T.Kernel(1, threads=32):
                S = T.alloc_shared((16,), "float16")
                for i in T.vectorized(4):
                    T.ptx_cp_async(T.access_ptr(S[i * 2], "w", 1), T.access_ptr(A[i], "r", 1), 1)


def test_a_run_not_proven_aligned_stays_one_copy_per_iteration():
    """A run of 4 float32 (16 bytes) starting at an offset not known to be a multiple
    of 4 elements would be a misaligned 16-byte cp.async (a fault on the GPU): each
    iteration keeps its own 4-byte copy, and the result is the same."""
    n = 64

    @T.prim_func
    def cp(A: T.Tensor((n + 4,), "float32"), B: T.Tensor((n,), "float32"), off: T.int32):
        with T.Kernel(1, threads=16):
            t = T.get_thread_binding()
            S = T.alloc_shared((n,), "float32")
            for i in T.vectorized(4):
                T.ptx_cp_async(
                    T.access_ptr(S[t * 4 + i], "w", 1),
                    T.access_ptr(A[off + t * 4 + i], "r", 1),
                    1,
                )
            T.ptx_commit_group()
            T.ptx_wait_group(0)
            T.sync_threads()
            for j in T.serial(4):
                B[t * 4 + j] = S[t * 4 + j]

    kernel = tilelang.compile(cp, target="cuda -arch=sm_80 -emulate")
    src = kernel.get_kernel_source()
    assert "tl::cp_async_gs<4>" in src and "tl::cp_async_gs<16>" not in src
    a = np.random.default_rng(6).standard_normal(n + 4).astype(np.float32)
    b = np.zeros(n, np.float32)
    kernel(a, b, 3)
    np.testing.assert_array_equal(b, a[3 : 3 + n])


def _pipelined_gemm(explicit):
    """C = relu(A @ B) over a two-stage T.Pipelined loop whose copies are T.async_copy
    each followed by T.ptx_wait_group(0) (`explicit`), or plain T.copy."""
    M = N_ = 128
    K, bm, bn, bk = 128, 64, 64, 32

    @T.prim_func
    def gemm(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((K, N_), "float16"),
        C: T.Tensor((M, N_), "float16"),
    ):
        with T.Kernel(N_ // bn, M // bm, threads=128) as (bx, by):
            A_s = T.alloc_shared((bm, bk), "float16")
            B_s = T.alloc_shared((bk, bn), "float16")
            acc = T.alloc_fragment((bm, bn), "float32")
            T.clear(acc)
            for ko in T.Pipelined(K // bk, num_stages=2):
                if explicit:
                    T.async_copy(A[by * bm, ko * bk], A_s)
                    T.ptx_wait_group(0)
                    T.async_copy(B[ko * bk, bx * bn], B_s)
                    T.ptx_commit_group()
                    T.ptx_wait_group(0)
                else:
                    T.copy(A[by * bm, ko * bk], A_s)
                    T.copy(B[ko * bk, bx * bn], B_s)
                T.gemm(A_s, B_s, acc)
            for i, j in T.Parallel(bm, bn):
                acc[i, j] = T.max(acc[i, j], 0)
            T.copy(acc, C[by * bm, bx * bn])

    return gemm


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"])
def test_waits_after_async_copies_in_a_pipeline_wait_for_nothing(target):
    """In a kernel that issues no cp.async itself, T.ptx_commit_group / ptx_wait_group
    wait for nothing of its own: T.async_copy completes as T.copy does. In a T.Pipelined
    loop they would otherwise wait for the pipeline's prefetches of the next stages
    too; the kernel is the one T.copy gives (TileLang's language/async_copy_gemm_sm80)."""
    explicit = tilelang.compile(_pipelined_gemm(True), out_idx=[2], target=target)
    plain = tilelang.compile(_pipelined_gemm(False), out_idx=[2], target=target)
    assert explicit.get_kernel_source() == plain.get_kernel_source()
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 128)).astype(np.float16)
    b = rng.standard_normal((128, 128)).astype(np.float16)
    ref = np.maximum(a.astype(np.float32) @ b.astype(np.float32), 0)
    np.testing.assert_allclose(explicit(a, b).astype(np.float32), ref, rtol=2e-2, atol=2e-2)


def test_a_kernel_that_issues_cp_async_keeps_its_waits():
    """With a T.ptx_cp_async of its own the kernel's commits and waits are its own
    (T.ptx_wait_group(1) leaves the odd runs in flight)."""
    source = tilelang.compile(
        _grouped_copies(16, False), target="cuda -arch=sm_80"
    ).get_kernel_source()
    assert source.count("tl::cp_async_commit();") == 1, source
    assert "tl::cp_async_wait<1>();" in source and "tl::cp_async_wait<0>();" in source, source


def _async_tile(wait, rows=32):
    """Two blocks each copy their rows of A into a shared tile with T.async_copy (rows past
    A's 48 read as 0), optionally wait, then write the tile + 1 to B."""

    @T.prim_func
    def tile(A: T.Tensor((48, 32), "float32"), B: T.Tensor((64, 32), "float32")):
        with T.Kernel(2, threads=64) as b:
            S = T.alloc_shared((rows, 32), "float32")
            T.async_copy(A[b * rows : (b + 1) * rows, 0:32], S)
            if wait:
                T.ptx_wait_group(0)
            for i, j in T.Parallel(rows, 32):
                B[b * rows + i, j] = S[i, j] + 1.0

    return tile


def test_async_copy_issues_and_commits_without_a_wait():
    src = tilelang.compile(_async_tile(False), target="cuda -arch=sm_80").get_kernel_source()
    # A predicated cp.async of 16 bytes per run (rows past A zero-filled), one commit.
    assert "tl::cp_async_gs_conditional<16>" in src and src.count("tl::cp_async_commit()") == 1
    assert "tl::cp_async_wait" not in src
    # The kernel's own wait stays, and the copy lands by it.
    kernel = tilelang.compile(_async_tile(True), target="cuda -arch=sm_80 -emulate")
    assert "tl::cp_async_wait<0>()" in kernel.get_kernel_source()
    a = np.random.default_rng(8).standard_normal((48, 32)).astype(np.float32)
    b = np.zeros((64, 32), np.float32)
    kernel(a, b)
    want = np.vstack([a, np.zeros((16, 32), np.float32)]) + np.float32(1)
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize("target", ["cuda -arch=sm_75", "cpu", "metal -emulate"])
def test_async_copy_without_cp_async_completes_as_copy(target):
    # (Metal refuses T.ptx_wait_group: the kernel there has no wait.)
    kernel = tilelang.compile(_async_tile("metal" not in target), target=target)
    src = kernel.get_kernel_source()
    assert "cp_async_gs" not in src and "cp_async_commit" not in src
    if target != "cuda -arch=sm_75":
        a = np.random.default_rng(9).standard_normal((48, 32)).astype(np.float32)
        b = np.zeros((64, 32), np.float32)
        kernel(a, b)
        want = np.vstack([a, np.zeros((16, 32), np.float32)]) + np.float32(1)
        np.testing.assert_array_equal(b, want)


def test_async_copy_prints_as_written():
    @T.prim_func
    def main(A: T.Tensor((4,), "float32"), B: T.Tensor((4,), "float32")):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((4,), "float32")
            T.copy(A[0], B[0], annotations={"note": "sync"})
            T.async_copy(A[0:4], S, annotations={"note": "async"})
            T.async_copy(A[0], S[0])

    lines = main.script().splitlines()
    # An element copy with annotations stays a copy of one element; without, a store.
    assert any(ln.strip() == 'T.copy(A[0:1], B[0:1], note="sync")' for ln in lines), lines
    assert any(ln.strip() == 'T.async_copy(A[0:4], S[0:4], note="async")' for ln in lines), lines
    assert any(ln.strip() == "S[0] = A[0]" for ln in lines), lines
