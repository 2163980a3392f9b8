"""float4_e2m1fn (and int4) in kernels: packed two a byte, element 2k in the low nibble
of byte k, on the cpu target and in the CUDA emulator (sm_80 and sm_90a source). The
conversions are checked for every one of the 16 codes both ways against a reference
written here from the format's definition (round to nearest even, saturation to +-6,
NaN to +6, as CUDA's cvt.rn.satfinite.e2m1x2 gives); kernels read and write packed
buffers of odd element counts through global, shared and register memory; tensor
arguments are bytes (torch.float4_e2m1fn_x2, uint8, int8) and their checks stay
within the bytes given."""

import numpy as np
import pytest
import tilelang
import tilelang.language as T
import torch

TARGETS = ["cpu", "cuda -arch=sm_80 -emulate", "cuda -arch=sm_90a -emulate"]
rng = np.random.default_rng(2113)


def fp4_value(code):
    """The value of an e2m1 code: 1 sign, 2 exponent bits (bias 1), 1 mantissa bit."""
    sign = -1.0 if code & 8 else 1.0
    exp, mant = (code >> 1) & 3, code & 1
    if exp == 0:
        return sign * mant * 0.5  # subnormal: m * 2^(1 - 1) / 2
    return sign * 2.0 ** (exp - 1) * (1 + mant / 2)


VALUES = np.array([fp4_value(c) for c in range(16)])


def fp4_code(x):
    """The code of the e2m1 value nearest to x: ties to the even code (mantissa 0),
    magnitudes past 6 and infinities saturate to +-6, NaN becomes +6 (code 7)."""
    x = float(x)
    if np.isnan(x):
        return 7
    sign = 8 if np.signbit(x) else 0
    mag = min(abs(x), 6.0)
    best = min(range(8), key=lambda c: (abs(VALUES[c] - mag), c & 1))
    return sign | best


def pack(codes):
    """Codes (one a byte) -> bytes, two a byte, the first in the low nibble."""
    codes = np.asarray(codes, np.uint8)
    if codes.size % 2:
        codes = np.append(codes, 0)
    return (codes[0::2] | (codes[1::2] << 4)).astype(np.uint8)


def unpack(packed, n):
    packed = np.asarray(packed, np.uint8)
    return np.stack([packed & 15, packed >> 4], axis=-1).reshape(-1)[:n]


def test_reference_codes():
    # The reference itself, from the definition: the 16 values and the ties.
    assert list(VALUES[:8]) == [0, 0.5, 1, 1.5, 2, 3, 4, 6]
    assert [fp4_code(v) for v in (0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0)] == [0, 2, 2, 4, 4, 6, 6]
    assert [fp4_code(v) for v in (np.inf, -np.inf, 7.0, -0.0, np.nan)] == [7, 15, 7, 8, 7]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("out", ["float32", "float16", "bfloat16"])
def test_every_code_to_float(target, out):
    # All 16 codes, each twice, in a random order.
    codes = rng.permutation(np.concatenate([np.arange(16), np.arange(16)])).astype(np.uint8)

    @T.prim_func
    def decode(A: T.Tensor((32,), T.float4_e2m1fn), B: T.Tensor((32,), out)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(32):
                B[i] = T.cast(A[i], out)

    b = torch.empty(32, dtype=getattr(torch, out))
    tilelang.compile(decode, target=target)(torch.from_numpy(pack(codes)), b)
    np.testing.assert_array_equal(b.float().numpy(), VALUES[codes])
    assert list(np.signbit(b.float().numpy())) == [bool(c & 8) for c in codes]  # -0 stays -0


def encode_inputs():
    """Every code's value and its negative, the midpoints between neighbours (ties),
    values just off them, saturation and the specials, and random floats."""
    mids = (VALUES[:7] + VALUES[1:8]) / 2
    xs = np.concatenate(
        [
            VALUES,
            mids,
            -mids,
            np.nextafter(mids.astype(np.float32), np.float32(np.inf)),
            np.nextafter(mids.astype(np.float32), np.float32(0)),
            [6.5, -7.0, 1e30, -1e30, np.inf, -np.inf, np.nan, -np.nan, 1e-30, -1e-30, 0.1, 0.26],
            rng.uniform(-8, 8, 160),
        ]
    ).astype(np.float32)
    return np.concatenate([xs, np.ones(-xs.size % 64, np.float32)])


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("src", ["float32", "float16", "bfloat16", "float64"])
def test_every_code_from_float(target, src):
    x = torch.from_numpy(encode_inputs()).to(getattr(torch, src))
    n = x.numel()

    @T.prim_func
    def encode(A: T.Tensor((n,), src), B: T.Tensor((n,), T.float4_e2m1fn)):
        with T.Kernel(n // 64, threads=64) as bx:
            for i in T.Parallel(64):
                B[bx * 64 + i] = T.cast(A[bx * 64 + i], T.float4_e2m1fn)

    b = torch.zeros(n // 2, dtype=torch.uint8)
    tilelang.compile(encode, target=target)(x, b)
    want = np.array([fp4_code(v) for v in x.double().numpy()], np.uint8)
    got = unpack(b.numpy(), n)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:8]]
    # Every code is reached, all 16 of them.
    assert set(got.tolist()) == set(range(16))


def fp4_codes(x):
    """fp4_code over an array, vectorized: the nearest of the 8 magnitudes (ties to the
    even code), saturated, with the sign bit of x; NaN -> 7."""
    x = np.asarray(x, np.float64)
    mag = np.minimum(np.abs(np.nan_to_num(x, nan=0.0, posinf=6.0, neginf=-6.0)), 6.0)
    dist = np.abs(mag[:, None] - VALUES[None, :8])
    nearest = dist == dist.min(axis=1, keepdims=True)
    score = np.where(nearest, np.arange(8) & 1, 2)  # of the nearest, the even code
    code = np.argmin(score, axis=1).astype(np.uint8) | np.where(np.signbit(x), 8, 0).astype(
        np.uint8
    )
    return np.where(np.isnan(x), np.uint8(7), code)


@pytest.mark.parametrize("target", TARGETS)
def test_every_float16_value(target):
    # All 65536 float16 bit patterns (infinities, NaNs, subnormals, -0 included).
    x = np.arange(65536, dtype=np.uint16).view(np.float16)
    n = x.size

    @T.prim_func
    def encode(A: T.Tensor((n,), T.float16), B: T.Tensor((n,), T.float4_e2m1fn)):
        with T.Kernel(n // 256, threads=256) as bx:
            for i in T.Parallel(256):
                B[bx * 256 + i] = T.cast(A[bx * 256 + i], T.float4_e2m1fn)

    b = np.zeros(n // 2, np.uint8)
    tilelang.compile(encode, target=target)(x, b)
    want = fp4_codes(x)
    assert [fp4_code(v) for v in x[::97]] == list(want[::97])  # the two references agree
    got = unpack(b, n)
    bad = np.nonzero(got != want)[0]
    assert bad.size == 0, [(float(x[i]), int(got[i]), int(want[i])) for i in bad[:8]]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("n", [1, 7, 33])
def test_odd_counts_through_shared_and_registers(target, n):
    # B = A through a shared tile, C = 2 * A rounded back to fp4, D = A as float, E =
    # three elements of A through a thread's packed registers: whole packed buffers of
    # n (odd) elements in ceil(n / 2) bytes.
    @T.prim_func
    def run(
        A: T.Tensor((n,), T.float4_e2m1fn),
        B: T.Tensor((n,), T.float4_e2m1fn),
        C: T.Tensor((n,), T.float4_e2m1fn),
        D: T.Tensor((n,), T.float32),
        E: T.Tensor((3,), T.float4_e2m1fn),
    ):
        with T.Kernel(1, threads=32):
            S = T.alloc_shared((n,), T.float4_e2m1fn)
            R = T.alloc_local((3,), T.float4_e2m1fn)
            T.copy(A, S)
            for i in T.Parallel(n):
                D[i] = T.cast(S[i], T.float32)
                C[i] = T.cast(T.cast(S[i], T.float32) * 2.0, T.float4_e2m1fn)
            T.copy(S, B)
            for k in T.serial(3):
                R[k] = A[(k * 5) % n]
            for k in T.serial(3):
                E[k] = R[k]

    codes = rng.integers(0, 16, n).astype(np.uint8)
    nbytes = (n + 1) // 2
    a = torch.from_numpy(pack(codes))
    # The outputs start as random bytes: the spare nibble of an odd count stays as it was.
    b0 = rng.integers(0, 256, nbytes).astype(np.uint8)
    b, c, d = torch.from_numpy(b0.copy()), torch.from_numpy(b0.copy()), torch.zeros(n)
    e = torch.zeros(2, dtype=torch.uint8)
    tilelang.compile(run, target=target)(a.view(torch.float4_e2m1fn_x2), b, c, d, e)
    np.testing.assert_array_equal(unpack(b.numpy(), n), codes)
    np.testing.assert_array_equal(d.numpy(), VALUES[codes].astype(np.float32))
    np.testing.assert_array_equal(unpack(c.numpy(), n), [fp4_code(2 * VALUES[k]) for k in codes])
    np.testing.assert_array_equal(unpack(e.numpy(), 3), codes[[0, 5 % n, 10 % n]])
    if n % 2:
        assert b.numpy()[-1] >> 4 == b0[-1] >> 4 and c.numpy()[-1] >> 4 == b0[-1] >> 4


@pytest.mark.parametrize("target", TARGETS)
def test_tiles_of_packed_rows(target):
    # A (M, N) fp4 matrix in (16, 32) tiles: T.copy to shared, to a fragment as
    # float16, scaled, and back to fp4 in global memory; neighbouring elements of a
    # byte are written by different threads.
    M, N = 48, 96

    @T.prim_func
    def scale(A: T.Tensor((M, N), T.float4_e2m1fn), B: T.Tensor((M, N), T.float4_e2m1fn)):
        with T.Kernel(N // 32, M // 16, threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), T.float4_e2m1fn)
            F = T.alloc_fragment((16, 32), T.float16)
            T.copy(A[by * 16, bx * 32], S)
            T.copy(S, F)
            for i, j in T.Parallel(16, 32):
                F[i, j] = F[i, j] * T.float16(-0.5)
            T.copy(F, B[by * 16, bx * 32])

    codes = rng.integers(0, 16, (M, N)).astype(np.uint8)
    a = torch.from_numpy(pack(codes.reshape(-1)).reshape(M, N // 2))
    b = torch.zeros(M, N // 2, dtype=torch.uint8)
    tilelang.compile(scale, target=target)(a, b)
    want = np.array([fp4_code(-0.5 * VALUES[k]) for k in codes.reshape(-1)]).reshape(M, N)
    np.testing.assert_array_equal(unpack(b.numpy(), M * N).reshape(M, N), want)


@pytest.mark.parametrize("target", TARGETS)
def test_gemm_of_fp4_tiles(target):
    # fp4 A (shared) times fp4 B (shared, transposed) into float32: a gemm whose operands
    # have no element addresses reads them by index (exact: products and sums of fp4
    # values are small multiples of 1/4).
    M, N, K = 32, 16, 48

    @T.prim_func
    def mm(
        A: T.Tensor((M, K), T.float4_e2m1fn),
        B: T.Tensor((N, K), T.float4_e2m1fn),
        C: T.Tensor((M, N), T.float32),
    ):
        with T.Kernel(1, threads=64):
            As = T.alloc_shared((M, K), T.float4_e2m1fn)
            Bs = T.alloc_shared((N, K), T.float4_e2m1fn)
            Cf = T.alloc_fragment((M, N), T.float32)
            T.copy(A, As)
            T.copy(B, Bs)
            T.gemm(As, Bs, Cf, transpose_B=True, clear_accum=True)
            T.copy(Cf, C)

    a = rng.integers(0, 16, (M, K)).astype(np.uint8)
    b = rng.integers(0, 16, (N, K)).astype(np.uint8)
    c = np.zeros((M, N), np.float32)
    kernel = tilelang.compile(mm, target=target)
    kernel(pack(a.reshape(-1)).reshape(M, K // 2), pack(b.reshape(-1)).reshape(N, K // 2), c)
    np.testing.assert_array_equal(c, VALUES[a] @ VALUES[b].T)


@pytest.mark.parametrize("target", TARGETS[:2])
def test_int4_round_trip(target):
    # int4: two's complement in a nibble; int8 in, wrapped to 4 bits, back out.
    n = 37

    @T.prim_func
    def wrap(A: T.Tensor((n,), T.int8), P: T.Tensor((n,), T.int4), B: T.Tensor((n,), T.int32)):
        with T.Kernel(1, threads=32):
            for i in T.Parallel(n):
                P[i] = T.cast(A[i], T.int4)
            T.sync_threads()
            for i in T.Parallel(n):
                B[i] = T.cast(P[i], T.int32) * 3

    a = rng.integers(-128, 128, n).astype(np.int8)
    p, b = torch.zeros((n + 1) // 2, dtype=torch.int8), torch.zeros(n, dtype=torch.int32)
    tilelang.compile(wrap, target=target)(torch.from_numpy(a), p, b)
    wrapped = ((a.astype(np.int32) + 8) % 16) - 8
    np.testing.assert_array_equal(b.numpy(), wrapped * 3)
    np.testing.assert_array_equal(unpack(p.numpy().view(np.uint8), n), wrapped & 15)


def test_outputs_are_allocated_packed():
    @T.prim_func
    def make(A: T.Tensor((5,), T.float32)):
        out = T.empty((5,), T.float4_e2m1fn)
        with T.Kernel(1, threads=1):
            for i in T.serial(5):
                out[i] = T.cast(A[i], T.float4_e2m1fn)
        return out

    kernel = tilelang.compile(make, target="cpu")
    x = rng.uniform(-6, 6, 5).astype(np.float32)
    got_np = kernel(x)  # numpy in, numpy out: uint8 bytes
    got_torch = kernel(torch.from_numpy(x))  # torch in: torch.float4_e2m1fn_x2
    assert got_np.dtype == np.uint8 and got_np.shape == (3,)
    assert got_torch.dtype == torch.float4_e2m1fn_x2 and tuple(got_torch.shape) == (3,)
    want = [fp4_code(v) for v in x]
    np.testing.assert_array_equal(unpack(got_np, 5), want)
    np.testing.assert_array_equal(unpack(got_torch.view(torch.uint8).numpy(), 5), want)


@pytest.fixture(scope="module")
def copy_rows():
    n = T.dynamic("n")

    @T.prim_func
    def main(A: T.Tensor((n, 6), T.float4_e2m1fn), B: T.Tensor((n, 6), T.float32)):
        with T.Kernel(1, threads=32):
            for i, j in T.Parallel(n, 6):
                B[i, j] = T.cast(A[i, j], T.float32)

    return tilelang.compile(main, target="cpu")


def test_symbolic_rows_bind_from_bytes(copy_rows):
    assert (
        "float4_e2m1fn(n, 6) on cpu, strides (6, 1), may be read-only  # passed as bytes, two elements a byte "
        in (copy_rows.get_host_source())
    )
    codes = rng.integers(0, 16, (4, 6)).astype(np.uint8)
    a = pack(codes.reshape(-1)).reshape(4, 3)
    b = np.zeros((4, 6), np.float32)
    copy_rows(a.view(np.int8), b)
    np.testing.assert_array_equal(b, VALUES[codes])
    # Every other row of a larger tensor: its row stride is 6 bytes, 12 elements.
    big = np.zeros((8, 3), np.uint8)
    big[::2] = a
    with pytest.raises(tilelang.TileLangError, match=r"has stride 12 in dimension 0, expected 6"):
        copy_rows(big[::2], b)


@tilelang.jit(target="cpu")
def eager_decode(A):
    M, K, S = T.const("M K S")
    A: T.StridedTensor((M, K), (S, 1), T.float4_e2m1fn)
    B = T.empty((M, K), T.float32)
    with T.Kernel(1, threads=32):
        for i, j in T.Parallel(M, K):
            B[i, j] = T.cast(A[i, j], T.float32)
    return B


def test_eager_consts_bind_elements_of_packed_tensors():
    # A byte tensor of a float4_e2m1fn parameter holds two elements a byte along its
    # last dimension: (4, 5) bytes bind K = 10, and a row stride of 8 bytes S = 16.
    codes = rng.integers(0, 16, (4, 10)).astype(np.uint8)
    rows = pack(codes.reshape(-1)).reshape(4, 5)
    for dtype in (torch.uint8, torch.int8, torch.float4_e2m1fn_x2):
        a = torch.from_numpy(rows.copy()).view(dtype)
        np.testing.assert_array_equal(eager_decode(a).numpy(), VALUES[codes])
    wide = torch.zeros((4, 8), dtype=torch.uint8)
    wide[:, :5] = torch.from_numpy(rows)
    np.testing.assert_array_equal(eager_decode(wide[:, :5]).numpy(), VALUES[codes])


@pytest.mark.parametrize(
    "arg, message",
    [
        (
            np.zeros((4, 6), np.float32),
            (
                r"argument 'A' \(parameter 0 of kernel 'main'\) has dtype float32, expected float4_e2m1fn: a tensor "
                r"of bytes holding two elements each along its last dimension \(torch.float4_e2m1fn_x2, uint8 or int8\)"
            ),
        ),
        (
            np.zeros((4, 4), np.uint8),  # 8 elements a row, 6 expected
            r"argument 'A' \(parameter 0 of kernel 'main'\) has shape \(4, 8\), expected \(n, 6\)",
        ),
        (
            np.zeros((4, 6), np.uint8)[:, ::2],
            (
                r"has stride 2 in its last dimension, which holds two float4_e2m1fn elements a byte and must be "
                r"contiguous \(stride 1\)"
            ),
        ),
    ],
)
def test_argument_errors(copy_rows, arg, message):
    with pytest.raises(tilelang.TileLangError, match=message):
        copy_rows(arg, np.zeros((4, 6), np.float32))


def test_odd_last_dim_takes_rounded_up_bytes():
    # A (1, 5) buffer is 3 bytes; a (2, 5) one cannot be packed rows of whole bytes
    # with a compact row stride of 5 elements: the checks say so instead of reading
    # past the tensor.
    @T.prim_func
    def main(A: T.Tensor((2, 5), T.float4_e2m1fn), B: T.Tensor((2, 5), T.float32)):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(2, 5):
                B[i, j] = T.cast(A[i, j], T.float32)

    kernel = tilelang.compile(main, target="cpu")
    with pytest.raises(tilelang.TileLangError) as err:
        kernel(np.zeros((2, 3), np.uint8), np.zeros((2, 5), np.float32))
    assert str(err.value).split("\n")[0] == (
        "argument 'A' (parameter 0 of kernel 'main') holds float4_e2m1fn rows of 5 elements, shape (2, 5): a "
        "tensor of bytes packs each row to whole bytes (3 bytes, room for 6 elements), but the kernel reads its "
        "rows 5 elements apart; a packed float4_e2m1fn tensor of more than one row needs a last dimension that "
        "is a multiple of 2"
    )
    with pytest.raises(tilelang.TileLangError, match=r"has shape \(2, 4\), expected \(2, 5\)"):
        kernel(np.zeros((2, 2), np.uint8), np.zeros((2, 5), np.float32))


@pytest.mark.parametrize("target", TARGETS)
def test_address_of_a_packed_element_is_its_byte(target):
    # As in TileLang: T.address_of(A[i]) of a packed buffer points at the byte that
    # holds element i (byte i // 2).
    @T.prim_func
    def main(A: T.Tensor((8,), T.float4_e2m1fn), B: T.Tensor((4,), T.int64)):
        with T.Kernel(1, threads=1):
            base = T.reinterpret(T.address_of(A[0]), T.int64)
            for k in T.serial(4):
                B[k] = T.reinterpret(T.address_of(A[k * 2 + k % 2]), T.int64) - base

    b = np.zeros(4, np.int64)
    tilelang.compile(main, target=target)(np.zeros(4, np.uint8), b)
    np.testing.assert_array_equal(b, [0, 1, 2, 3])


@pytest.mark.parametrize("target", TARGETS)
def test_ragged_tiles_move_whole_bytes(target):
    # T.copy between packed buffers of one dtype moves whole bytes where a run of
    # elements starts even and lies in bounds (vectors on the GPU), element by element
    # at the edges of a (40, 50) matrix cut into (16, 32) tiles.
    M, N = 40, 50

    @T.prim_func
    def move(A: T.Tensor((M, N), T.float4_e2m1fn), B: T.Tensor((M, N), T.float4_e2m1fn)):
        with T.Kernel(T.ceildiv(N, 32), T.ceildiv(M, 16), threads=64) as (bx, by):
            S = T.alloc_shared((16, 32), T.float4_e2m1fn)
            T.copy(A[by * 16, bx * 32], S)
            T.copy(S, B[by * 16, bx * 32])

    a = rng.integers(0, 256, (M, N // 2)).astype(np.uint8)
    b = np.zeros((M, N // 2), np.uint8)
    kernel = tilelang.compile(move, target=target)
    kernel(a, b)
    np.testing.assert_array_equal(b, a)
    if target != "cpu":
        assert "tl::copy_vec<" in kernel.get_kernel_source()


@pytest.mark.parametrize("target", TARGETS)
def test_views_between_packed_elements_and_bytes(target):
    # A shared fp4 tile written by element and copied out as its bytes (T.view as uint8,
    # TileLang's fp4 quantization pattern), and a thread's byte registers read as fp4.
    @T.prim_func
    def main(
        A: T.Tensor((16, 64), T.float32),
        B: T.Tensor((16, 32), T.uint8),
        C: T.Tensor((16, 8), T.float32),
    ):
        with T.Kernel(1, threads=128):
            S = T.alloc_shared((16, 64), T.float4_e2m1fn)
            for i, j in T.Parallel(16, 64):
                S[i, j] = T.cast(A[i, j], T.float4_e2m1fn)
            U = T.view(S, (16, 32), dtype=T.uint8)
            T.copy(U, B)
            R = T.alloc_local((4,), T.uint8)
            F = T.view(R, (8,), dtype=T.float4_e2m1fn)
            for i in T.Parallel(16):
                for k in T.serial(4):
                    R[k] = U[i, k]
                for k in T.serial(8):
                    C[i, k] = T.cast(F[k], T.float32)

    a = rng.uniform(-7, 7, (16, 64)).astype(np.float32)
    b, c = np.zeros((16, 32), np.uint8), np.zeros((16, 8), np.float32)
    tilelang.compile(main, target=target)(a, b, c)
    codes = np.array([fp4_code(v) for v in a.reshape(-1)], np.uint8).reshape(16, 64)
    np.testing.assert_array_equal(b, pack(codes.reshape(-1)).reshape(16, 32))
    np.testing.assert_array_equal(c, VALUES[codes[:, :8]])


def packed_neighbours(race):
    @T.prim_func
    def main(A: T.Tensor((32,), T.float4_e2m1fn), B: T.Tensor((32,), T.float4_e2m1fn)):
        with T.Kernel(1, threads=32):
            tx = T.get_thread_binding()
            S = T.alloc_shared((32,), T.float4_e2m1fn)
            if race:
                if tx % 2 == 0:  # no barrier under a condition on the thread index
                    S[tx] = A[tx]
                    B[tx] = S[(tx + 2) % 32]
            else:
                S[tx] = A[tx]  # thread 2k and 2k + 1 write the two halves of byte k
                T.sync_threads()
                B[tx] = S[31 - tx]

    return main


def test_emulator_watches_each_packed_element():
    # The race detector tells the two nibbles of a byte apart: neighbours writing the
    # two halves of a byte are no race, reading another thread's element unordered is.
    codes = rng.integers(0, 16, 32).astype(np.uint8)
    a, b = pack(codes), np.zeros(16, np.uint8)
    tilelang.compile(packed_neighbours(False), target=TARGETS[1])(a, b)
    np.testing.assert_array_equal(unpack(b, 32), codes[::-1])
    kernel = tilelang.compile(packed_neighbours(True), target=TARGETS[1])
    with pytest.raises(tilelang.TileLangError, match="shared-memory race on buffer 'S'") as err:
        kernel(a, b)
    assert "reads it at" in str(err.value) and "add T.sync_threads()" in str(err.value)


def test_metal_refuses_fp4_by_name():
    @T.prim_func
    def main(A: T.Tensor((8,), T.float4_e2m1fn), B: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=8):
            for i in T.Parallel(8):
                B[i] = T.cast(A[i], T.float32)

    with pytest.raises(
        tilelang.TileLangError, match="dtype float4_e2m1fn is not supported on Metal; use float16"
    ):
        tilelang.compile(main, target="metal -emulate")


def test_unpacked_fp4_is_a_dtype_kernels_refuse():
    # TileLang's sm_100 shared-memory tag: a dtype of 8 bits printed as TVM's custom type,
    # told apart from packed fp4 by is_float4_e2m1_unpacked and is_float4_e2m1fn; no
    # target here has a use for it.
    from tilelang.language.dtypes import is_float4, is_float4_e2m1_unpacked, is_float4_e2m1fn

    u = T.float4_e2m1_unpacked
    assert (u.bits, u.lanes, str(u), u.type_code) == (8, 1, "custom[float4_e2m1_unpacked]8", 131)
    assert (T.float4_e2m1fn.bits, T.float4_e2m1fn.type_code) == (4, 17) and u != T.float4_e2m1fn
    assert is_float4_e2m1_unpacked("float4_e2m1_unpacked") and not is_float4_e2m1fn(u)
    assert is_float4(u) and is_float4(T.float4_e2m1fnx2) and not is_float4(T.float16)
    assert not hasattr(T, "float4_e2m1_unpackedx2")

    @T.prim_func
    def stage(A: T.Tensor((8,), T.float32)):
        with T.Kernel(1, threads=8):
            S = T.alloc_shared((8,), T.float4_e2m1_unpacked)
            for i in T.Parallel(8):
                S[i] = T.cast(A[i], T.float4_e2m1_unpacked)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"dtype float4_e2m1_unpacked \(custom\[float4_e2m1_unpacked\]8\) "
        r"is TileLang's tag for the shared-memory layout sm_100's TMA unpacks fp4 into",
    ):
        tilelang.compile(stage, target="cuda -arch=sm_90a -emulate")

    with pytest.raises(
        tilelang.TileLangError,
        match=r"SIMT copy from packed global float4_e2m1fn to unpacked shared "
        r"float4_e2m1_unpacked is not supported \(src=A, dst=A_shared\)",
    ):

        @T.prim_func
        def unpack(A: T.Tensor((64, 128), T.float4_e2m1fn)):
            with T.Kernel(1, threads=128):
                A_shared = T.alloc_shared((32, 64), T.float4_e2m1_unpacked)
                T.copy(A[0, 0], A_shared)

    with pytest.raises(
        tilelang.TileLangError,
        match=r"T.tma_copy into 'A_shared' \(custom\[float4_e2m1_unpacked\]8\) would unpack fp4 as sm_100's TMA does",
    ):

        @T.prim_func
        def tma_unpack(A: T.Tensor((64, 128), T.float4_e2m1fn)):
            with T.Kernel(1, threads=128):
                A_shared = T.alloc_shared((32, 64), T.float4_e2m1_unpacked)
                mbar = T.alloc_barrier(128)
                T.tma_copy(A[0:32, 0:64], A_shared, barrier=mbar)


def int4_codes(x):
    """int8 values wrapped to int4, as their nibbles."""
    return ((np.asarray(x, np.int64) + 8) % 16 - 8) & 15


@pytest.fixture(scope="module")
def odd_int4():
    """quant: float32 X (n,) -> int4 Q (n,), allocated by the call; dequant: int4 A (n,)
    and float32 S (n,) -> A * S; rows: float32 X (m, 5) -> int4 Q (m, 5)."""
    n, m = T.dynamic("n m")

    @T.prim_func
    def quant(X: T.Tensor((n,), T.float32), Q: T.Tensor((n,), T.int4)):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                Q[i] = T.cast(T.cast(X[i], T.int32), T.int4)

    @T.prim_func
    def dequant(
        S: T.Tensor((n,), T.float32), A: T.Tensor((n,), T.int4), B: T.Tensor((n,), T.float32)
    ):
        with T.Kernel(1, threads=1):
            for i in T.serial(n):
                B[i] = T.cast(A[i], T.float32) * S[i]

    @T.prim_func
    def rows(X: T.Tensor((m, 5), T.float32), Q: T.Tensor((m, 5), T.int4)):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(m, 5):
                Q[i, j] = T.cast(T.cast(X[i, j], T.int32), T.int4)

    return [tilelang.compile(f, out_idx=[-1], target="cpu") for f in (quant, dequant, rows)]


@pytest.mark.parametrize("n", [5, 7, 8])
def test_dynamic_odd_last_dim_takes_the_bytes_it_was_allocated(odd_int4, n):
    # An odd T.dynamic size n that another argument gives is held in (n + 1) // 2 bytes,
    # as the call allocates its outputs; such a tensor is also taken as an input.
    quant, dequant, _ = odd_int4
    x = rng.integers(-8, 8, n).astype(np.float32)
    q = quant(torch.from_numpy(x))
    assert q.dtype == torch.int8 and tuple(q.shape) == ((n + 1) // 2,)
    np.testing.assert_array_equal(unpack(q.numpy().view(np.uint8), n), int4_codes(x))
    s = rng.standard_normal(n).astype(np.float32)
    b = dequant(torch.from_numpy(s), q)
    np.testing.assert_allclose(b.numpy(), x.astype(np.float64) * s.astype(np.float64), rtol=1e-6)
    # Bytes that hold fewer elements than the other argument gives are refused.
    with pytest.raises(
        tilelang.TileLangError, match=r"argument 'A' \(parameter 1 of kernel 'dequant'\) has shape"
    ):
        dequant(torch.from_numpy(s), q[: (n - 1) // 2])


def test_constant_odd_last_dim_of_several_rows_is_refused_before_allocating(odd_int4):
    _, _, rows = odd_int4
    one = rng.integers(-8, 8, (1, 5)).astype(np.float32)
    q = rows(torch.from_numpy(one))  # one row: 3 bytes hold its 5 elements
    assert tuple(q.shape) == (1, 3)
    np.testing.assert_array_equal(unpack(q.numpy().view(np.uint8), 5), int4_codes(one[0]))
    x = rng.integers(-8, 8, (3, 5)).astype(np.float32)
    with pytest.raises(tilelang.TileLangError) as err:
        rows(torch.from_numpy(x))
    assert str(err.value).split("\n")[0] == (
        "output 'Q' (parameter 1 of kernel 'rows') would hold int4 rows of 5 elements, shape (3, 5): a tensor "
        "of bytes packs each row to whole bytes (3 bytes, room for 6 elements), but the kernel reads its rows 5 "
        "elements apart; a packed int4 tensor of more than one row needs a last dimension that is a multiple of 2"
    )


def test_odd_rows_with_a_declared_row_stride_take_whole_byte_rows():
    # T.StridedTensor((m, 5), (6, 1)): rows 6 elements (3 bytes) apart, as torch packs
    # them, so a (3, 3) byte tensor holds its 3 rows of 5 elements.
    m = T.dynamic("m")

    @T.prim_func
    def rows(X: T.Tensor((m, 5), T.float32), Q: T.StridedTensor((m, 5), (6, 1), T.int4)):
        with T.Kernel(1, threads=1):
            for i, j in T.grid(m, 5):
                Q[i, j] = T.cast(T.cast(X[i, j], T.int32), T.int4)

    x = rng.integers(-8, 8, (3, 5)).astype(np.float32)
    spare = rng.integers(0, 256, (3, 3)).astype(np.uint8)
    q = torch.from_numpy(spare.copy())
    tilelang.compile(rows, target="cpu")(torch.from_numpy(x), q)
    got = np.stack([unpack(row, 6) for row in q.numpy()])
    np.testing.assert_array_equal(got[:, :5], int4_codes(x))
    np.testing.assert_array_equal(got[:, 5], spare[:, 2] >> 4)  # each row's spare nibble kept
