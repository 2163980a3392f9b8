"""T.rng_init / T.rng_rand / T.rng_rand_float (python/tilelang/cuda/language/random.py,
device/common/philox_rng.h): cuRAND's Philox4x32-10 generator, so a kernel draws the
numbers curand_init(seed, subsequence, offset) + curand / curand_uniform /
curand_normal (and the _double forms) give. The reference below is an independent
Python model of Philox4x32-10 and of cuRAND's state machine, itself checked against
the Random123 known-answer vector."""

import math

import numpy as np
import pytest
import tilelang
import tilelang.language as T

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate"]
M32 = 0xFFFFFFFF


def philox4x32_10(ctr, key):
    """Ten Philox4x32 rounds (Salmon et al., SC'11) of the 4-word counter under the 2-word key."""
    c = list(ctr)
    k0, k1 = key
    for _ in range(10):
        p0 = 0xD2511F53 * c[0]
        p1 = 0xCD9E8D57 * c[2]
        c = [(p1 >> 32) ^ c[1] ^ k0, p1 & M32, (p0 >> 32) ^ c[3] ^ k1, p0 & M32]
        k0 = (k0 + 0x9E3779B9) & M32
        k1 = (k1 + 0xBB67AE85) & M32
    return c


class CurandPhilox:
    """cuRAND's curandStatePhilox4_32_10_t: output n of subsequence s is word n % 4 of
    the block at the 128-bit counter s * 2^64 + n // 4."""

    def __init__(self, seed, subsequence, offset):
        self.key = (seed & M32, seed >> 32)
        self.sub = subsequence
        self.pos = offset
        self.extra_f = self.extra_d = None

    def u32(self):
        ctr = (self.sub << 64) + self.pos // 4
        words = [(ctr >> (32 * i)) & M32 for i in range(4)]
        out = philox4x32_10(words, self.key)[self.pos % 4]
        self.pos += 1
        return out

    def uniform_f32(self):
        inv = np.float32(2.3283064e-10)
        return np.float32(self.u32()) * inv + inv / np.float32(2)

    def uniform_f64(self):
        return self.u32() * 2.3283064365386963e-10 + 2.3283064365386963e-10

    def normal_f32(self):  # Box-Muller, the second value kept for the next call
        if self.extra_f is not None:
            v, self.extra_f = self.extra_f, None
            return v
        x, y = self.u32(), self.u32()
        u = (x + 0.5) * 2.0**-32
        v = (y + 0.5) * 2.0**-32 * 2 * math.pi
        r = math.sqrt(-2 * math.log(u))
        self.extra_f = r * math.cos(v)
        return r * math.sin(v)

    def normal_f64(self):  # Box-Muller on two 53-bit uniforms of four draws
        if self.extra_d is not None:
            v, self.extra_d = self.extra_d, None
            return v
        x0, x1, y0, y1 = (self.u32() for _ in range(4))
        u = ((x0 ^ (x1 << 21)) + 0.5) * 2.0**-53
        v = ((y0 ^ (y1 << 21)) + 1.0) * 2.0**-52
        r = math.sqrt(-2 * math.log(u))
        self.extra_d = r * math.cos(v * math.pi)
        return r * math.sin(v * math.pi)


M1, M2 = 4294967087, 4294944443
MRG_A1 = [[0, 1, 0], [0, 0, 1], [M1 - 810728, 1403580, 0]]  # L'Ecuyer (1999), component 1
MRG_A2 = [[0, 1, 0], [0, 0, 1], [M2 - 1370589, 0, 527612]]  # component 2


def mat_mul(a, b, m):
    return [[sum(a[i][k] * b[k][j] for k in range(3)) % m for j in range(3)] for i in range(3)]


def mat_pow(a, e, m):
    r = [[int(i == j) for j in range(3)] for i in range(3)]
    while e:
        if e & 1:
            r = mat_mul(r, a, m)
        a = mat_mul(a, a, m)
        e >>= 1
    return r


class CurandMRG:
    """cuRAND's curandStateMRG32k3a_t: seed scrambled into the default state 12345,
    subsequences 2^76 numbers apart, conversions by 1 / (m1 + 1)."""

    def __init__(self, seed, subsequence, offset):
        s1, s2 = [12345] * 3, [12345] * 3
        if seed:
            x1, x2 = (seed & M32) ^ 0x55555555, (seed >> 32) ^ 0xAAAAAAAA
            s1 = [x1 * s1[0] % M1, x2 * s1[1] % M1, x1 * s1[2] % M1]
            s2 = [x2 * s2[0] % M2, x1 * s2[1] % M2, x2 * s2[2] % M2]
        skip = subsequence * 2**76 + offset
        self.s1 = [sum(r * v for r, v in zip(row, s1)) % M1 for row in mat_pow(MRG_A1, skip, M1)]
        self.s2 = [sum(r * v for r, v in zip(row, s2)) % M2 for row in mat_pow(MRG_A2, skip, M2)]
        self.extra_f = self.extra_d = None

    def step(self):
        p1 = (1403580 * self.s1[1] - 810728 * self.s1[0]) % M1
        p2 = (527612 * self.s2[2] - 1370589 * self.s2[0]) % M2
        self.s1 = [self.s1[1], self.s1[2], p1]
        self.s2 = [self.s2[1], self.s2[2], p2]
        return p1 - p2 + (M1 if p1 <= p2 else 0)

    def u32(self):
        return int(self.step() * 1.000000048662)

    def uniform_f32(self):
        return np.float32(self.step() * 2.3283065498378288e-10)

    def uniform_f64(self):
        return self.step() * 2.3283065498378288e-10

    def normal_f32(self):
        if self.extra_f is not None:
            v, self.extra_f = self.extra_f, None
            return v
        x = float(self.uniform_f32())
        y = float(self.uniform_f32() * np.float32(6.2831855))
        r = math.sqrt(-2 * math.log(x))
        self.extra_f = r * math.cos(y)
        return r * math.sin(y)

    def normal_f64(self):
        if self.extra_d is not None:
            v, self.extra_d = self.extra_d, None
            return v
        x, y = self.uniform_f64(), self.uniform_f64() * 2
        r = math.sqrt(-2 * math.log(x))
        self.extra_d = r * math.cos(y * math.pi)
        return r * math.sin(y * math.pi)


def xorshift_step(v):
    """One step of xorwow's 160-bit xorshift part (Marsaglia 2003), five 32-bit words."""
    t = v[0] ^ (v[0] >> 2)
    return v[1:] + [((v[4] ^ (v[4] << 4)) ^ (t ^ (t << 1))) & M32]


def gf2_columns_of_step():
    """The step as a 160x160 bit matrix: column j is the image of state bit j."""
    cols = []
    for j in range(160):
        v = [0] * 5
        v[j // 32] = 1 << (j % 32)
        cols.append(sum(w << (32 * i) for i, w in enumerate(xorshift_step(v))))
    return cols


def gf2_apply(cols, x):
    r, j = 0, 0
    while x:
        if x & 1:
            r ^= cols[j]
        x >>= 1
        j += 1
    return r


_SUBSEQUENCE_MATRIX = []


def subsequence_matrix():
    """The step matrix to the power 2^67 (one XORWOW subsequence), by 67 squarings."""
    if not _SUBSEQUENCE_MATRIX:
        cols = gf2_columns_of_step()
        for _ in range(67):
            cols = [gf2_apply(cols, c) for c in cols]
        _SUBSEQUENCE_MATRIX.append(cols)
    return _SUBSEQUENCE_MATRIX[0]


class CurandXorwow:
    """cuRAND's curandStateXORWOW_t: the seed salted and mixed into the published start,
    subsequences 2^67 numbers apart, a Weyl counter added to each output."""

    def __init__(self, seed, subsequence, offset):
        s0, s1 = (seed & M32) ^ 0xAAD26B49, (seed >> 32) ^ 0xF7DCEFDD
        t0, t1 = (1099087573 * s0) & M32, (2591861531 * s1) & M32
        self.d = (6615241 + t1 + t0) & M32
        v = [
            (123456789 + t0) & M32,
            362436069 ^ t0,
            (521288629 + t1) & M32,
            88675123 ^ t1,
            (5783321 + t0) & M32,
        ]
        x = sum(w << (32 * i) for i, w in enumerate(v))
        for _ in range(subsequence):
            x = gf2_apply(subsequence_matrix(), x)
        self.v = [(x >> (32 * i)) & M32 for i in range(5)]
        for _ in range(offset):  # the Weyl counter moves with the skipped numbers only
            self.u32()
        self.extra_f = self.extra_d = None

    def u32(self):
        self.v = xorshift_step(self.v)
        self.d = (self.d + 362437) & M32
        return (self.v[4] + self.d) & M32

    uniform_f32 = CurandPhilox.uniform_f32
    normal_f32 = CurandPhilox.normal_f32
    normal_f64 = CurandPhilox.normal_f64

    def uniform_f64(self):  # 53 bits of two draws
        x, y = self.u32(), self.u32()
        return ((x ^ (y << 21)) + 0.5) * 2.0**-53


GENERATORS = {
    "curandStatePhilox4_32_10_t": CurandPhilox,
    "curandStateMRG32k3a_t": CurandMRG,
    "curandStateXORWOW_t": CurandXorwow,
}


def test_mrg_reference_starts_as_lecuyers_generator():
    """Seed 0 leaves every state word at 12345, L'Ecuyer's own start, whose first number
    is 0.127011122046577 in his normalisation (1 / (m1 + 1)); skipping ahead by matrix
    powers lands where stepping does."""
    assert abs(CurandMRG(0, 0, 0).step() * 2.328306549295728e-10 - 0.127011122046577) < 1e-15
    walked = CurandMRG(7, 0, 0)
    for _ in range(5):
        walked.step()
    assert walked.step() == CurandMRG(7, 0, 5).step()


def test_reference_matches_the_random123_known_answer():
    assert philox4x32_10([0, 0, 0, 0], [0, 0]) == [0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8]
    ones = philox4x32_10([M32] * 4, [M32, M32])
    assert ones == [0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD]


def draw_kernel(blocks, threads, per, seed, seq_of, off_of, generator):
    """Each thread starts its generator and writes `per` values of each kind."""
    n = blocks * threads * per

    @T.prim_func
    def draw(
        A: T.Tensor((n,), "uint32"),
        B: T.Tensor((n,), "float32"),
        C: T.Tensor((n,), "float64"),
        D: T.Tensor((n,), "float32"),
        E: T.Tensor((n,), "float64"),
    ):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed, seq_of(bx, tx), off_of(bx, tx), generator=generator)
            base = (bx * threads + tx) * per
            for j in T.serial(per):
                A[base + j] = T.rng_rand()
            for j in T.serial(per):
                B[base + j] = T.rng_rand_float()
            for j in T.serial(per):
                C[base + j] = T.rng_rand_float(bit=64)
            for j in T.serial(per):
                D[base + j] = T.rng_rand_float(dist="normal")
            for j in T.serial(per):
                E[base + j] = T.rng_rand_float(bit=64, dist="normal")

    return draw


DRAW_SHAPE = (
    3,
    4,
    7,
)  # blocks, threads, draws of each kind per thread (7 straddles the 4-word blocks)


def draw_outputs(zeros):
    n = DRAW_SHAPE[0] * DRAW_SHAPE[1] * DRAW_SHAPE[2]
    return [zeros(n, t) for t in ("uint32", "float32", "float64", "float32", "float64")]


def compile_draws(target, seed, generator="curandStatePhilox4_32_10_t"):
    blocks, threads, per = DRAW_SHAPE
    func = draw_kernel(
        blocks, threads, per, seed, lambda bx, tx: bx * 5 + 1, lambda bx, tx: tx * 3 + 2, generator
    )
    return tilelang.compile(func, target=target)


def check_draws(out, seed, normal_tol, generator="curandStatePhilox4_32_10_t"):
    """`out` against the reference: integers and uniforms bit for bit, normals within
    `normal_tol` (float32 log / sin / cos differ by target)."""
    blocks, threads, per = DRAW_SHAPE
    ref = [[] for _ in range(5)]
    for bx in range(blocks):
        for tx in range(threads):
            g = GENERATORS[generator](seed, bx * 5 + 1, tx * 3 + 2)
            for i, draw in enumerate(
                [g.u32, g.uniform_f32, g.uniform_f64, g.normal_f32, g.normal_f64]
            ):
                ref[i] += [draw() for _ in range(per)]
    np.testing.assert_array_equal(out[0], np.array(ref[0], np.uint32))
    np.testing.assert_array_equal(
        out[1], np.array(ref[1], np.float32)
    )  # exact: one float rounding each
    np.testing.assert_array_equal(out[2], np.array(ref[2]))
    np.testing.assert_allclose(out[3], ref[3], rtol=normal_tol, atol=normal_tol)
    np.testing.assert_allclose(out[4], ref[4], rtol=1e-12, atol=1e-13)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("generator", sorted(GENERATORS))
def test_draws_match_curand(target, generator):
    seed = int(np.random.default_rng(0).integers(2**53, 2**63))  # a seed a double cannot hold
    out = draw_outputs(lambda n, t: np.zeros(n, t))
    compile_draws(target, seed, generator)(*out)
    check_draws(out, seed, normal_tol=2e-6, generator=generator)


@pytest.mark.parametrize("target", TARGETS)
def test_default_subsequence_is_the_global_thread_index(target):
    """Without `seq`, each thread takes threadIdx.x + blockIdx.x * blockDim.x (TileLang's rule)."""
    blocks, threads = 2, 8
    seed = int(np.random.default_rng(1).integers(1, 2**31))

    @T.prim_func
    def first(A: T.Tensor((blocks * threads, 2), "uint32")):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            T.rng_init(seed)
            A[bx * threads + tx, 0] = T.rng_rand()
            A[bx * threads + tx, 1] = T.rng_rand()

    kernel = tilelang.compile(first, target=target)
    out = np.zeros((blocks * threads, 2), np.uint32)
    kernel(out)
    ref = []
    for g in (CurandPhilox(seed, t, 0) for t in range(blocks * threads)):
        ref.append([g.u32(), g.u32()])
    np.testing.assert_array_equal(out, np.array(ref, np.uint32))


@pytest.mark.parametrize("target", TARGETS)
def test_state_started_in_a_branch_serves_draws_after_a_barrier(target):
    """The state belongs to the kernel: a T.rng_init under an `if` is seen by draws after
    a __syncthreads in the same branch, and threads outside the branch write nothing."""
    blocks, threads, live = 6, 32, 4
    seed = int(np.random.default_rng(2).integers(1, 2**31))

    @T.prim_func
    def guarded(A: T.Tensor((blocks,), "uint32"), n: T.int32):
        with T.Kernel(blocks, threads=threads) as bx:
            tx = T.get_thread_binding()
            s = T.alloc_shared((threads,), "int32")
            if bx < n:
                T.rng_init(seed, 0, bx)
                s[tx] = tx
                T.sync_threads()
                if tx == 0:
                    A[bx] = T.rng_rand() + T.cast(s[threads - 1] - (threads - 1), "uint32")

    kernel = tilelang.compile(guarded, target=target)
    sentinel = np.uint32(0xDEADBEEF)
    out = np.full(blocks, sentinel, np.uint32)
    kernel(out, live)
    ref = [CurandPhilox(seed, 0, bx).u32() for bx in range(live)]
    np.testing.assert_array_equal(out[:live], np.array(ref, np.uint32))
    assert (out[live:] == sentinel).all()


def test_draw_without_init_is_an_error():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=4):
                A[0] = T.rng_rand()

    msg = str(info.value)
    assert "test_rng.py" in msg
    assert "T.rng_rand() draws from the generator that T.rng_init(seed, ...) starts" in msg


@pytest.mark.parametrize(
    "call, expected",
    [
        (lambda: T.rng_init(1, generator="mt19937"), "generator must be one of"),
        (lambda: T.rng_init(1.5), "`seed` must be an integer or an integer expression, got 1.5"),
        (lambda: T.rng_init(-1), "`seed` must lie in [0, 2**64), got -1"),
        (lambda: T.rng_rand_float(bit=16), "bit must be 32 or 64, got 16"),
        (
            lambda: T.rng_rand_float(dist="poisson"),
            "dist must be 'uniform' or 'normal', got 'poisson'",
        ),
    ],
)
def test_misuse_is_reported_at_the_users_line(call, expected):
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def bad(A: T.Tensor((4,), "float32")):
            with T.Kernel(1, threads=4):
                T.rng_init(7)
                call()

    assert expected in str(info.value)
    assert "test_rng.py" in str(info.value)


def test_one_kind_of_generator_per_kernel():
    with pytest.raises(tilelang.TileLangError) as info:

        @T.prim_func
        def mixed(A: T.Tensor((4,), "uint32")):
            with T.Kernel(1, threads=4):
                T.rng_init(1)
                T.rng_init(2, generator="curandStateMRG32k3a_t")
                A[0] = T.rng_rand()

    msg = str(info.value)
    assert (
        "this T.Kernel's generator is 'curandStatePhilox4_32_10_t'; one kernel starts one kind"
        in msg
    )
    assert "test_rng.py" in msg


def test_metal_refuses_with_the_target_named():
    @T.prim_func
    def on_metal(A: T.Tensor((4,), "uint32")):
        with T.Kernel(1, threads=4) as bx:
            T.rng_init(3, bx, 0)
            A[0] = T.rng_rand()

    with pytest.raises(tilelang.TileLangError) as info:
        tilelang.compile(on_metal, target="metal -emulate")
    msg = str(info.value)
    assert "T.rng_init (cuRAND's generators) is available on the cpu and cuda targets" in msg
    assert "'metal" in msg and "test_rng.py" in msg
