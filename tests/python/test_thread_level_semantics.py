"""TileLang semantics that kernels written for TileLang rely on outside tile ops, run on
the CUDA emulator (sm_80 and sm_90a sources), the Metal emulator and the cpu target,
against numpy:

- T.clear / T.fill / T.copy of a thread's own registers (T.alloc_local) run on every
  thread, each on its own copy;
- a fragment that only code outside T.Parallel uses (a scalar accumulator) is kept by
  every thread, not shared by the block;
- T.copy of part of a register fragment, to and from memory, keeps the fragment in
  registers;
- T.reinterpret of 8- and 16-bit integer arithmetic (promoted to int in C++ and MSL);
- the names TileLang kernels use: T.grid, T.Cast, T.gemm_v2, T.address_of,
  T.float8_e4m3, the macro parameter annotations (T.SharedBuffer ...),
  tilelang.cdiv / next_power_of_2 / TensorSupplyType, tilelang.testing and
  tilelang.utils.tensor."""

import logging
import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

SM80 = "cuda -arch=sm_80 -emulate"
SM90A = "cuda -arch=sm_90a -emulate"
METAL = "metal -emulate"
ALL = [SM80, SM90A, METAL, "cpu"]
rng = np.random.default_rng(5)


@pytest.fixture
def uncached():
    """The compiler logs while it compiles: a kernel loaded from the cache logs nothing."""
    tilelang.disable_cache()
    yield
    tilelang.enable_cache()


def registers_per_thread():
    @T.prim_func
    def per_thread(A: T.Tensor((128, 4), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding(0)
            acc = T.alloc_local((1,), "float32")
            row = T.alloc_local((4,), "float32")
            acc[0] = 5.0  # what a register may hold before the clear
            T.clear(acc)
            T.copy(A[tx, 0:4], row)
            for k in T.serial(4):
                acc[0] += row[k]
            T.fill(row, 0.5)
            C[tx] = acc[0] + row[3]

    return per_thread


@pytest.mark.parametrize("target", ALL)
def test_fill_and_copy_of_registers_run_on_every_thread(target):
    a = rng.standard_normal((128, 4)).astype(np.float32)
    c = np.full(128, -1.0, np.float32)
    tilelang.compile(registers_per_thread(), target=target)(a, c)
    np.testing.assert_allclose(c, a.sum(1) + 0.5, rtol=1e-6, atol=1e-6)


def test_a_register_clear_is_not_left_to_thread_0():
    source = tilelang.compile(
        registers_per_thread(), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    assert "tl_thread_rank == 0" not in source, source
    assert re.search(r"acc\[0\] = 0x0p\+0f;", source), source


def scalar_fragment():
    @T.prim_func
    def running_total(sizes: T.Tensor((4,), "int32"), C: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128) as _:
            total = T.alloc_fragment((1,), "int32")
            total[0] = 0
            for i in T.serial(4):
                total[0] += sizes[i]  # every thread adds to its own copy
            for i in T.Parallel(128):
                C[i] = total[0] + i

    return running_total


@pytest.mark.parametrize("target", ALL)
def test_a_scalar_fragment_outside_parallel_loops_is_per_thread(target):
    sizes = np.array([1, 2, 3, 4], np.int32)
    c = np.zeros(128, np.int32)
    tilelang.compile(scalar_fragment(), target=target)(sizes, c)
    np.testing.assert_array_equal(c, 10 + np.arange(128))


def updated_fragment_in_a_thread_index_kernel():
    @T.prim_func
    def doubling_total(sizes: T.Tensor((4,), "int32"), C: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            total = T.alloc_fragment((1,), "int32")
            total[0] = 0
            for i in T.serial(4):
                total[0] = total[0] * 2 + sizes[i]  # applied once per copy, not once per thread
            if tx < 64:
                C[tx] = total[0] + tx
            else:
                C[tx] = -total[0]

    return doubling_total


@pytest.mark.parametrize("target", ALL)
def test_a_fragment_updated_outside_parallel_loops_in_a_thread_index_kernel(target):
    # The cpu target runs such a kernel one fiber per thread over one array per
    # fragment: the update must still happen once.
    sizes = np.array([1, 2, 3, 4], np.int32)
    c = np.zeros(128, np.int32)
    tilelang.compile(updated_fragment_in_a_thread_index_kernel(), target=target)(sizes, c)
    total = ((1 * 2 + 2) * 2 + 3) * 2 + 4
    np.testing.assert_array_equal(c, np.where(np.arange(128) < 64, total + np.arange(128), -total))


def online_logsumexp(K=512, block=128, threads=128):
    @T.prim_func
    def kernel(A: T.Tensor((K,), T.float32), B: T.Tensor((1,), T.float32)):
        with T.Kernel(1, threads=threads):
            a_shared = T.alloc_shared((block,), T.float32)
            a_frag = T.alloc_fragment((block,), T.float32)
            running_max = T.alloc_fragment((1,), T.float32)
            running_sum = T.alloc_fragment((1,), T.float32)
            running_max[0] = -T.infinity(T.float32)
            running_sum[0] = 0.0
            for k in T.Pipelined(T.ceildiv(K, block), num_stages=2):
                T.copy(A[k * block], a_shared)
                T.copy(a_shared, a_frag)
                new_max = T.alloc_reducer((1,), T.float32, op="max", replication="all")
                T.fill(new_max, running_max[0])
                for i in T.Parallel(block):
                    new_max[0] = T.max(new_max[0], a_frag[i])
                T.finalize_reducer(new_max)
                new_sum = T.alloc_reducer((1,), T.float32, replication="all")
                T.fill(new_sum, 0.0)
                for i in T.Parallel(block):
                    new_sum[0] += T.exp(a_frag[i] - new_max[0])
                T.finalize_reducer(new_sum)
                running_sum[0] = T.exp(running_max[0] - new_max[0]) * running_sum[0] + new_sum[0]
                running_max[0] = new_max[0]
            if T.get_thread_binding() == 0:
                B[0] = T.log(running_sum[0]) + running_max[0]

    return kernel


@pytest.mark.parametrize("target", ALL)
def test_an_online_softmax_state_in_fragments(target):
    a = rng.standard_normal(512).astype(np.float32)
    b = tilelang.compile(online_logsumexp(), out_idx=-1, target=target)(a)
    ref = np.log(np.exp(a.astype(np.float64)).sum())
    np.testing.assert_allclose(b, [ref], rtol=1e-5)


def test_a_fragment_store_under_a_thread_branch_stays_per_thread_on_the_cpu():
    # A barrier inside `if tx < 64` would wait for threads that never come.
    @T.prim_func
    def flag(C: T.Tensor((128,), "int32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            mine = T.alloc_fragment((1,), "int32")
            mine[0] = 1
            if tx < 64:
                mine[0] = 2
            C[tx] = tx

    kernel = tilelang.compile(flag, target="cpu")
    source = kernel.get_kernel_source()
    branch = source[source.index("if ((tx < 64))") :]
    assert "sync_threads" not in branch[: branch.index("}")], source
    c = np.zeros(128, np.int32)
    kernel(c)
    np.testing.assert_array_equal(c, np.arange(128))


def test_a_scalar_fragment_is_a_register_array():
    source = tilelang.compile(scalar_fragment(), target="cuda -arch=sm_90a").get_kernel_source()
    assert re.search(r"\bint32_t total\[1\];", source), source


M, N, D, V = 64, 32, 64, 16


def partial_copies():
    """A row-max softmax-like tile: parts of register fragments go to shared and global
    memory and come back from global memory."""

    @T.prim_func
    def parts(
        Q: T.Tensor((M, D), "float16"),
        K: T.Tensor((N, D), "float16"),
        P: T.Tensor((V, N), "float16"),
        Top: T.Tensor((V, N), "float32"),
        Mid: T.Tensor((8, 16), "float32"),
        Rows: T.Tensor((V,), "float32"),
        Out: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            q = T.alloc_shared((M, D), "float16")
            k = T.alloc_shared((N, D), "float16")
            top = T.alloc_shared((V, N), "float32")
            acc = T.alloc_fragment((M, N), "float32")
            mx = T.alloc_fragment((M,), "float32")
            T.copy(Q, q)
            T.copy(K, k)
            T.clear(acc)
            T.gemm(q, k, acc, transpose_B=True)
            T.reduce_max(acc, mx, dim=1)
            T.copy(acc[:V, :], top)  # the first rows, to shared memory
            T.copy(top, Top)
            T.copy(acc[8:16, 16:32], Mid)  # an inner block, to global memory
            T.copy(mx[:V], Rows)  # part of a per-row vector
            T.copy(P, acc[V : 2 * V, :])  # rows from memory; the others keep the gemm's
            T.copy(acc, Out)

    return parts


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
def test_part_of_a_register_fragment_copies_to_and_from_memory(target, caplog, uncached):
    q = rng.standard_normal((M, D)).astype(np.float16)
    k = rng.standard_normal((N, D)).astype(np.float16)
    p = rng.standard_normal((V, N)).astype(np.float16)
    s = q.astype(np.float64) @ k.astype(np.float64).T
    with caplog.at_level(logging.DEBUG, logger="tilelang"):
        kernel = tilelang.compile(partial_copies(), target=target)
    assert "stays in shared memory" not in caplog.text, caplog.text
    top = np.zeros((V, N), np.float32)
    mid = np.zeros((8, 16), np.float32)
    rows = np.zeros(V, np.float32)
    out = np.zeros((M, N), np.float32)
    kernel(q, k, p, top, mid, rows, out)
    np.testing.assert_allclose(top, s[:V], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(mid, s[8:16, 16:32], rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(rows, s[:V].max(1), rtol=1e-3, atol=1e-3)
    want = s.copy()
    want[V : 2 * V] = p
    np.testing.assert_allclose(out, want, rtol=1e-3, atol=1e-3)


def test_fragments_partly_copied_stay_in_registers():
    source = tilelang.compile(partial_copies(), target="cuda -arch=sm_90a").get_kernel_source()
    assert re.search(r"\bfloat acc\[\d+\];", source), source
    assert re.search(r"\bfloat mx\[\d+\];", source), source


def narrow_bits():
    @T.prim_func
    def to_half(B: T.Tensor((128,), "uint8"), C: T.Tensor((128,), "float16")):
        with T.Kernel(1, threads=128) as _:
            for i in T.Parallel(128):
                v = B[i].astype("uint16")
                bits = ((v & T.uint16(7)) << T.uint16(10)) | T.uint16(0x3C00)
                C[i] = T.reinterpret(bits.astype("uint16"), "float16")

    return to_half


@pytest.mark.parametrize("target", ALL)
def test_reinterpret_of_narrow_integer_arithmetic(target):
    b = np.arange(128, dtype=np.uint8)
    c = np.zeros(128, np.float16)
    tilelang.compile(narrow_bits(), target=target)(b, c)
    want = (((b.astype(np.uint16) & 7) << 10) | 0x3C00).astype(np.uint16).view(np.float16)
    np.testing.assert_array_equal(c, want)


@T.macro
def scale_rows(
    tile: T.SharedBuffer((16, 16), "float32"), acc: T.FragmentBuffer((16, 16), "float32")
):
    for i, j in T.Parallel(16, 16):
        acc[i, j] = T.Cast("float32", tile[i, j]) * 2


def tilelang_names():
    @T.prim_func
    def names(
        A: T.Tensor((16, 16), "float32"),
        B: T.Tensor((16, 16), "float32"),
        S: T.Tensor((128,), "float32"),
    ):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            tile = T.alloc_shared((16, 16), "float32")
            acc = T.alloc_fragment((16, 16), "float32")
            total = T.alloc_local((1,), "float32")
            T.copy(A, tile)
            scale_rows(tile, acc)
            T.copy(acc, tile)
            T.copy(tile, B)
            total[0] = 0
            for i, j in T.grid(4, 16):  # every thread sums rows 0..3 in plain loops
                total[0] += tile[i, j]
            S[tx] = total[0] + tx

    return names


@pytest.mark.parametrize("target", [SM80, "cpu"])
def test_tilelang_names_for_macros_loops_and_casts(target):
    a = rng.standard_normal((16, 16)).astype(np.float32)
    b, s = tilelang.compile(tilelang_names(), out_idx=[1, 2], target=target)(a)
    np.testing.assert_allclose(b, a * 2, rtol=1e-6)
    np.testing.assert_allclose(s - np.arange(128), (a[:4] * 2).sum(), rtol=1e-5, atol=1e-4)


def test_gemm_v2_float8_e4m3_and_address_of():
    assert T.gemm_v2 is T.gemm
    assert T.float8_e4m3 == T.float8_e4m3fn == T.dtype("float8_e4m3")

    @T.prim_func
    def incr(A: T.Tensor((8,), "float32")):
        with T.Kernel(1, threads=8) as _:
            tx = T.get_thread_binding()
            T.evaluate(T.call_extern("float32", "tl::atomic_add<0>", T.address_of(A[tx]), 1.5))

    a = np.arange(8, dtype=np.float32)
    tilelang.compile(incr, target="cpu")(a)
    np.testing.assert_array_equal(a, np.arange(8) + 1.5)
    with pytest.raises(tilelang.TileLangError, match="T.address_of takes one buffer element"):

        @T.prim_func
        def bad(A: T.Tensor((8,), "float32")):
            with T.Kernel(1) as _:
                T.evaluate(T.address_of(A[0] + 1))


def test_python_helpers_of_tilelang():
    from tilelang.utils.tensor import TensorSupplyType, map_torch_type, torch_assert_close

    assert tilelang.cdiv(7, 2) == 4 and tilelang.cdiv(8, 2) == 4
    assert [tilelang.next_power_of_2(n) for n in (0, 1, 2, 3, 64, 65)] == [1, 1, 2, 4, 64, 128]
    assert tilelang.TensorSupplyType is TensorSupplyType
    from tilelang.carver.arch import driver

    assert isinstance(driver.get_num_sms(), int) and driver.get_num_sms() >= 1
    torch_assert_close(np.ones(1000), np.ones(1000) + 1e-4)
    near = np.ones(1000)
    near[0] = 9.0  # one element in a thousand may differ
    torch_assert_close(near, np.ones(1000), max_mismatched_ratio=0.001)
    with pytest.raises(AssertionError, match="2 of 1000 elements"):
        near[1] = 9.0
        torch_assert_close(near, np.ones(1000), max_mismatched_ratio=0.001)
    torch = pytest.importorskip("torch")
    assert map_torch_type("float8_e4m3") is torch.float8_e4m3fn
    assert map_torch_type(T.bfloat16) is torch.bfloat16


def test_tilelang_testing_marks():
    import tilelang.testing

    tilelang.testing.set_random_seed(3)
    first = np.random.rand()
    tilelang.testing.set_random_seed(3)
    assert np.random.rand() == first
    mark = tilelang.testing.requires_cuda_compute_version_ge(9, 0)
    assert mark.name == "skipif"
    with pytest.raises(ValueError, match="mode must be one of"):
        tilelang.testing.requires_cuda_compute_version(9, 0, mode="about")


def neighbours():
    @T.prim_func
    def neighbour_sum(A: T.Tensor((256,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            acc = T.alloc_local((1,), "float32")
            acc[0] = 0.0
            for it in T.serial(2):
                S[tx] = A[it * 128 + tx]  # each thread writes its own element...
                acc[0] += S[(tx + 1) % 128]  # ...and reads its neighbour's
            C[tx] = acc[0]

    return neighbour_sum


@pytest.mark.parametrize("target", ALL)
def test_thread_level_shared_accesses_get_barriers(target):
    # Without a barrier between the write and the read, and between one iteration's
    # read and the next one's write, a thread reads a stale or a future value (the
    # emulators report the race; the cpu target reads wrong values).
    a = rng.standard_normal(256).astype(np.float32)
    c = np.zeros(128, np.float32)
    tilelang.compile(neighbours(), target=target)(a, c)
    nxt = (np.arange(128) + 1) % 128
    np.testing.assert_allclose(c, a[nxt] + a[128 + nxt], rtol=1e-6)


def test_no_barrier_under_a_condition_on_the_thread_index():
    @T.prim_func
    def guarded(A: T.Tensor((128,), "float32"), C: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            if tx < 64:  # only some threads get here: a block barrier would hang
                S[tx] = A[tx]
                C[tx] = S[tx]

    source = tilelang.compile(guarded, target="cuda -arch=sm_90a").get_kernel_source()
    assert "__syncthreads" not in source, source


def warp_specialized_by_hand(threads, cond):
    M = N = K = 64

    @T.prim_func
    def by_hand(
        A: T.Tensor((M, K), "float16"),
        B: T.Tensor((N, K), "float16"),
        C: T.Tensor((M, N), "float32"),
    ):
        with T.Kernel(1, threads=threads) as _:
            a = T.alloc_shared((M, K), "float16")
            b = T.alloc_shared((N, K), "float16")
            acc = T.alloc_fragment((M, N), "float32")
            tx = T.get_thread_binding()
            T.copy(A, a)
            T.copy(B, b)
            if cond(tx):
                T.clear(acc)
                T.gemm(a, b, acc, transpose_B=True)
                T.copy(acc, C)

    return by_hand


@pytest.mark.parametrize(
    "threads,cond",
    [(256, lambda tx: tx < 128), (256, lambda tx: tx >= 128), (384, lambda tx: tx // 128 == 2)],
    ids=["first", "second", "third"],
)
def test_a_branch_over_whole_warpgroups_is_their_region(threads, cond):
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    kernel = tilelang.compile(warp_specialized_by_hand(threads, cond), out_idx=[2], target=SM90A)
    np.testing.assert_allclose(
        kernel(a, b), a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-3
    )


def test_a_branch_thread_0_takes_runs_its_tile_ops_on_the_cpu():
    # The cpu target runs a block op whole on thread 0, which takes this branch.
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    kernel = tilelang.compile(
        warp_specialized_by_hand(256, lambda tx: tx < 128), out_idx=[2], target="cpu"
    )
    np.testing.assert_allclose(
        kernel(a, b), a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-3
    )


def elif_chain():
    @T.prim_func
    def chain(A: T.Tensor((3, 128), "float32"), C: T.Tensor((3, 128), "float32")):
        with T.Kernel(1, threads=384) as _:
            tx = T.get_thread_binding()
            t0 = T.alloc_fragment((128,), "float32")  # a fragment belongs to one region
            t1 = T.alloc_fragment((128,), "float32")
            t2 = T.alloc_fragment((128,), "float32")
            if tx < 128:
                T.copy(A[0, :], t0)
                for i in T.Parallel(128):
                    C[0, i] = t0[i] + 1
            elif tx >= 128 and tx < 256:
                T.copy(A[1, :], t1)
                for i in T.Parallel(128):
                    C[1, i] = t1[i] + 2
            else:
                T.copy(A[2, :], t2)
                for i in T.Parallel(128):
                    C[2, i] = t2[i] + 3

    return chain


def test_an_elif_chain_over_warpgroups_is_three_regions():
    a = rng.standard_normal((3, 128)).astype(np.float32)
    c = tilelang.compile(elif_chain(), out_idx=[1], target=SM90A)(a)
    np.testing.assert_allclose(c, a + np.array([[1], [2], [3]], np.float32))


@pytest.mark.parametrize(
    "target,threads,cond,op,why",
    [
        (SM90A, 256, lambda tx: tx < 64, "T.gemm", "not whole warpgroups"),
        (SM90A, 256, lambda tx: tx % 2 == 0, "T.fill", "not a range of thread indices"),
        (SM80, 256, lambda tx: tx < 128, "T.gemm", "need sm_90"),
        ("cpu", 256, lambda tx: tx >= 128, "T.fill", "need a CUDA target"),
        (METAL, 256, lambda tx: tx < 128, "T.fill", "need a CUDA target"),
    ],
    ids=["gemm-on-part-of-a-warpgroup", "not-a-range", "gemm-on-sm80", "cpu", "metal"],
)
def test_other_branches_on_the_thread_index_around_tile_ops_are_refused(
    target, threads, cond, op, why
):
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(warp_specialized_by_hand(threads, cond), out_idx=[2], target=target)
    text = str(err.value)
    assert f"{op} under the condition on the thread index at" in text, text
    assert "test_thread_level_semantics.py" in text and why in text, text


# Copies, fills and T.Parallel loops under a branch on any range of threads are spread
# over the threads that take it, as TileLang spreads them (CUDA targets).
def part_of_the_block(lo, hi, scale=True):
    @T.prim_func
    def part(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64, 64), "float32")
            if lo <= tx < hi:
                T.copy(A, S)
                if scale:  # a step that reads what other threads of the branch wrote
                    for i, j in T.Parallel(64, 64):
                        S[i, j] = S[i, j] * 2
            T.copy(S, B)

    return part


@pytest.mark.parametrize("target", [SM80, SM90A])
@pytest.mark.parametrize(
    "lo,hi,scale", [(0, 1, True), (5, 6, False), (0, 32, True), (32, 96, True), (0, 16, False)]
)
def test_tile_ops_under_a_branch_on_part_of_the_block(target, lo, hi, scale):
    a = rng.standard_normal((64, 64)).astype(np.float32)
    out = tilelang.compile(part_of_the_block(lo, hi, scale), out_idx=[1], target=target)(a)
    np.testing.assert_array_equal(out, a * 2 if scale else a)


def test_a_branch_on_part_of_the_block_barriers_only_its_threads():
    def src(lo, hi):
        kernel = tilelang.compile(
            part_of_the_block(lo, hi), out_idx=[1], target="cuda -arch=sm_90a"
        )
        return kernel.get_kernel_source()

    # Warps 1 and 2: a named barrier of their 64 threads (ids from 15 down; whole
    # warpgroups take 1 + their first warpgroup), the copy spread over them.
    assert "tl::__sync_thread_partial(15, 64);" in src(32, 96)
    # One thread: its own order suffices.
    one = src(0, 1)
    assert "one thread: its own order is the barrier" in one and "__sync_thread_partial" not in one


def test_a_branch_over_less_than_a_warp_that_needs_a_barrier_is_refused():
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(part_of_the_block(0, 16), out_idx=[1], target=SM90A)
    text = str(err.value)
    assert "test_thread_level_semantics.py" in text, text
    assert (
        "threads [0, 16) of a branch on the thread index need a barrier between their steps" in text
    )


def branches_over_warps(count):
    @T.prim_func
    def warps(A: T.Tensor((32, 64), "float32"), B: T.Tensor((32, 64), "float32")):
        with T.Kernel(1, threads=32 * count) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((32, 64), "float32")
            C = T.alloc_shared((32, 64), "float32")
            T.copy(A, S)
            for w in list(range(count)):  # a Python loop: one branch per warp
                if 32 * w <= tx < 32 * w + 32:
                    for i, j in T.Parallel(4, 64):
                        C[w * 4 % 32 + i, j] = S[w * 4 % 32 + i, j] + w
                    for i, j in T.Parallel(4, 64):
                        C[w * 4 % 32 + i, j] = C[w * 4 % 32 + i, j] * 2
            T.copy(C, B)

    return warps


def test_each_branch_over_warps_has_its_own_named_barrier():
    a = rng.standard_normal((32, 64)).astype(np.float32)
    out = tilelang.compile(branches_over_warps(4), out_idx=[1], target=SM90A)(a)
    # Warp w writes rows 4w .. 4w + 3 (the others stay unwritten).
    warp_of_row = np.repeat(np.arange(4), 4)[:, None].astype(np.float32)
    np.testing.assert_array_equal(out[:16], (a[:16] + warp_of_row) * 2)
    src = tilelang.compile(
        branches_over_warps(4), out_idx=[1], target="cuda -arch=sm_90a"
    ).get_kernel_source()
    assert all(f"tl::__sync_thread_partial({15 - w}, 32);" in src for w in range(4)), src
    with pytest.raises(
        tilelang.TileLangError, match="need more than the 15 named barriers of a block"
    ):
        tilelang.compile(branches_over_warps(32), out_idx=[1], target="cuda -arch=sm_90a")


def test_a_fragment_its_loops_write_past_its_shape_is_grown_with_a_warning(caplog, uncached):
    """TileLang's attention-sink backward examples allocate `sinks` with `heads` elements
    and write `sinks[i]` over T.Parallel(block_M): TileLang lays a fragment out over the
    loops that write it, so each write has a register and the reads at the same indices
    get it. Here the fragment holds what its writes cover, with a warning at the write."""

    @T.prim_func
    def sinks_kernel(S: T.Tensor((2,), "float16"), O: T.Tensor((2, 64), "float32")):
        with T.Kernel(2, threads=128) as bx:
            sinks = T.alloc_fragment((1,), "float16")
            for i in T.Parallel(64):
                sinks[i] = S[bx]
            for i in T.Parallel(64):
                O[bx, i] = sinks[i] * 2.0 + i

    s = np.array([1.5, -3.0], np.float16)
    for target in (SM80, "cpu", "metal -emulate"):
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="tilelang"):
            o = tilelang.compile(sinks_kernel, out_idx=[1], target=target)(s)
        np.testing.assert_array_equal(o, s.astype(np.float32)[:, None] * 2 + np.arange(64))
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert len(warnings) == 1 and "test_thread_level_semantics.py" in warnings[0], warnings
        assert (
            "loops write fragment 'sinks' (shape [1]) to index 63 in dimension 0, past its "
            "shape; it holds [64] in this kernel" in warnings[0]
        ), warnings


def test_an_on_chip_index_the_loops_take_out_of_bounds_is_refused():
    """Reads past what a fragment's writes cover, and shared memory indexed past its
    shape, are refused at the line (the grown fragment holds only what was written)."""

    @T.prim_func
    def reads_past(S: T.Tensor((1,), "float16"), O: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            sinks = T.alloc_fragment((1,), "float16")
            for i in T.Parallel(32):
                sinks[i] = S[0]
            for i in T.Parallel(64):
                O[i] = sinks[i] * 2.0

    @T.prim_func
    def shared_past(S: T.Tensor((1,), "float16"), O: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            small = T.alloc_shared((1,), "float16")
            for i in T.Parallel(64):
                small[i] = S[0]
            T.copy(small, O[0:1])

    for kernel, message in [
        (
            reads_past,
            (
                "reads sinks[...] with index i in dimension 0, which the loops around it "
                "take over [0, 63], but 'sinks' has 32 elements there (shape [32])"
            ),
        ),
        (
            shared_past,
            (
                "writes small[...] with index i in dimension 0, which the loops around it "
                "take over [0, 63], but 'small' has 1 elements there (shape [1])"
            ),
        ),
    ]:
        for target in (SM80, "cpu"):
            with pytest.raises(tilelang.TileLangError) as err:
                tilelang.compile(kernel, target=target)
            text = str(err.value)
            assert "test_thread_level_semantics.py" in text, text
            assert message in text, text


def test_guarded_on_chip_accesses_are_left_to_run():
    @T.prim_func
    def guarded(S: T.Tensor((4,), "float32"), O: T.Tensor((64,), "float32")):
        with T.Kernel(1, threads=128) as _:
            small = T.alloc_shared((4,), "float32")
            T.copy(S, small)
            for i in T.Parallel(64):
                O[i] = T.if_then_else(i < 4, small[i], 0.0)

    s = np.arange(4, dtype=np.float32) + 1
    o = tilelang.compile(guarded, out_idx=[1], target="cpu")(s)
    np.testing.assert_array_equal(o, np.concatenate([s, np.zeros(60, np.float32)]))


def pipelined_from_register(N=256, BN=64):
    @T.prim_func
    def from_start(A: T.Tensor((N, 64), "float16"), B: T.Tensor((BN, 64), "float32")):
        with T.Kernel(1, threads=128) as _:
            a_s = T.alloc_shared((BN, 64), "float16")
            acc = T.alloc_fragment((BN, 64), "float32")
            start = T.alloc_local((1,), "int32")
            start[0] = 1
            T.clear(acc)
            for k in T.Pipelined(start[0], N // BN, num_stages=2):
                T.copy(A[k * BN : (k + 1) * BN, :], a_s)
                for i, j in T.Parallel(BN, 64):
                    acc[i, j] += a_s[i, j]
            T.copy(acc, B)

    return from_start


def test_a_pipelined_loop_starting_at_a_register_value():
    a = rng.standard_normal((256, 64)).astype(np.float16)
    want = a.astype(np.float32).reshape(4, 64, 64)[1:].sum(0)
    for target in (SM90A, "cpu"):
        b = tilelang.compile(pipelined_from_register(), out_idx=[1], target=target)(a)
        np.testing.assert_allclose(b, want, rtol=1e-3, atol=1e-3)


def dot_of_int8_rows():
    @T.prim_func
    def rows(
        A: T.Tensor((64, 16), "int8"), B: T.Tensor((16,), "int8"), C: T.Tensor((64,), "int32")
    ):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            a = T.alloc_local((16,), "int8")
            acc = T.alloc_local((1,), "int32")
            T.copy(A[tx, :], a)
            T.clear(acc)
            for q in T.serial(4):
                T.dp4a(a[q * 4], B[q * 4], acc)  # elements: four lanes from there
            C[tx] = acc[0]

    return rows


@pytest.mark.parametrize("target", [SM80, "cpu"])
def test_dp4a_sums_four_int8_products(target):
    a = rng.integers(-128, 128, (64, 16)).astype(np.int8)
    b = rng.integers(-128, 128, 16).astype(np.int8)
    c = np.zeros(64, np.int32)
    tilelang.compile(dot_of_int8_rows(), target=target)(a, b, c)
    np.testing.assert_array_equal(c, a.astype(np.int32) @ b.astype(np.int32))


@pytest.mark.parametrize(
    ("a_dtype", "b_dtype", "c_dtype", "named"),
    [
        ("float16", "float16", "int32", "A ('a') is float16"),
        ("int8", "int8", "float32", "C ('C') is float32"),
        ("uint8", "uint8", "int32", "A ('a') is uint8"),  # signed only, as TileLang
        ("int8", "float16", "int32", "B ('b') is float16"),
    ],
)
def test_dp4a_names_a_wrong_operand(a_dtype, b_dtype, c_dtype, named):
    with pytest.raises(
        tilelang.TileLangError, match=r"T.dp4a requires int8 A and B and an int32 C"
    ) as info:

        @T.prim_func
        def wrong(C: T.Tensor((1,), c_dtype)):
            with T.Kernel(1) as _:
                a = T.alloc_local((4,), a_dtype)
                b = T.alloc_local((4,), b_dtype)
                T.dp4a(a, b, C)

    assert named in str(info.value)


def producer_and_consumer(N=512):
    @T.prim_func
    def hand_made(A: T.Tensor((N,), "float32"), B: T.Tensor((N,), "float32")):
        with T.Kernel(1, threads=256) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((N,), "float32")
            bar = T.alloc_barrier(arrive_count=128)
            if tx < 128:  # consumers wait on the mbarrier
                T.barrier_wait(bar, 0)
                for v in T.serial(4):
                    B[tx * 4 + v] = S[tx * 4 + v] * 2
            else:  # producers store element by element, then arrive
                for v in T.serial(4):
                    S[(tx - 128) * 4 + v] = A[(tx - 128) * 4 + v]
                T.barrier_arrive(bar)

    return hand_made


def test_no_block_barrier_in_a_branch_some_threads_skip():
    # A block barrier in the producers' branch would wait for the consumers, who wait
    # on the producers' mbarrier: a hang on the GPU.
    source = tilelang.compile(
        producer_and_consumer(), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    assert source.count("__syncthreads()") == 1, source  # after the mbarrier's init only
    a = rng.standard_normal(512).astype(np.float32)
    b = np.zeros(512, np.float32)
    tilelang.compile(producer_and_consumer(), target=SM90A)(a, b)
    np.testing.assert_array_equal(b, a * 2)


def test_a_threads_own_stores_in_a_loop_need_no_barrier_between_them():
    @T.prim_func
    def own_stores(A: T.Tensor((512,), "float32"), B: T.Tensor((512,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((512,), "float32")
            for v in T.serial(4):
                S[tx * 4 + v] = A[tx * 4 + v]  # each thread its own elements
            for v in T.serial(4):
                B[tx * 4 + v] = S[511 - tx * 4 - v]  # others' elements: one barrier before

    source = tilelang.compile(own_stores, target="cuda -arch=sm_90a").get_kernel_source()
    assert source.count("__syncthreads()") == 1, source
    a = rng.standard_normal(512).astype(np.float32)
    for target in (SM80, "cpu"):
        b = tilelang.compile(own_stores, out_idx=[1], target=target)(a)
        np.testing.assert_array_equal(b, a[::-1])


def test_tensor_subscripts_element_fills_and_unlaunched_dims():
    @T.prim_func
    def forms(
        A: T.Tensor[(128,), T.int32], B: T.Tensor[(128,), T.int32], C: T.Tensor[(2,), T.int32]
    ):
        with T.Kernel(1) as _:  # one dimension of threads: y and z are index 0, extent 1
            tx = T.get_thread_binding(0)
            ty = T.get_thread_binding(1)
            loc = T.alloc_buffer((1,), "int32", scope="local")
            sh = T.alloc_buffer((128,), "int32", scope="shared")
            s = T.alloc_shared((2,), "int32")
            T.fill(s, 7)
            T.fill(s[0], 0)  # one element
            loc[0] = A[tx] + ty * 1000 + T.get_thread_extent(2) - 1
            sh[tx] = loc[0]
            B[tx] = sh[127 - tx]
            C[0] = s[0]
            C[1] = s[1]

    a = np.arange(128, dtype=np.int32)
    for target in (SM80, "cpu"):
        b, c = tilelang.compile(forms, out_idx=[1, 2], target=target)(a)
        np.testing.assert_array_equal(b, a[::-1])
        np.testing.assert_array_equal(c, [0, 7])
    assert T.dtype("e4m3_float8") == T.float8_e4m3fn and T.dtype("e5m2_float8") == T.float8_e5m2
    # Subscripts that are all sizes are the shape, in float32 (TileLang's rule).
    assert T.Tensor[(4,)].dtype == T.Tensor[4, 2].dtype == "float32"
    assert list(T.Tensor[4, 2].shape) == [4, 2]
    with pytest.raises(tilelang.TileLangError, match=r"T.Tensor\[...\] takes a shape and a dtype"):
        T.Tensor[(4,), "float32", "extra"]
    with pytest.raises(
        tilelang.TileLangError, match="scope 'global' is not one a kernel allocates"
    ):

        @T.prim_func
        def scratch(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as _:
                T.alloc_buffer((4,), "float32")


def named_barrier(threads=512, count=256):
    @T.prim_func
    def half_block(A: T.Tensor((256,), "int32"), B: T.Tensor((256,), "int32")):
        with T.Kernel(1, threads=threads) as _:
            tx = T.get_thread_binding()
            s = T.alloc_shared((256,), "int32")
            if tx < 256:
                s[tx] = A[tx]
                T.sync_threads(3, count)  # the first 256 threads only
                B[tx] = s[255 - tx]

    return half_block


def test_named_barriers_of_part_of_the_block():
    a = np.arange(256, dtype=np.int32)
    for target in (SM90A, "cpu"):  # the cpu target's fibers wait for `count` arrivals
        b = tilelang.compile(named_barrier(), out_idx=[1], target=target)(a)
        np.testing.assert_array_equal(b, a[::-1])
    with pytest.raises(Exception, match=r"T.sync_threads\(3, 384\): only 256 thread\(s\) reached"):
        tilelang.compile(named_barrier(count=384), out_idx=[1], target="cpu")(a)
    with pytest.raises(tilelang.TileLangError) as err:
        tilelang.compile(named_barrier(), out_idx=[1], target="metal -emulate")
    assert "named barrier of part of the block" in str(err.value)
    assert "test_thread_level_semantics.py" in str(err.value)
    with pytest.raises(tilelang.TileLangError, match=r"barrier_id must be a constant in \[1, 15\]"):

        @T.prim_func
        def bad_id(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=64) as _:
                T.sync_threads(0, 64)


def test_tvmscript_if_frames():
    @T.prim_func
    def frames(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32"), rows: T.int32):
        with T.Kernel(1, threads=128) as _:
            for i, j in T.Parallel(64, 64):
                with T.If(i < rows):
                    with T.Then():
                        B[i, j] = A[i, j]
                    with T.Else():
                        B[i, j] = -1.0
            for i in T.Parallel(64):
                with T.If(i == 0), T.Then():
                    B[i, 0] = 7.0

    a = rng.standard_normal((64, 64)).astype(np.float32)
    want = np.where(np.arange(64)[:, None] < 10, a, -1.0).astype(np.float32)
    want[0, 0] = 7.0
    for target in (SM80, "cpu"):
        b = np.zeros((64, 64), np.float32)
        tilelang.compile(frames, target=target)(a, b, 10)
        np.testing.assert_array_equal(b, want)
    with pytest.raises(tilelang.TileLangError, match=r"T.Else\(\) follows one T.Then\(\)"):

        @T.prim_func
        def else_first(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as _, T.If(A[0] > 0), T.Else():
                A[0] = 1.0

    with pytest.raises(tilelang.TileLangError, match=r"T.Then\(\) belongs directly inside"):

        @T.prim_func
        def no_if(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as _, T.Then():
                A[0] = 1.0


def specialized_by_hand():
    """TileLang's hand-written warp specialization (deepseek_mla decode_ws's shape): a
    consumer branch of tile ops, a producer branch of element copies under T.attr's
    async_scope that arrives on an mbarrier with T.cp_async_barrier_noinc."""

    @T.prim_func
    def by_hand(
        A: T.Tensor((64, 64), "float16"),
        B: T.Tensor((64, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=256) as _:
            tx = T.get_thread_binding()
            a = T.alloc_shared((64, 64), "float16")
            b = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            full = T.alloc_barrier(arrive_count=128)
            if tx < 128:
                T.barrier_wait(full, 0)
                T.clear(acc)
                T.gemm(a, b, acc, transpose_B=True)
                T.copy(acc, C)
            else:
                for r in T.serial(32):  # 64 x 64 elements over 128 producers
                    e = r * 128 + (tx - 128)
                    with T.attr(0, "async_scope", 1):
                        a[e // 64, e % 64] = A[e // 64, e % 64]
                        b[e // 64, e % 64] = B[e // 64, e % 64]
                T.cp_async_barrier_noinc(full)

    return by_hand


def test_hand_written_producer_and_consumer_branches():
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 64)).astype(np.float16)
    c = tilelang.compile(specialized_by_hand(), out_idx=[2], target=SM90A)(a, b)
    np.testing.assert_allclose(
        c, a.astype(np.float32) @ b.astype(np.float32).T, rtol=1e-3, atol=1e-3
    )
    source = tilelang.compile(
        specialized_by_hand(), out_idx=[2], target="cuda -arch=sm_90a"
    ).get_kernel_source()
    producer = source[source.index("else") :]
    assert "__syncthreads" not in producer, (
        producer
    )  # the producers never meet the consumers at one
    with pytest.raises(tilelang.TileLangError, match="T.attr: key 'pragma' is not supported"):

        @T.prim_func
        def other_key(A: T.Tensor((4,), "float32")):
            with T.Kernel(1) as _, T.attr(0, "pragma", 1):
                A[0] = 1.0


def barriers_by_index(K=256, BK=64, stages=2):
    @T.prim_func
    def by_index(
        A: T.Tensor((64, K), "float16"),
        B: T.Tensor((K, 64), "float16"),
        C: T.Tensor((64, 64), "float32"),
    ):
        with T.Kernel(1, threads=256) as _:
            a = T.alloc_shared((stages, 64, BK), "float16")
            b = T.alloc_shared((stages, BK, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            T.create_list_of_mbarrier([128, 128] * stages)  # full 0..1, then empty 2..3
            with T.ws(0):
                T.clear(acc)
            for k in T.serial(K // BK):
                with T.ws(1):
                    T.mbarrier_wait_parity(
                        mbarrier=k % stages + stages, parity=((k // stages) % 2) ^ 1
                    )
                    T.copy(A[0:64, k * BK : (k + 1) * BK], a[k % stages, :, :])
                    T.copy(B[k * BK : (k + 1) * BK, 0:64], b[k % stages, :, :])
                    T.mbarrier_arrive(mbarrier=k % stages)
                with T.ws(0):
                    T.mbarrier_wait_parity(mbarrier=k % stages, parity=(k // stages) % 2)
                    T.gemm(a[k % stages, :, :], b[k % stages, :, :], acc)
                    T.mbarrier_arrive(mbarrier=k % stages + stages)
            with T.ws(0):
                T.copy(acc, C)

    return by_index


def test_mbarriers_named_by_index():
    a = rng.standard_normal((64, 256)).astype(np.float16)
    b = rng.standard_normal((256, 64)).astype(np.float16)
    c = tilelang.compile(barriers_by_index(), out_idx=[2], target=SM90A)(a, b)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-2, atol=1e-2)
    with pytest.raises(tilelang.TileLangError, match="index 4 is outside the kernel's 4 mbarriers"):

        @T.prim_func
        def past_the_list(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=128) as _:
                T.create_list_of_mbarrier(128, 128, 128, 128)
                T.mbarrier_arrive(mbarrier=4)


def handoff_through_named_barriers():
    """Warp 0 writes a slot and arrives at barrier 10 (without waiting); warp 1 waits
    there, reads the slot, and arrives at barrier 11, which warp 0 waits on
    (TileLang issue 2188)."""

    @T.prim_func
    def handoff(inp: T.Tensor((1,), "int32"), out: T.Tensor((2,), "int32")):
        with T.Kernel(1, threads=64) as _:
            tx = T.get_thread_binding()
            slot = T.alloc_shared((1,), "int32")
            if tx < 32:
                if tx == 0:
                    slot[0] = inp[0] + 1
                T.named_barrier_arrive(10, 64)
                T.sync_threads(11, 64)
                if tx == 0:
                    out[1] = slot[0] * 3
            else:
                T.sync_threads(10, 64)
                if tx == 32:
                    out[0] = slot[0]
                    slot[0] = slot[0] * 2
                T.named_barrier_arrive(11, 64)

    return handoff


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
def test_named_barrier_arrive_signals_without_waiting(target):
    out = tilelang.compile(handoff_through_named_barriers(), out_idx=[1], target=target)(
        np.array([41], np.int32)
    )
    np.testing.assert_array_equal(out, [42, 42 * 2 * 3])


def test_named_barrier_arrive_source_and_refusals():
    source = tilelang.compile(
        handoff_through_named_barriers(), target="cuda -arch=sm_90a"
    ).get_kernel_source()
    # TileLang's names (device/cuda/tma.cuh)
    assert (
        "tl::__named_barrier_arrive(10, 64);" in source
        and "tl::__sync_thread_partial(11, 64);" in source
    )
    with pytest.raises(tilelang.TileLangError, match="named barrier of part of the block"):
        tilelang.compile(handoff_through_named_barriers(), target="metal -emulate")
    with pytest.raises(
        tilelang.TileLangError, match=r"arrive_count must be a constant multiple of 32"
    ):

        @T.prim_func
        def bad(A: T.Tensor((4,), "int32")):
            with T.Kernel(1, threads=64) as _:
                T.named_barrier_arrive(1, 48)


@pytest.mark.parametrize("target", [SM80, SM90A, "cpu"])
def test_named_barrier_without_a_count_is_the_whole_block(target):
    @T.prim_func
    def main(A: T.Tensor((128,), "float32"), B: T.Tensor((128,), "float32")):
        with T.Kernel(1, threads=128) as _:
            tx = T.get_thread_binding()
            S = T.alloc_shared((128,), "float32")
            S[tx] = A[tx]
            T.sync_threads(T.int32(3))  # every thread of the block, at barrier 3
            B[tx] = S[127 - tx]

    kernel = tilelang.compile(main, target=target)
    a = np.random.default_rng(9).standard_normal(128).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)
    np.testing.assert_array_equal(b, a[::-1])
    if target != "cpu":
        assert "tl::__sync_thread_partial(3, 128);" in kernel.get_kernel_source()


def _masked_blocks():
    """Per 64-row block of the output, the sum of Q K_k^T over the key blocks k its mask
    row keeps: the mask is a block-wide fragment (one copy for the block, in shared
    memory) that an `if` in a pipelined loop reads around a copy and a gemm, as TileLang's
    block-sparse attention examples do."""

    @T.prim_func
    def masked(
        Q: T.Tensor((128, 64), "float16"),
        K: T.Tensor((256, 64), "float16"),
        Mask: T.Tensor((2, 4), "int8"),
        O: T.Tensor((128, 64), "float32"),
    ):
        with T.Kernel(2, threads=128) as bx:
            Q_s = T.alloc_shared((64, 64), "float16")
            K_s = T.alloc_shared((64, 64), "float16")
            acc = T.alloc_fragment((64, 64), "float32")
            out = T.alloc_fragment((64, 64), "float32")
            mask = T.alloc_fragment((4,), "int8")
            T.copy(Q[bx * 64 : (bx + 1) * 64, :], Q_s)
            T.copy(Mask[bx, :], mask)
            T.clear(out)
            for k in T.Pipelined(4, num_stages=1):
                if mask[k] != 0:
                    T.copy(K[k * 64 : (k + 1) * 64, :], K_s)
                    T.clear(acc)
                    T.gemm(Q_s, K_s, acc, transpose_B=True)
                    for i, j in T.Parallel(64, 64):
                        out[i, j] += acc[i, j]
            T.copy(out, O[bx * 64 : (bx + 1) * 64, :])

    return masked


@pytest.mark.parametrize("arch", ["sm_80", "sm_90a"])
def test_a_branch_on_a_block_wide_fragment_gets_barriers_inside(arch):
    # Every thread reads the same element of a block-wide fragment, so the branch is
    # taken alike and the copy's writes get a barrier before the gemm reads them (a
    # fragment read in a condition counted as differing between threads, which left the
    # branch without barriers: the gemm read a partly written tile).
    kernel = tilelang.compile(_masked_blocks(), target=f"cuda -arch={arch} -emulate")
    body = kernel.get_kernel_source().split("!= ((int8_t)0)")[1]
    gemm = "wgmma_gemm_ss<" if arch == "sm_90a" else "gemm_ss<"
    assert "__syncthreads();" in body[: body.index(gemm)]
    rng = np.random.default_rng(12)
    q = rng.standard_normal((128, 64)).astype(np.float16)
    k = rng.standard_normal((256, 64)).astype(np.float16)
    mask = np.array([[1, 0, 1, 1], [0, 1, 1, 0]], np.int8)
    o = np.zeros((128, 64), np.float32)
    kernel(q, k, mask, o)
    qf, kf = q.astype(np.float32), k.astype(np.float32)
    for b in range(2):
        want = sum(
            qf[b * 64 : (b + 1) * 64] @ kf[j * 64 : (j + 1) * 64].T for j in range(4) if mask[b, j]
        )
        np.testing.assert_allclose(o[b * 64 : (b + 1) * 64], want, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("target", ["cuda -arch=sm_80 -emulate", "metal -emulate"])
def test_vector_reads_of_a_shared_tile_need_no_barrier_between_them(target):
    # The lowering's vector moves say which operand they read and which they write: a
    # tile read into registers (tl::load_vec) and then copied into another tile
    # (tl::copy_vec) is read twice, with no barrier between (the read counted as a
    # write before, which put one there).
    @T.prim_func
    def twice(A: T.Tensor((64, 64), "float32"), B: T.Tensor((64, 64), "float32")):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((64, 64), "float32")
            D = T.alloc_shared((64, 64), "float32")
            F = T.alloc_fragment((64, 64), "float32")
            T.copy(A, S)
            T.copy(S, F)
            T.copy(S, D)
            for i, j in T.Parallel(64, 64):
                B[i, j] = D[i, j] + F[i, j]

    kernel = tilelang.compile(twice, target=target)
    src = kernel.get_kernel_source()
    sync = "__syncthreads();" if "cuda" in target else "threadgroup_barrier("
    # One after the tile is written, one after D is written; none between the reads.
    assert src.count(sync) == 2, src
    a = np.random.default_rng(3).standard_normal((64, 64)).astype(np.float32)
    b = np.zeros_like(a)
    kernel(a, b)  # the emulators' race detectors would report a missing barrier
    np.testing.assert_array_equal(b, a + a)
