"""Tensors past 2^31 elements (docs/design/reliability.md, "64-bit indexing"): an int8
tensor of 2^31 + 4099 elements is incremented in place by elementwise and tile-copy
kernels, with a static and a dynamic shape, on the cpu target at -O0 and at its
optimised levels and under the CUDA (sm_80, sm_90a) and Metal emulators, and every
element is checked. Kernels whose indices fit int32 keep their int32 arithmetic, and a
tensor larger than an int32 symbolic dimension is refused by name.

One 2 GB buffer serves the whole module: each kernel adds 1 to every element and the
expected contents follow. CI runs pytest with --dist loadfile, so the module stays on
one worker and no two such buffers exist at once. The tests that use it are marked
large_memory (each takes seconds: the emulators run 2^31 elements through fibers)."""

import mmap
import re

import numpy as np
import pytest
import tilelang
import tilelang.language as T

N = 2**31 + 4099  # not a multiple of any tile: the tail is predicated
PERIOD = 65521  # the random pattern's period, prime: a misplaced element shows
BLOCK = 1 << 16  # elements per block of the elementwise kernels
TILE = 1 << 14  # elements per block of the tile-copy kernel

large_memory = pytest.mark.large_memory

EMULATED = ["cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate", "metal -emulate"]


def available_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    return 0


class Big:
    """The shared buffer: a random period-PERIOD int8 pattern plus `added` (mod 256)."""

    def __init__(self):
        # Huge pages where the kernel offers them: faulting in 2 GB of 4 KB pages costs
        # seconds.
        self._map = mmap.mmap(-1, N)
        if hasattr(mmap, "MADV_HUGEPAGE"):
            self._map.madvise(mmap.MADV_HUGEPAGE)
        self.array = np.frombuffer(self._map, np.int8)
        rng = np.random.default_rng(2024)
        self.pattern = rng.integers(-128, 128, PERIOD, dtype=np.int16).astype(np.int8)
        self.array[:PERIOD] = self.pattern
        done = PERIOD
        while done < N:  # doubling copies of what is already there
            n = min(done, N - done)
            self.array[done : done + n] = self.array[:n]
            done += n
        self.added = 0

    def expect_added(self, k):
        """Checks that every element is its pattern value plus k (int8 wraps)."""
        self.added = k
        want = ((self.pattern.astype(np.int16) + k) & 0xFF).astype(np.uint8).view(np.int8)
        a = self.array
        assert np.array_equal(a[:PERIOD], want), "the first period differs"
        # The rest repeats the first period: compare each chunk with the one a period
        # earlier (64 MB at a time, no copy of the buffer).
        chunk = 1 << 26
        for start in range(PERIOD, N, chunk):
            end = min(start + chunk, N)
            same = np.array_equal(a[start:end], a[start - PERIOD : end - PERIOD])
            if not same:
                bad = start + int(np.argmax(a[start:end] != a[start - PERIOD : end - PERIOD]))
                pytest.fail(f"element {bad} is {a[bad]}, expected {want[bad % PERIOD]}")


@pytest.fixture(scope="module")
def big():
    if available_bytes() < 6 * 2**30:
        pytest.skip("needs 6 GB of free memory for a 2 GB tensor (2^31 + 4099 int8 elements)")
    buffer = Big()
    yield buffer
    del buffer.array


def run(big, kernel):
    kernel(big.array)
    big.expect_added(big.added + 1)


def elementwise_static(n):
    @T.prim_func
    def main(A: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    A[bx * BLOCK + i] = A[bx * BLOCK + i] + 1

    return main


def elementwise_dynamic(dtype="int64"):
    n = T.dynamic("n", dtype)

    @T.prim_func
    def main(A: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, BLOCK), threads=128) as bx:
            for i in T.Parallel(BLOCK):
                if bx * BLOCK + i < n:
                    A[bx * BLOCK + i] = A[bx * BLOCK + i] + 1

    return main


def tile_copy(n):
    """Global -> shared -> fragment (+1) -> global, with T.copy on both ends."""

    @T.prim_func
    def main(A: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, TILE), threads=128) as bx:
            s = T.alloc_shared((TILE,), "int8")
            f = T.alloc_fragment((TILE,), "int8")
            T.copy(A[bx * TILE : (bx + 1) * TILE], s)
            T.copy(s, f)
            for i in T.Parallel(TILE):
                f[i] = f[i] + 1
            T.copy(f, A[bx * TILE : (bx + 1) * TILE])

    return main


def tile_copy_window(n, tiles):
    """The same over the last `tiles` tiles of A only, into B: the emulators run each
    block's threads as fibers and check every shared-memory access for races, too slow
    for 2^17 blocks, while the indices past 2^31 are all in these."""
    first = (n + TILE - 1) // TILE - tiles

    @T.prim_func
    def main(A: T.Tensor((n,), "int8"), B: T.Tensor((tiles * TILE,), "int8")):
        with T.Kernel(tiles, threads=128) as bx:
            s = T.alloc_shared((TILE,), "int8")
            f = T.alloc_fragment((TILE,), "int8")
            T.copy(A[(first + bx) * TILE : (first + bx + 1) * TILE], s)
            T.copy(s, f)
            for i in T.Parallel(TILE):
                f[i] = f[i] + 1
            T.copy(f, B[bx * TILE : (bx + 1) * TILE])

    return main, first * TILE


# ---- the whole tensor, checked element by element


@large_memory
@pytest.mark.parametrize("flags", [["-O0"], []], ids=["O0", "O3"])
def test_cpu_static_shape(big, flags):
    run(big, tilelang.compile(elementwise_static(N), target="cpu", compile_flags=flags))


@large_memory
@pytest.mark.parametrize("flags", [["-O0"], ["-O2"]], ids=["O0", "O2"])
def test_cpu_dynamic_shape(big, flags):
    run(big, tilelang.compile(elementwise_dynamic(), target="cpu", compile_flags=flags))


@large_memory
def test_cpu_tile_copy(big):
    run(big, tilelang.compile(tile_copy(N), target="cpu"))


@large_memory
@pytest.mark.parametrize("target", EMULATED)
def test_emulated_static_shape(big, target):
    run(big, tilelang.compile(elementwise_static(N), target=target))


@large_memory
@pytest.mark.parametrize("target", EMULATED)
def test_emulated_dynamic_shape(big, target):
    run(big, tilelang.compile(elementwise_dynamic(), target=target))


@large_memory
@pytest.mark.parametrize("target", ["cpu"] + EMULATED)
def test_tile_copy_of_the_last_tiles(big, target):
    tiles = 4
    func, start = tile_copy_window(N, tiles)
    kernel = tilelang.compile(func, target=target)
    out = np.zeros(tiles * TILE, np.int8)
    kernel(big.array, out)
    # Elements past the end of A read 0 (the copy is predicated), so they come out as 1.
    have = N - start
    positions = np.arange(start, N) % PERIOD
    want = ((big.pattern[positions].astype(np.int16) + big.added + 1) & 0xFF).astype(np.uint8)
    np.testing.assert_array_equal(out[:have], want.view(np.int8))
    np.testing.assert_array_equal(out[have:], np.ones(tiles * TILE - have, np.int8))


@large_memory
def test_int32_dimension_refuses_a_larger_tensor(big):
    kernel = tilelang.compile(elementwise_dynamic("int32"), target="cpu")
    with pytest.raises(tilelang.TileLangError) as e:
        kernel(big.array)
    assert (
        f"argument 'A' (parameter 0 of kernel 'main') has shape ({N},): dimension 0 is {N}, "
        "outside the range [-2147483648, 2147483647] of 'n' (int32); declare it "
        'T.dynamic("n", "int64")'
    ) in str(e.value)
    big.expect_added(big.added)  # nothing ran


# ---- no buffer needed


SOURCE_TARGETS = ["cpu", "cuda -arch=sm_80", "cuda -arch=sm_90a", "metal"]


def source_of(func, target):
    return tilelang.compile(func, target=target).get_kernel_source()


@pytest.mark.parametrize("target", SOURCE_TARGETS)
def test_source_indexes_in_64_bits_past_2_31(target):
    long = "int64_t"  # MSL has it too
    src = source_of(elementwise_static(N), target)
    # bx * BLOCK passes 2^31 for the last blocks: the product and the sum are 64-bit.
    assert re.search(rf"\(\({long}\)bx\) \* \({long}\){BLOCK}", src), src
    assert f"(({long})bx) * (({long})(bx * {BLOCK}" not in src


@pytest.mark.parametrize("target", SOURCE_TARGETS)
def test_source_keeps_int32_when_it_fits(target):
    # 2^31 - 1 elements: the last index is 2^31 - 2, int32 arithmetic cannot overflow.
    long = "int64_t"  # MSL has it too
    small = 2**31 - BLOCK
    src = source_of(elementwise_static(small), target)
    assert f"({long})bx" not in src and f"(({long})((bx * {BLOCK}) + i" in src, src


@pytest.mark.parametrize("target", SOURCE_TARGETS)
def test_source_int64_dimension_stays_64_bit(target):
    long = "int64_t"  # MSL has it too
    src = source_of(elementwise_dynamic(), target)
    # The dimension arrives as 64 bits and is never narrowed.
    assert re.search(rf"const {long} n = ", src), src
    assert not re.search(r"const int(32_t)? n = ", src), src


@pytest.mark.parametrize("target", SOURCE_TARGETS)
def test_source_atomics_past_2_31(target):
    long = "int64_t"  # MSL has it too
    n = 2**31 + 64

    @T.prim_func
    def main(A: T.Tensor((n,), "float32"), B: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=128) as bx:
            for i in T.Parallel(256):
                if bx * 256 + i < n:
                    T.atomic_add(A[bx * 256 + i], B[bx * 256 + i])

    src = source_of(main, target)
    # The atomic's address is 64-bit.
    assert f"(&A[(((({long})bx) * ({long})256LL) + (({long})i))])" in src, src
    assert "(bx * 256)" not in src, src


def staged_copy(m, k=64):
    @T.prim_func
    def main(A: T.Tensor((m, k), "float16"), B: T.Tensor((m, k), "float16")):
        with T.Kernel(T.ceildiv(m, 128), threads=128) as bx:
            s = T.alloc_shared((128, k), "float16")
            for _ in T.Pipelined(2, num_stages=2):
                T.copy(A[bx * 128, 0], s)
            T.copy(s, B[bx * 128, 0])

    return main


def test_tma_only_where_coordinates_fit_32_bits():
    # TMA instructions take signed 32-bit coordinates: a dimension past 2^31 - 1 keeps
    # cp.async and plain stores, whose addresses are 64-bit.
    small = source_of(staged_copy(4096), "cuda -arch=sm_90a")
    assert "tl::tma_store<2>" in small, small
    large = source_of(staged_copy(2**31 + 128), "cuda -arch=sm_90a")
    assert "tl::tma_" not in large, large
    assert re.search(r"\(\(int64_t\)bx\) \* \(int64_t\)128", large), large


TOUCH = """
#if defined(__CUDACC__)
__device__
#endif
inline void tl_touch(const float* p) { (void)p; }
"""


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80"])
def test_source_access_ptr_past_2_31(target):
    n = 2**31 + 64

    @T.prim_func
    def main(A: T.Tensor((n,), "float32")):
        with T.Kernel(T.ceildiv(n, 256), threads=128, prelude=TOUCH) as bx:
            for i in T.serial(2):
                T.call_extern("void", "tl_touch", T.access_ptr(A[bx * 256 + i], "r"))

    src = source_of(main, target)
    assert "tl_touch((&A[((((int64_t)bx) * (int64_t)256LL) + ((int64_t)i))]))" in src, src


def guarded_int32(block):
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n,), "int8")):
        with T.Kernel(T.ceildiv(n, block), threads=128) as bx:
            for i in T.serial(block):
                if bx * block + i < n:
                    A[bx * block + i] = A[bx * block + i] + 1

    return main


@pytest.mark.parametrize("target", ["cpu", "cuda -arch=sm_80"])
def test_source_tail_guard_of_an_int32_size(target):
    # n <= 2^31 - 1, but the last block of 1000 reaches bx * 1000 + 999 = 2^31 + 351
    # for n = 2^31 - 1: the guard and the index are 64-bit, n stays int32.
    src = source_of(guarded_int32(1000), target)
    assert "((((int64_t)(bx * 1000)) + ((int64_t)i)) < ((int64_t)n))" in src, src
    assert "const int32_t n = " in src, src
    # Blocks of 1024 divide 2^31: the last index is 2^31 - 1 and all of it stays int32.
    src = source_of(guarded_int32(1024), target)
    assert "int64_t)(bx" not in src and "(((bx * 1024) + i) < n)" in src, src
