"""Warp-level helpers (T.get_lane_idx and friends, T.shfl_*, T.ballot, T.any_sync,
T.all_sync, T.activemask, T.sync_warp) on the cpu target (lanes are fibers) and in the
CUDA emulator, against numpy on random data; their CUDA source compiled for sm_80 and
sm_90 by NVRTC and nvcc; and the frontend's errors. tests/gpu/test_warp_gpu.py runs the
same kernels on a GPU."""

import inspect

import ml_dtypes
import numpy as np
import pytest
import tilelang
import tilelang.language as T
from tilelang.utils.target import available_targets

METAL = "metal -emulate"  # simdgroups of 32 lanes; masks are not checked there
TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", METAL]
rng = np.random.default_rng(11)


def line_of(marker):
    """The line number in this file of the line containing `marker`."""
    lines, _ = inspect.findsource(inspect.getmodule(line_of))
    return next(i + 1 for i, text in enumerate(lines) if marker in text and "line_of" not in text)


# ---- kernels (also run on the GPU by tests/gpu/test_warp_gpu.py)


def warp_sum(n, threads=128):
    """Each warp's sum by a shfl_xor butterfly: every lane gets it (B), lane 0 stores it (S)."""
    warps = threads // 32

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"),
        B: T.Tensor((n,), "float32"),
        S: T.Tensor((n // 32,), "float32"),
    ):
        with T.Kernel(n // threads, threads=threads) as bx:
            tx = T.get_thread_binding()
            acc = T.alloc_local((1,), "float32")
            acc[0] = A[bx * threads + tx]
            for k in T.unroll(5):
                acc[0] += T.shfl_xor(acc[0], 16 >> k)
            B[bx * threads + tx] = acc[0]
            if T.get_lane_idx() == 0:
                S[bx * warps + T.get_warp_idx()] = acc[0]

    return main


def shuffles(n, dtype, width, delta, src):
    """shfl_down / shfl_up / shfl_sync / shfl_xor of A with the given width, one output each."""

    @T.prim_func
    def main(
        A: T.Tensor((n,), dtype),
        Down: T.Tensor((n,), dtype),
        Up: T.Tensor((n,), dtype),
        Idx: T.Tensor((n,), dtype),
        Xor: T.Tensor((n,), dtype),
    ):
        with T.Kernel(n // 64, threads=64) as bx:
            i = bx * 64 + T.get_thread_binding()
            v = A[i]
            Down[i] = T.shfl_down(v, delta, width=width)
            Up[i] = T.shfl_up(v, delta, width=width)
            Idx[i] = T.shfl_sync(v, src, width=width)
            Xor[i] = T.shfl_xor(v, delta, width=width)

    return main


def votes(n, threads, mask):
    """Per thread: ballot, ballot_sync(mask), any_sync, all_sync of A[i] > 0, activemask."""

    @T.prim_func
    def main(
        A: T.Tensor((n,), "float32"),
        Ballot: T.Tensor((n,), "uint64"),
        Masked: T.Tensor((n,), "uint64"),
        Any: T.Tensor((n,), "int32"),
        All: T.Tensor((n,), "int32"),
        Active: T.Tensor((n,), "uint64"),
    ):
        with T.Kernel(n // threads, threads=threads) as bx:  # MARK-votes
            i = bx * threads + T.get_thread_binding()
            positive = A[i] > 0
            Ballot[i] = T.ballot(positive)
            Masked[i] = T.ballot_sync(positive, mask=mask)
            Any[i] = T.any_sync(positive, mask)
            All[i] = T.all_sync(positive)
            Active[i] = T.activemask()

    return main


def indices(shape, warp_size, warps_per_group):
    """Lane, warp, warp (sync) and warp-group indices of each thread of a 3-d block, plus
    Shift[0] (an input, so that the outputs live where the inputs do)."""
    ex, ey, ez = shape

    @T.prim_func
    def main(
        Shift: T.Tensor((1,), "int32"),
        Lane: T.Tensor((ez, ey, ex), "int32"),
        Warp: T.Tensor((ez, ey, ex), "int32"),
        WarpSync: T.Tensor((ez, ey, ex), "int32"),
        Group: T.Tensor((ez, ey, ex), "int32"),
        DefaultLane: T.Tensor((ez, ey, ex), "int32"),
        DefaultGroup: T.Tensor((ez, ey, ex), "int32"),
    ):
        with T.Kernel(1, threads=[ex, ey, ez]):
            tx, ty, tz = T.get_thread_bindings()
            s = Shift[0]
            Lane[tz, ty, tx] = T.get_lane_idx(warp_size) + s
            Warp[tz, ty, tx] = T.get_warp_idx(warp_size) + s
            WarpSync[tz, ty, tx] = T.get_warp_idx_sync(warp_size) + s
            Group[tz, ty, tx] = T.get_warp_group_idx(warp_size, warps_per_group) + s
            DefaultLane[tz, ty, tx] = T.get_lane_idx() + s
            DefaultGroup[tz, ty, tx] = T.get_warp_group_idx() + s

    return main


def warp_rotate_through_shared(n):
    """Each lane writes shared memory, T.sync_warp, then reads its warp neighbour's slot."""

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(n // 64, threads=64) as bx:
            tx = T.get_thread_binding()
            S = T.alloc_shared((64,), "float32")
            S[tx] = A[bx * 64 + tx] * 2
            T.sync_warp()
            lane = T.get_lane_idx()
            B[bx * 64 + tx] = S[T.get_warp_idx() * 32 + (lane + 1) % 32]

    return main


def uniform_votes(blocks, threads):
    """Votes in code that reads no thread index (the cpu target runs it on one executor)."""

    @T.prim_func
    def main(A: T.Tensor((blocks,), "float32"), Out: T.Tensor((blocks, 3), "uint64")):
        with T.Kernel(blocks, threads=threads) as bx:
            Out[bx, 0] = T.ballot(A[bx] > 0)
            Out[bx, 1] = T.activemask()
            Out[bx, 2] = T.any_sync(A[bx] > 0)

    return main


# ---- numpy references


def lanes_of(n):
    """Lane and warp-base index of each of n threads (blocks are whole warps)."""
    i = np.arange(n)
    return i % 32, i - i % 32


def expected_shuffles(a, width, delta, src):
    lane, base = lanes_of(len(a))
    i = np.arange(len(a))
    in_group = lane % width
    down = np.where(in_group + delta < width, i + delta, i)
    up = np.where(in_group >= delta, i - delta, i)
    idx = base + (lane & ~(width - 1)) + (src & (width - 1))
    partner = lane ^ delta
    xor = np.where(partner < (lane // width + 1) * width, base + partner, i)
    return a[down], a[up], a[idx], a[xor]


INDEX_CASES = [((16, 4, 2), 32, 2), ((8, 3, 4), 16, 3), ((40, 2, 3), 32, 1)]


def expected_indices(shape, warp_size, group, shift):
    ex, ey, ez = shape
    rank = np.arange(ex * ey * ez).reshape(ez, ey, ex)
    return [
        rank % warp_size + shift,
        rank // warp_size + shift,
        rank // warp_size + shift,
        rank // (warp_size * group) + shift,
        rank % 32 + shift,
        rank // 128 + shift,
    ]


# Masks that hold every lane the block has: every thread reaches each warp-level call,
# so on the GPU too a lane outside the mask would be undefined behaviour.
VOTE_CASES = [(128, 0xFFFFFFFF), (48, 0xFFFFFFFF), (16, 0x0000FFFF)]


def expected_votes(a, threads, mask):
    """Warps are 32 consecutive threads of a block; a block may end with a partial warp."""
    n = len(a)
    positive = a > 0
    ballot = np.zeros(n, np.uint64)
    active = np.zeros(n, np.uint64)
    for block in range(0, n, threads):
        for start in range(block, block + threads, 32):
            end = min(start + 32, block + threads)
            ballot[start:end] = sum(1 << (i - start) for i in range(start, end) if positive[i])
            active[start:end] = (1 << (end - start)) - 1
    masked = ballot & np.uint64(mask)
    any_ = (masked != 0).astype(np.int32)
    all_ = (ballot == active).astype(np.int32)
    return ballot, masked, any_, all_, active


NP_DTYPES = {
    "float32": np.float32,
    "float16": np.float16,
    "bfloat16": ml_dtypes.bfloat16,
    "float64": np.float64,
    "int64": np.int64,
    "int8": np.int8,
}


def random_values(n, dtype):
    if dtype.startswith("int"):
        info = np.iinfo(NP_DTYPES[dtype])
        return rng.integers(info.min, info.max, n, dtype=NP_DTYPES[dtype])
    return rng.standard_normal(n).astype(NP_DTYPES[dtype])


def signed_with_uniform_warps(n):
    """Random signs, plus one warp all positive and one all negative (any/all both ways)."""
    a = rng.standard_normal(n).astype(np.float32)
    a[:32] = np.abs(a[:32]) + 0.5
    a[32:64] = -np.abs(a[32:64]) - 0.5
    return a


# ---- runs


@pytest.mark.parametrize("target", TARGETS)
def test_warp_sum_by_shfl_xor(target):
    n = 512
    kernel = tilelang.compile(warp_sum(n), out_idx=[1, 2], target=target)
    a = rng.standard_normal(n).astype(np.float32)
    b, s = kernel(a)
    sums = a.astype(np.float64).reshape(-1, 32).sum(axis=1)
    np.testing.assert_allclose(s, sums, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(b, np.repeat(sums, 32), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "dtype, width, delta, src",
    [
        ("float32", 32, 1, 7),
        ("float16", 16, 3, 21),
        ("bfloat16", 8, 5, 2),
        ("float64", 32, 13, 31),
        ("int64", 4, 2, -1),
        ("int8", 32, 16, 40),
    ],
)
def test_shuffles_move_lanes_as_cuda_defines(target, dtype, width, delta, src):
    n = 128
    if target == METAL and dtype in ("float64", "int64", "int8"):
        with pytest.raises(tilelang.TileLangError, match="not supported on Metal"):
            tilelang.compile(shuffles(n, dtype, width, delta, src), target=target)
        return
    kernel = tilelang.compile(
        shuffles(n, dtype, width, delta, src), out_idx=[1, 2, 3, 4], target=target
    )
    a = random_values(n, dtype)
    for got, ref in zip(kernel(a), expected_shuffles(a, width, delta, src)):
        np.testing.assert_array_equal(got.view(np.uint8), ref.view(np.uint8))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("threads, mask", VOTE_CASES)
def test_votes_match_numpy(target, threads, mask):
    n = threads * 4
    kernel = tilelang.compile(votes(n, threads, mask), out_idx=[1, 2, 3, 4, 5], target=target)
    a = signed_with_uniform_warps(n)
    names = ["ballot", "ballot_sync", "any_sync", "all_sync", "activemask"]
    for name, got, ref in zip(names, kernel(a), expected_votes(a, threads, mask)):
        np.testing.assert_array_equal(got, ref, err_msg=name)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("shape, warp_size, group", INDEX_CASES)
def test_lane_warp_and_group_indices(target, shape, warp_size, group):
    kernel = tilelang.compile(
        indices(shape, warp_size, group), out_idx=list(range(1, 7)), target=target
    )
    shift = rng.integers(-1000, 1000, 1).astype(np.int32)
    names = ["lane", "warp", "warp_sync", "group", "default lane", "default group"]
    for name, got, ref in zip(
        names, kernel(shift), expected_indices(shape, warp_size, group, shift[0])
    ):
        np.testing.assert_array_equal(got, ref, err_msg=name)


@pytest.mark.parametrize("target", TARGETS)
def test_sync_warp_orders_shared_memory_within_a_warp(target):
    n = 256
    kernel = tilelang.compile(warp_rotate_through_shared(n), out_idx=[1], target=target)
    a = rng.standard_normal(n).astype(np.float32)
    ref = (a * 2).reshape(-1, 32)
    np.testing.assert_array_equal(kernel(a), np.roll(ref, -1, axis=1).reshape(-1))


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("threads", [16, 64])
def test_votes_in_code_without_thread_indices(target, threads):
    blocks = 6
    kernel = tilelang.compile(uniform_votes(blocks, threads), out_idx=[1], target=target)
    a = rng.standard_normal(blocks).astype(np.float32)
    a[0], a[1] = 1.0, -1.0
    lanes = np.uint64((1 << min(threads, 32)) - 1)
    out = kernel(a)
    np.testing.assert_array_equal(out[:, 0], np.where(a > 0, lanes, np.uint64(0)))
    np.testing.assert_array_equal(out[:, 1], np.full(blocks, lanes))
    np.testing.assert_array_equal(out[:, 2], (a > 0).astype(np.uint64))


def test_cuda_source_calls_the_device_helpers():
    if "cuda" not in available_targets():
        pytest.skip("NVRTC not found (libnvrtc.so.13 or .so.12 on the loader path)")
    for arch in ("sm_80", "sm_90"):
        for func in (warp_sum(256), votes(256, 128, 0xFF), shuffles(128, "float16", 16, 3, 5)):
            src = tilelang.compile(func, target=f"cuda -arch={arch}").get_kernel_source()
            assert "tl::" in src
        src = tilelang.compile(
            votes(256, 128, 0xFF), target=f"cuda -arch={arch}"
        ).get_kernel_source()
        # CUDA's own intrinsics, as TileLang's CUDA code prints them (one for both ballots)
        for name in ("__ballot_sync(0xffffffffu, ", "__any_sync(", "__all_sync(", "__activemask()"):
            assert name in src, name
        assert src.count("__ballot_sync(") == 2, src
        assert "tl::ballot" not in src and "tl::any_sync" not in src, src


def test_nvcc_accepts_the_cuda_source(tmp_path):
    from test_examples_cuda_source import find_nvcc, nvcc_compile

    if "cuda" not in available_targets() or find_nvcc() is None:
        pytest.skip("NVRTC or nvcc not found")
    funcs = {
        "sum": warp_sum(256),
        "shuffles": shuffles(128, "bfloat16", 8, 1, 3),
        "votes": votes(96, 48, 0xF0F0F0F0),  # compiles; running it would be undefined
        "indices": indices((8, 3, 4), 16, 3),
        "sync_warp": warp_rotate_through_shared(128),
    }
    for arch in ("sm_80", "sm_90"):
        for name, func in funcs.items():
            src = tilelang.compile(func, target=f"cuda -arch={arch}").get_kernel_source()
            cubin, log = nvcc_compile(find_nvcc(), src, arch, tmp_path / f"{name}_{arch}")
            assert cubin, log


@pytest.mark.parametrize("target", [t for t in TARGETS if t != METAL])
def test_lane_outside_its_mask_is_reported(target):
    kernel = tilelang.compile(votes(64, 64, 0xFFFF0000), out_idx=[1, 2, 3, 4, 5], target=target)
    with pytest.raises(tilelang.TileLangError) as info:
        kernel(rng.standard_normal(64).astype(np.float32))
    msg = str(info.value)
    # At the T.Kernel's line: the lines the emulator names are the generated source's.
    assert msg.startswith(f"{__file__}:{line_of('MARK-votes')}: kernel 'main': warp-level call "), (
        msg
    )
    call = "__ballot_sync" if "emulate" in target else "T.ballot_sync"
    assert (
        f"{call} by thread 0 (lane 0 of warp 0) with mask 0xffff0000, which leaves that lane out"
        in msg
    )
    assert "pass the full mask 0xFFFFFFFF" in msg


# ---- errors: the argument, what was expected, what was given, at the user's line


def _error_of(body):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((64,), "float32"), B: T.Tensor((64,), "uint64")):
            with T.Kernel(1, threads=64):
                tx = T.get_thread_binding()
                body(A, B, tx)

    return str(info.value)


def test_float_predicate_is_rejected():
    msg = _error_of(lambda A, B, tx: B.__setitem__(tx, T.ballot(A[tx])))  # MARK-pred
    assert f"{__file__}:{line_of('MARK-pred')}:" in msg
    assert "T.ballot requires an integer or boolean predicate" in msg
    assert "float32 expression" in msg


# Every vote, warp and block: their predicates are checked alike.
VOTES = [
    T.any_sync,
    T.all_sync,
    T.ballot_sync,
    T.ballot,
    T.syncthreads_count,
    T.syncthreads_and,
    T.syncthreads_or,
]


@pytest.mark.parametrize("vote", VOTES)
def test_a_float_predicate_is_a_type_error_even_outside_a_kernel(vote):
    """TileLang checks a vote's predicate first and raises a TypeError."""
    with pytest.raises(TypeError, match="requires an integer or boolean predicate"):
        vote(0.5)
    with pytest.raises(tilelang.TileLangError, match="requires an integer or boolean predicate"):
        vote(0.5)


@pytest.mark.parametrize("predicate", [1, True])
@pytest.mark.parametrize("vote", VOTES)
def test_a_vote_outside_any_kernel_is_its_call_expression(vote, predicate):
    """TileLang's warp_vote test: called where no kernel is traced, a vote returns its
    call (a tvm.tirx.Call) to inspect; in a prim_func outside T.Kernel it stays an error."""
    from tilelang import tvm

    call = vote(predicate)
    assert isinstance(call, tvm.tirx.Call)
    assert vote.__name__ in str(call)
    with pytest.raises(tilelang.TileLangError, match=r"must be called inside a `with T.Kernel"):

        @T.prim_func
        def main(A: T.Tensor((64,), "int32")):
            v = vote(A[0] > 0)
            with T.Kernel(1, threads=64):
                A[0] = v


def test_offset_that_is_not_an_int_is_rejected():
    msg = _error_of(lambda A, B, tx: A.__setitem__(tx, T.shfl_xor(A[tx], 1.5)))  # MARK-off
    assert f"{__file__}:{line_of('MARK-off')}:" in msg
    assert "T.shfl_xor delta must be an integer lane offset in [0, 32), got float 1.5" in msg


def test_float_expression_offset_is_rejected():
    msg = _error_of(lambda A, B, tx: A.__setitem__(tx, T.shfl_down(A[tx], A[0])))
    assert "T.shfl_down delta must be an integer lane offset" in msg and "float32 expression" in msg


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda A, tx: T.shfl_up(A[tx], 32), "T.shfl_up delta must be a lane offset in [0, 32), got 32"),
        (lambda A, tx: T.shfl_xor(A[tx], 1, width=12), "T.shfl_xor width must be a power of two from 1 to 32 (lanes per group), got 12"),
        (lambda A, tx: T.shfl_sync(A[tx], 0, width=64), "got 64"),
        (lambda A, tx: T.shfl_sync(A, 0), "T.shfl_sync value must be a scalar of 8, 16, 32 or 64 bits"),
        (lambda A, tx: T.any_sync(0xFFFFFFFF, A[tx] > 0), "T.any_sync mask must be a 32-bit lane mask (an integer), got bool expression"),
        (lambda A, tx: T.all_sync(A[tx] > 0, mask=1 << 40), "a warp has 32 lanes, got 0x10000000000"),
        (lambda A, tx: T.get_lane_idx(0), "T.get_lane_idx warp_size must be a positive integer, got 0"),
        (lambda A, tx: T.get_warp_idx(2.0), "T.get_warp_idx warp_size must be a positive integer (the lanes of a warp), got float 2.0"),
        (lambda A, tx: T.get_warp_group_idx(warps_per_group=2), "T.get_warp_group_idx needs warp_size when warps_per_group is given"),
        (lambda A, tx: T.shuffle_elect(-32), "T.shuffle_elect takes the group size as a non-negative Python int (0: the whole block), got -32"),
    ],
)  # fmt: skip
def test_bad_arguments_name_argument_expected_and_given(call, expected):
    msg = _error_of(lambda A, B, tx: A.__setitem__(tx, call(A, tx)))
    assert expected in msg, msg


def test_predicate_order_hint():
    msg = _error_of(lambda A, B, tx: B.__setitem__(tx, T.any_sync(0xFFFFFFFF, A[tx] > 0)))
    assert "the predicate comes first: T.any_sync(predicate, mask=0xFFFFFFFF)" in msg


def test_outside_kernel_is_an_error():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            v = T.shfl_xor(A[0], 1)  # MARK-outside
            with T.Kernel(1, threads=64):
                A[0] = v

    msg = str(info.value)
    assert f"{__file__}:{line_of('MARK-outside')}:" in msg
    assert "T.shfl_xor must be called inside a `with T.Kernel(...)` block" in msg


def test_inside_parallel_is_an_error():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def main(A: T.Tensor((64,), "float32")):
            with T.Kernel(1, threads=64):
                for i in T.Parallel(64):
                    A[i] = T.shfl_down(A[i], 1)  # MARK-parallel

    msg = str(info.value)
    assert f"{__file__}:{line_of('MARK-parallel')}:" in msg
    assert "T.shfl_down cannot be used inside a T.Parallel loop" in msg


def shuffle_elect_kernel(threads, extent):
    @T.prim_func
    def main(Shift: T.Tensor((1,), "int32"), Out: T.Tensor((threads,), "int32")):
        with T.Kernel(1, threads=threads):
            tx = T.get_thread_binding()
            Out[tx] = T.if_then_else(T.shuffle_elect(extent), Shift[0], -Shift[0])

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
@pytest.mark.parametrize("threads, extent", [(256, 64), (128, 0), (96, 32)])
def test_shuffle_elect_picks_the_first_thread_of_each_group(target, threads, extent):
    k = tilelang.compile(shuffle_elect_kernel(threads, extent), target=target)
    shift = np.array([int(np.random.default_rng(extent).integers(1, 1000))], np.int32)
    out = np.zeros(threads, np.int32)
    k(shift, out)
    tid = np.arange(threads)
    elected = tid == 0 if extent == 0 else tid % extent == 0
    np.testing.assert_array_equal(out, np.where(elected, shift[0], -shift[0]))


def bits_and_matches(n):
    """Per lane: __ffs / __fns of a ballot of random bits, __fns searching down, and
    match_any / match_all of values that groups of lanes share."""

    @T.prim_func
    def main(
        A: T.Tensor((n,), "int32"), V: T.Tensor((n,), "float32"), B: T.Tensor((n, 6), "int32")
    ):
        with T.Kernel(1, threads=n):
            tx = T.get_thread_binding()
            mask = T.ballot_sync(A[tx] > 0)
            B[tx, 0] = T.__ffs(mask)
            B[tx, 1] = T.cast(T.__fns(T.cast(mask, "uint32"), tx % 32, 2), "int32")
            B[tx, 2] = T.cast(T.__fns(T.cast(mask, "uint32"), tx % 32, -1), "int32")
            B[tx, 3] = T.cast(T.match_any_sync(V[tx]), "int32")
            B[tx, 4] = T.cast(T.match_all_sync(A[tx] * 0 + tx // 32), "int32")
            B[tx, 5] = T.cast(T.match_all_sync(A[tx]), "int32")

    return main


def _fns(mask, base, offset):
    if offset == 0:
        return base if mask >> base & 1 else 0xFFFFFFFF
    count, step, pos = abs(offset) - 1, 1 if offset > 0 else -1, base
    while 0 <= pos < 32:
        if mask >> pos & 1:
            if count == 0:
                return pos
            count -= 1
        pos += step
    return 0xFFFFFFFF


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80 -emulate"])
def test_bit_search_and_warp_match(target):
    n = 64
    kernel = tilelang.compile(bits_and_matches(n), out_idx=[2], target=target)
    a = rng.integers(-3, 3, n).astype(np.int32)
    a[32:] = 1  # the second warp holds one value throughout
    v = rng.choice(np.array([0.5, -1.25, 3.0], np.float32), n)
    got = kernel(a, v).astype(np.int64) & 0xFFFFFFFF
    for w in range(2):
        lanes = range(32 * w, 32 * w + 32)
        ballot = sum(1 << (t - 32 * w) for t in lanes if a[t] > 0)
        for t in lanes:
            ffs = (ballot & -ballot).bit_length()
            peers = sum(1 << (u - 32 * w) for u in lanes if v[u] == v[t])
            same = all(a[u] == a[t] for u in lanes)
            want = [ffs, _fns(ballot, t % 32, 2), _fns(ballot, t % 32, -1), peers,
                    0xFFFFFFFF, 0xFFFFFFFF if same else 0]  # fmt: skip
            assert list(got[t]) == want, (t, list(got[t]), want)


def test_bit_search_and_warp_match_are_refused_on_metal():
    with pytest.raises(
        tilelang.TileLangError, match="T.__ffs is available on the cuda and cpu targets"
    ):
        tilelang.compile(bits_and_matches(32), out_idx=[2], target=METAL)
